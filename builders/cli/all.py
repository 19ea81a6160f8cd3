"""``pqb-build all``: every stage (ingest -> users -> profiles -> errors -> generate -> pair) and publish.

With no arguments (``pqb-build``) it is the embedded default: every category of ``$PQB_AMAZON_DIR``
(default in :mod:`pqb.dataset.settings`), the small-slice configuration of
:data:`pqb.builders.config.EMBEDDED_DEFAULT`, published to ``pqb_dataset/``. ``--preset paper`` takes
:data:`pqb.builders.config.PAPER` (the authors' thresholds) instead; options given override either.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pqb.builders.cli._common import (
    add_executor_arguments,
    add_progress_argument,
    add_strict_argument,
    executor_from_args,
)
from pqb.builders.cli.generate import add_filter_arguments, filter_config, generator_kwargs
from pqb.builders.cli.pair import add_pair_arguments, pair_config
from pqb.dataset.argtypes import non_negative_int, open_unit_interval, positive_int, safe_name

if TYPE_CHECKING:
    from pqb.builders.config import BuildConfig

HELP = "Build every stage of one or all domains (resumable) and publish pqb_dataset/."
EPILOG = """examples:
  pqb-build                                          # embedded default: all of $PQB_AMAZON_DIR, offline
  pqb-build all --domain video_games --source $PQB_AMAZON_DIR
  pqb-build all --domain video_games --source hub --link reviewers --threshold-kind chi2
  pqb-build all --domain video_games --source hub --preset paper --workers 2   # the authors' thresholds
  pqb-build all --domain video_games --force pair    # rerun one stage (and what depends on it)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pqb.builders.config import PRESETS

    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default="embedded",
        help="thresholds and settings: embedded (default: the slice's looser thresholds, link any, held-out "
        "threshold) or paper (the authors' thresholds: a Gaussian needs >= 40 profile and >= 10 held-out "
        "sentences, a syntactic profile reads at most 200 sentences and an error profile 50; link reviewers; "
        "chi2). The options below override the preset's values",
    )  # fmt: skip
    parser.add_argument("--domain", action="append", default=None, type=safe_name,
                        help="domain(s) (default: every category)")  # fmt: skip
    parser.add_argument(
        "--source", default=None, help="'hub', 'hub@<rev>' or a directory (default $PQB_AMAZON_DIR)"
    )
    parser.add_argument("--workdir", default="work", help="build work directory root (default: ./work)")
    parser.add_argument(
        "--dataset",
        default=None,
        help="dataset folder (default: $PQB_DATASET_DIR, else ./pqb_dataset or the checkout's pqb_dataset/)",
    )
    parser.add_argument("--seed", type=non_negative_int, default=None, help="(default: the preset's, 0)")
    parser.add_argument("--link", choices=("reviewers", "any"), default=None, help="(default: the preset's)")
    parser.add_argument("--link-users-per-product", type=positive_int, default=None)
    parser.add_argument(
        "--threshold-kind", choices=("chi2", "heldout"), default=None, help="(default: the preset's)"
    )
    parser.add_argument("--threshold-q", type=open_unit_interval, default=None)
    parser.add_argument(
        "--error-backend", default=None, help="symspell (default), quire, gector:<path> or seq2seq:<path>"
    )
    parser.add_argument("--no-publish", action="store_true", help="build the work dirs only")
    parser.add_argument(
        "--force", action="append", default=[], choices=("ingest", "users", "profiles", "errors", "generate", "pair"),
        help="rerun a stage even if up to date (repeatable); later stages rerun when their inputs change",
    )  # fmt: skip
    add_progress_argument(parser)
    add_strict_argument(parser)
    add_executor_arguments(parser)
    add_filter_arguments(parser)
    add_pair_arguments(parser)


def config_from_args(args: argparse.Namespace) -> BuildConfig:
    """``--preset``'s configuration with every option given on the command line applied."""
    from pqb.builders.config import preset

    given = {"seed": args.seed, "link": args.link, "link_users_per_product": args.link_users_per_product,
             "threshold_kind": args.threshold_kind, "threshold_q": args.threshold_q,
             "error_backend": args.error_backend}  # fmt: skip
    return preset(
        args.preset, **{k: v for k, v in given.items() if v is not None},
        generator=args.backend, generator_kwargs=generator_kwargs(args), n_candidates=args.n,
        filters=filter_config(args), pair=pair_config(args),
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from pqb.builders.pipeline import build

    config = config_from_args(args)
    executor = executor_from_args(args)
    try:
        results = build(
            args.domain, source=args.source, work=Path(args.workdir),
            dataset_dir=Path(args.dataset) if args.dataset else None, config=config,
            publish=not args.no_publish, force=args.force, progress=not args.no_progress, strict=args.strict,
            executor=executor, semantic_default=False,  # filter_config already applied --semantic's default
        )  # fmt: skip
    finally:
        executor.close()
    return 0 if any(r.rows for r in results) else 1
