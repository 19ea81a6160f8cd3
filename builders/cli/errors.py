"""``pqb-build errors``: personal writing-error profiles from the PROFILE sentences of a work dir."""

from __future__ import annotations

import argparse
import json

HELP = "Recover each user's writing errors (GEC + ERRANT) and build per-user, per-context error profiles."
EPILOG = """examples:
  pqb-build errors --domain video_games --workdir work
  pqb-build errors --domain video_games --workdir work --backend quire
  pqb-build errors --domain video_games --backend gector:/models/gector-roberta-large
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--domain", default="video_games", help="config name (default video_games)")
    parser.add_argument("--workdir", default="work", help="build work directory root (default: ./work)")
    parser.add_argument(
        "--backend",
        default="symspell",
        help="corrector: symspell (default), quire, or gector:<hub id or local path>",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed recorded with the stage (default 0)")
    parser.add_argument("--force", action="store_true", help="rerun the stage even if it is up to date")


def run(args: argparse.Namespace) -> int:
    from builders.error_profiles import run_errors
    from builders.workdir import WorkDir

    stats = run_errors(
        WorkDir(args.workdir, args.domain), backend=args.backend, seed=args.seed, force=args.force
    )
    print(f"[errors] {args.domain}: profiles written")
    print(json.dumps(stats, indent=1, sort_keys=True, default=str))
    return 0
