"""``pqb-build ingest``: stream Amazon Reviews 2023 files into products, corpus and reviews parquet."""

from __future__ import annotations

import argparse
import sys

from pqb.builders.cli._common import (
    add_executor_arguments,
    add_stage_arguments,
    add_strict_argument,
    executor_from_args,
    report,
    workdir_of,
)

HELP = "Read a category's reviews and metadata (local dir or the Hub) into the work directory."
EPILOG = """examples:
  pqb-build ingest --domain video_games
  pqb-build ingest --domain video_games --source $PQB_AMAZON_DIR --workdir work/ --strict
  pqb-build ingest --domain video_games --source hub          # online: McAuley-Lab/Amazon-Reviews-2023
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stage_arguments(parser)
    parser.add_argument(
        "--source",
        default=None,
        help="'hub', 'hub@<revision>' or a local directory (default: $PQB_AMAZON_DIR)",
    )
    add_strict_argument(parser)
    add_executor_arguments(parser)
    parser.add_argument(
        "--category", default=None, help="override the category file stem (default from --domain)"
    )


def run(args: argparse.Namespace) -> int:
    from pqb.builders.config import BuildConfig
    from pqb.builders.source.amazon import read_summary
    from pqb.builders.source.stage import run_ingest

    executor = executor_from_args(args)
    try:
        cfg = BuildConfig(
            seed=args.seed, source=args.source, strict=args.strict, category=args.category, executor=executor
        )
        stats = run_ingest(workdir_of(args), cfg, force=args.force)
    finally:
        executor.close()
    report("ingest", stats)
    for what in ("reviews_read", "meta_read"):
        read = stats.get(what, {})
        for where in (w for found in read.get("examples", {}).values() for w in found):
            print(f"warning: {where}", file=sys.stderr)
        print(f"{what.removesuffix('_read')}: {read_summary(read)}", file=sys.stderr)
    return 0
