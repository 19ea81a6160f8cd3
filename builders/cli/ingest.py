"""``pqb-build ingest``: stream Amazon Reviews 2023 files into products, corpus and reviews parquet."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

HELP = "Read a category's reviews and metadata (local dir or the Hub) into the work directory."
EPILOG = """examples:
  pqb-build ingest --domain video_games
  pqb-build ingest --domain video_games --source ../shared/data/amazon2023-mini --workdir work/ --strict
  pqb-build ingest --domain video_games --source hub          # online: McAuley-Lab/Amazon-Reviews-2023
"""


def add_common(parser: argparse.ArgumentParser) -> None:
    """Arguments shared by ingest/users/profiles/validate (also used by ``pqb-build all``)."""
    parser.add_argument("--domain", default="video_games", help="config name, e.g. video_games (default)")
    parser.add_argument(
        "--source",
        default=None,
        help="'hub', 'hub@<revision>' or a local directory (default: $PQB_AMAZON_DIR)",
    )
    parser.add_argument("--workdir", default="work", help="build work directory root (default: ./work)")
    parser.add_argument("--seed", type=int, default=0, help="seed for every random choice (default 0)")
    parser.add_argument("--strict", action="store_true", help="fail on the first malformed input line")
    parser.add_argument(
        "--link",
        choices=("reviewers", "any"),
        default="reviewers",
        help="product-user links (default reviewers)",
    )
    parser.add_argument("--force", action="store_true", help="rerun the stage even if it is up to date")


def report(name: str, stats: dict[str, Any]) -> None:
    """Print a stage's stats (the manifest copy) as indented JSON."""
    print(f"[{name}] " + ("up to date, skipped" if stats.get("skipped") else "done"))
    print(json.dumps(stats, indent=1, sort_keys=True, default=str))


def guarded(fn: Any) -> int:
    """Run a stage call; a domain without enough data is a clear one-line error (exit 1), not a traceback."""
    from builders.stages import InsufficientDataError

    try:
        return int(fn() or 0)
    except InsufficientDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument(
        "--category", default=None, help="override the category file stem (default from --domain)"
    )


def run(args: argparse.Namespace) -> int:
    from builders.stages import run_ingest

    stats = run_ingest(
        args.workdir, args.source, args.domain, args.strict, category=args.category, force=args.force
    )
    report("ingest", stats)
    read = [stats.get("reviews_read", {}), stats.get("meta_read", {})]
    if any(r.get("malformed") for r in read):
        print(f"warning: malformed lines skipped: {[r.get('malformed') for r in read]} (reviews, meta)")
    return 0
