"""``pqb-build publish``: write ``pqb_dataset/`` from built work dirs; ``--repo`` also pushes to the Hub."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Write the dataset folder (parquet per config + card) from the work dirs; --repo pushes to the Hub."
EPILOG = """examples:
  pqb-build publish                                  # every domain of ./work that has pairs.parquet
  pqb-build publish --domain video_games --dataset /tmp/pqb
  pqb-build publish --push-only --repo my-org/pqb    # upload README.md + data/ (online, HF token)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--domain", action="append", default=None, help="domain(s) to publish (default: all built)"
    )
    parser.add_argument("--workdir", default="work", help="build work directory root (default: ./work)")
    parser.add_argument(
        "--dataset", default=None, help="dataset folder (default: $PQB_DATASET_DIR, else ./pqb_dataset or the checkout's pqb_dataset/)"
    )
    parser.add_argument("--repo", default=None, help="Hub dataset repo id to push to, e.g. my-org/pqb")
    parser.add_argument(
        "--push-only", action="store_true", help="push the existing folder, do not rewrite it"
    )
    parser.add_argument("--private", action="store_true", help="create the Hub repo as private")
    parser.add_argument("--token", default=None, help="Hub token (default: the logged-in token)")


def built_domains(work: Path) -> list[str]:
    return sorted(p.parent.name for p in Path(work).glob("*/pairs.parquet"))


def run(args: argparse.Namespace) -> int:
    from pqb.builders.publish.tables import publish, push_to_hub
    from pqb.builders.workdir import WorkDir
    from pqb.dataset import settings

    dataset = Path(args.dataset or settings.default_dataset_dir())
    if not args.push_only:
        domains = args.domain or built_domains(Path(args.workdir))
        if not domains:
            print(f"no built domain under {args.workdir} (no */pairs.parquet): run `pqb-build all` first")
            return 1
        counts = publish([WorkDir(Path(args.workdir), d) for d in domains], dataset)
        for config, n in sorted(counts.items()):
            print(f"  {config}: {n} rows")
        print(f"wrote {dataset}")
    if args.repo:
        url = push_to_hub(dataset, args.repo, token=args.token, private=args.private)
        print(f"pushed to {args.repo}: {url}")
    return 0
