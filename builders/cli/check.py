"""``pqb-build check``: schema and invariants of a built dataset; prints every violation, exit 1 if any."""

from __future__ import annotations

import argparse

from pqb.dataset.argtypes import non_negative_int

HELP = "Check a built dataset: schemas, PQB invariants, BEIR views, user coverage, card statistics."
EPILOG = """examples:
  pqb-build check                                   # pqb_dataset/, every config
  pqb-build check --config video_games --config video_games-release
  pqb-build check --dataset /tmp/pqb --max-lines 0  # all violations
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default=None, help="dataset folder (default: $PQB_DATASET_DIR, else ./pqb_dataset or the checkout's pqb_dataset/)")
    parser.add_argument("--config", action="append", default=None, help="config(s) to check (default: all)")
    parser.add_argument(
        "--max-lines", type=non_negative_int, default=0, help="violations to print (0 = every one)"
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pqb.builders.publish.tables import check_dataset, core_term_presence
    from pqb.dataset import settings

    dataset = Path(args.dataset or settings.default_dataset_dir())
    report = check_dataset(dataset, args.config)
    n = len(report.violations) if args.max_lines == 0 else args.max_lines
    print(f"dataset: {dataset}")
    if core_term_presence(report):
        print(core_term_presence(report))
    print(report.summary(max_lines=max(n, 1)))
    return 0 if report.ok else 1
