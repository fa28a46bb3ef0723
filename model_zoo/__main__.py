"""Command line: `python -m model_zoo list` and `python -m model_zoo prefetch NAME...`."""

from __future__ import annotations

import argparse
import sys

from .errors import ModelZooError
from .registry import availability, get_card, hub_reachable, list_models


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_zoo", description="ContextLab's model zoo")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every registered model and whether it is available now")
    pre = sub.add_parser("prefetch", help="download models into the Hugging Face cache (for a classroom)")
    pre.add_argument("names", nargs="+", metavar="NAME")
    args = parser.parse_args(argv)
    if args.command == "list":
        return cmd_list()
    return cmd_prefetch(args.names)


if __name__ == "__main__":
    sys.exit(main())
