"""Command line: `python -m model_zoo list` and `python -m model_zoo prefetch NAME...`."""

from __future__ import annotations

import argparse
import sys

from .errors import ModelZooError
from .registry import ModelCard, availability, download_dir, get_card, hub_reachable, list_models


def cmd_list() -> int:
    rows = [("name", "family", "kind", "size", "licence", "status")]
    for card in list_models():
        rows.append((card.name, card.family, card.kind, card.size, card.licence, availability(card).status))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def cmd_prefetch(names: list[str]) -> int:
    from huggingface_hub import snapshot_download

    failed = 0
    for name in names:
        try:
            card = get_card(name)
        except ModelZooError as err:
            print(f"error: {err}", file=sys.stderr)
            failed += 1
            continue
        state = availability(card)
        if state.status in ("installed", "cached"):
            print(f"{name}: already here ({state.reason})")
            continue
        if state.status != "needs download":
            print(f"error: {name} cannot be prefetched: {state.reason}", file=sys.stderr)
            failed += 1
            continue
        if card.downloads:
            failed += 0 if fetch_files(card) else 1
            continue
        assert card.hub_repo is not None
        if not hub_reachable():
            print(f"error: cannot download {name}: the Hugging Face Hub cannot be reached (offline?)", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: downloading {', '.join(card.hub_files)} from {card.hub_repo}")
        try:
            path = snapshot_download(card.hub_repo, allow_patterns=card.download_patterns)  # shows tqdm bars
        except Exception as err:  # noqa: BLE001 - one line, whatever went wrong
            print(
                f"error: download of {name} failed: {str(err).splitlines()[0] if str(err) else err!r}", file=sys.stderr
            )
            failed += 1
            continue
        print(f"{name}: ready in {path}")
    return 1 if failed else 0


def fetch_files(card: ModelCard, timeout: float = 30.0) -> bool:
    """Download a classic served outside the Hub (card.downloads) into its folder, each file whole
    or not at all (written beside, then renamed); a progress bar per file."""
    from urllib.request import urlopen

    from tqdm import tqdm

    folder = download_dir(card)
    folder.mkdir(parents=True, exist_ok=True)
    for name, url in card.downloads:
        target = folder / name
        if target.exists():
            continue
        partial = target.with_name(target.name + ".part")
        print(f"{card.name}: downloading {url}")
        try:
            with urlopen(url, timeout=timeout) as response, partial.open("wb") as out:
                size = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=size, unit="B", unit_scale=True, desc=name) as bar:
                    while chunk := response.read(1 << 20):
                        out.write(chunk)
                        bar.update(len(chunk))
            partial.replace(target)
        except OSError as err:
            partial.unlink(missing_ok=True)
            print(f"error: download of {card.name} failed ({url}): {getattr(err, 'reason', err)}", file=sys.stderr)
            return False
    print(f"{card.name}: ready in {folder}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_zoo", description="ContextLab's model zoo")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every registered model and whether it is available now")
    pre = sub.add_parser("prefetch", help="download models into the Hugging Face or ContextLab cache (for a classroom)")
    pre.add_argument("names", nargs="+", metavar="NAME")
    args = parser.parse_args(argv)
    if args.command == "list":
        return cmd_list()
    return cmd_prefetch(args.names)


if __name__ == "__main__":
    sys.exit(main())
