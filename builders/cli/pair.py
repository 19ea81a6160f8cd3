"""``pqb-build pair``: farthest user pair per target, inside-own/outside-partner selection, error injection."""

from __future__ import annotations

import argparse

from pqb.builders.cli._common import add_stage_arguments, report, workdir_of
from pqb.dataset.argtypes import positive_int

HELP = "Select each target's farthest user pair and their queries, then inject each user's errors."
EPILOG = """examples:
  pqb-build pair --domain video_games
  pqb-build pair --domain video_games --distance bhattacharyya --max-pairs-tried 3
"""


def add_pair_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--distance", choices=("sym_kl", "bhattacharyya"), default="sym_kl")
    parser.add_argument(
        "--max-pairs-tried", type=positive_int, default=1,
        help="1 = strictly the farthest pair (default); k > 1 falls back to the next k-1 pairs",
    )  # fmt: skip
    parser.add_argument("--no-errors", action="store_true", help="skip error injection")
    parser.add_argument(
        "--evidence-floor", type=positive_int, default=3,
        help="users with fewer of their own recovered slips are flagged backoff (default 3)",
    )  # fmt: skip
    parser.add_argument(
        "--cosine-gate", action="store_true",
        help="also require MiniLM cosine >= 0.9 between clean and error query (the authors' gate; "
        "readability is always on)",
    )  # fmt: skip


def pair_config(args: argparse.Namespace) -> object:
    from pqb.builders.config import PairConfig

    return PairConfig(
        distance=args.distance, max_pairs_tried=args.max_pairs_tried, inject_errors=not args.no_errors,
        evidence_floor=args.evidence_floor, cosine_gate=args.cosine_gate,
    )  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stage_arguments(parser)
    add_pair_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pqb.builders.config import BuildConfig
    from pqb.builders.pairing.pairs import run_pair

    stats = run_pair(workdir_of(args), BuildConfig(seed=args.seed, pair=pair_config(args)), force=args.force)
    report(f"pair {args.domain}", stats)
    return 0
