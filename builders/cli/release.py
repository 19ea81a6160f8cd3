"""``pqb-build release``: import the authors' published queries as local-only ``<d>-release`` configs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "Import the authors' published queries (+ a corpus from your meta file) and audit their invariants."
EPILOG = """examples:
  pqb-build release --domain video_games
  pqb-build release --domain video_games --meta ~/data/meta_Video_Games.jsonl.gz   # + release corpus
  pqb-build check --config video_games-release
The release configs copy third-party data: never commit them (pqb_dataset/data/*-release* is gitignored).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--domain", default="video_games", help="config name (default video_games)")
    parser.add_argument(
        "--meta", default=None, help="Amazon Reviews 2023 meta_<Category>.jsonl[.gz] for a corpus"
    )
    parser.add_argument(
        "--release-dir", default=None, help="folder of <Category>.json (default $PQB_RELEASE_DIR)"
    )
    parser.add_argument("--dataset", default=None, help="dataset folder (default: $PQB_DATASET_DIR, else ./pqb_dataset or the checkout's pqb_dataset/)")


def run(args: argparse.Namespace) -> int:
    from pqb.builders.publish.release import run_release
    from pqb.builders.publish.tables import check_dataset
    from pqb.dataset.schema import config_name

    out = run_release(
        args.domain,
        release_dir=Path(args.release_dir) if args.release_dir else None,
        meta_path=Path(args.meta) if args.meta else None,
        dataset_dir=Path(args.dataset) if args.dataset else None,
    )
    print(json.dumps(out, indent=1, sort_keys=True))
    configs = [config_name(args.domain, "release")] + (
        [config_name(args.domain, "release-corpus")] if args.meta else []
    )
    report = check_dataset(Path(args.dataset) if args.dataset else None, configs)
    report.violations = [v for v in report.violations if v.config in configs]
    print("invariant check of the release (violations are findings about the authors' data):")
    print(report.summary(max_lines=10))
    return 0
