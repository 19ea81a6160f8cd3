"""What every single-stage ``pqb-build`` subcommand shares: its four arguments, its report, its guard."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_stage_arguments(parser: argparse.ArgumentParser) -> None:
    """``--domain``, ``--workdir``, ``--seed``, ``--force``: where a stage runs and whether it reruns."""
    parser.add_argument("--domain", default="video_games", help="config name, e.g. video_games (default)")
    parser.add_argument("--workdir", default="work", help="build work directory root (default: ./work)")
    parser.add_argument("--seed", type=int, default=0, help="seed for every random choice (default 0)")
    parser.add_argument("--force", action="store_true", help="rerun the stage even if it is up to date")


def add_link_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--link",
        choices=("reviewers", "any"),
        default="reviewers",
        help="product-user links (default reviewers)",
    )


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
