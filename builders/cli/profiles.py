"""``pqb-build profiles``: syntactic rules, encoder (profile sentences only) and per-user Gaussians."""

from __future__ import annotations

import argparse

from pqb.builders.cli._common import (
    add_executor_arguments,
    add_stage_arguments,
    executor_from_args,
    report,
    workdir_of,
)
from pqb.dataset.argtypes import open_unit_interval, positive_int

HELP = (
    "Fit the rule vocabulary, SVD and encoder on profile sentences, then each user's rank-one+diag Gaussian."
)
EPILOG = """examples:
  pqb-build profiles --domain video_games
  pqb-build profiles --domain video_games --threshold heldout --threshold-q 0.95 --epochs 30
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pqb.builders.config import EMBEDDED_DEFAULT as D

    add_stage_arguments(parser)
    add_executor_arguments(parser)
    parser.add_argument(
        "--threshold", choices=("chi2", "heldout"), default=D.threshold_kind,
        help=f"acceptance threshold kind (default {D.threshold_kind}, as `pqb-build all`: the quantile of "
        "the user's own held-out D²; chi2 is the paper's χ²₁₆ bound)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold-q",
        type=open_unit_interval,
        default=D.threshold_q,
        help=f"quantile of the threshold (default {D.threshold_q}, as `pqb-build all`)",
    )
    parser.add_argument(
        "--epochs", type=positive_int, default=30, help="encoder training epochs (default 30)"
    )
    parser.add_argument(
        "--min-df", type=positive_int, default=2, help="rule document-frequency threshold (default 2)"
    )
    parser.add_argument(
        "--encoder-max-sentences",
        type=positive_int,
        default=50_000,
        help="cap on the encoder's training sentences: whole users in seeded hash order (default 50000)",
    )


def run(args: argparse.Namespace) -> int:
    from pqb.builders.config import BuildConfig, EncoderConfig
    from pqb.builders.syntax.stage import run_profiles

    executor = executor_from_args(args)
    cfg = BuildConfig(
        seed=args.seed,
        encoder=EncoderConfig(epochs=args.epochs, min_df=args.min_df, seed=args.seed),
        threshold_kind=args.threshold,
        threshold_q=args.threshold_q,
        encoder_max_sentences=args.encoder_max_sentences,
        executor=executor,
    )
    try:
        stats = run_profiles(workdir_of(args), cfg, force=args.force)
    finally:
        executor.close()
    report("profiles", stats)
    return 0
