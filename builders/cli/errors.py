"""``pqb-build errors``: personal writing-error profiles from the PROFILE sentences of a work dir."""

from __future__ import annotations

import argparse

from pqb.builders.cli._common import (
    add_executor_arguments,
    add_stage_arguments,
    executor_from_args,
    report,
    workdir_of,
)
from pqb.dataset.argtypes import positive_int

HELP = "Recover each user's writing errors (GEC + ERRANT) and build per-user, per-context error profiles."
EPILOG = """examples:
  pqb-build errors --domain video_games --workdir work
  pqb-build errors --domain video_games --workdir work --backend quire
  pqb-build errors --domain video_games --backend gector:/models/gector-roberta-large
  pqb-build errors --domain video_games --backend seq2seq:/models/t5-spelling
  pqb-build errors --domain video_games --workers 2
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stage_arguments(parser)
    add_executor_arguments(parser)
    parser.add_argument(
        "--backend",
        default="symspell",
        help="corrector: symspell (default), quire, gector:<hub id or local path> (GECToR tagger) or "
        "seq2seq:<hub id or local path> (T5/BART text-to-text)",
    )
    parser.add_argument(
        "--max-sentences", type=positive_int, default=None,
        help="read at most this many profile sentences per user, in seeded hash order (default: all; "
        "the paper preset: 50)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from pqb.builders.config import BuildConfig
    from pqb.builders.writing_errors.profiles import run_errors

    executor = executor_from_args(args)
    cfg = BuildConfig(seed=args.seed, error_backend=args.backend, error_max_sentences=args.max_sentences,
                      executor=executor)  # fmt: skip
    try:
        stats = run_errors(workdir_of(args), cfg, force=args.force)
    finally:
        executor.close()
    report(f"errors {args.domain}", stats)
    return 0
