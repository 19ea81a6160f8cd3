"""``pqb-harness export-beir``: one domain's MTEB views as a BEIR folder (corpus/queries/qrels)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "Write a domain's corpus, queries and qrels as a BEIR folder (GenericDataLoader format)."
EPILOG = """examples:
  pqb-harness export-beir --domain video_games --out beir/pqb_video_games
  pqb-harness export-beir --domain video_games --dataset_path pqb-benchmark/pqb --revision <sha> --out beir/
then, with beir installed:
  from beir.datasets.data_loader import GenericDataLoader
  corpus, queries, qrels = GenericDataLoader("beir/pqb_video_games").load(split="test")
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from pqb.dataset import settings

    p.add_argument(
        "--domain", required=True, help="the domain whose <domain>-corpus/-queries/-qrels to export"
    )
    p.add_argument(
        "--out", required=True, help="folder to write corpus.jsonl, queries.jsonl, qrels/test.tsv to"
    )
    p.add_argument("--dataset_path", default=settings.default_dataset_path(),
                   help="local folder or Hub id (default: this checkout's pqb_dataset/, else the Hub id)")  # fmt: skip
    p.add_argument("--revision", default=None, help="Hub revision (ignored for a local folder)")


def run(args: argparse.Namespace) -> int:
    from pqb.harness.integrations.beir_export import export_beir

    counts = export_beir(args.dataset_path, args.domain, Path(args.out), revision=args.revision)
    print(json.dumps({"out": str(args.out), **counts}, sort_keys=True))
    return 0
