#!/usr/bin/env bash
# Vendor the JavaScript that bertviz's views need (it would fetch them from a CDN) into
# assets/vendor, from the npm registry, at pinned versions. The app inlines these files
# into each attention view, so nothing is fetched from outside localhost.
# Usage: bash scripts/vendor_js.sh   (needs npm; the files are committed, so the app does not)
set -euo pipefail
cd "$(dirname "$0")/.."
out=assets/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch() {  # package@version, file inside the package, name in assets/vendor, licence file
    (cd "$work" && npm pack --silent "$1" >/dev/null)
    local tgz=("$work"/"${1%@*}"-*.tgz)
    mkdir -p "$work/$1" && tar xzf "${tgz[0]}" -C "$work/$1" && rm "${tgz[0]}"
    cp "$work/$1/package/$2" "$out/$3"
    if [ -n "${4:-}" ]; then cp "$work/$1/package/$4" "$out/LICENSE-${1%@*}.txt"; fi
}
fetch d3@5.7.0 dist/d3.min.js d3.min.js LICENSE  # the version bertviz asks for
fetch jquery@3.7.1 dist/jquery.min.js jquery.min.js LICENSE.txt  # bertviz asks for 2.0.0, not on npm
fetch requirejs@2.3.6 require.js require.js  # the version bertviz asks for; MIT, licence in its header
(cd "$out" && sha256sum d3.min.js jquery.min.js require.js > SHA256SUMS)
echo "vendored into $out:" && cat "$out/SHA256SUMS"
