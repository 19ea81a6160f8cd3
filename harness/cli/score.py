"""``pqb-harness score --run run.trec[,run_error.trec] --tasks ...``: every PQB metric from TREC runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from pqb.dataset.argtypes import bootstrap_iters, non_negative_int, pair_limit
from pqb.harness.cli.argtypes import add_bootstrap_unit

HELP = "Score TREC runs made by any system (Anserini, PyTerrier, ...) on PQB tasks; writes a results file."
EPILOG = """examples:
  pqb-harness score --run anserini.trec --tasks pqb --name anserini-bm25 --output_path results/
  pqb-harness score --run clean.trec,typos.trec --tasks pqb_error_video_games --name my-system

Query ids are the dataset rows' ids (clean side) and <id>_error (typo'd side); the harness writes them
in its own runs and in qrels_<task>_<ts>.txt (--log_samples); a task at a fixed dose (pqb_error3_*)
names its error side <id>_error3 (the first 3 edits of each row's error_chain, not the published
<id>_error texts). With two files the second is the error side and may use the plain row ids (read as
<id>_error). A query missing from the runs counts as a miss (no hit, RR 0). A run line whose document is
not in the corpus is never a hit: it is counted and reported (--strict refuses it), and a task none of
whose documents is in the corpus is an error.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True, help="run file, or two comma-separated: all queries, error side")
    p.add_argument("--tasks", default="pqb", help="comma list of tasks, groups or tags (default: pqb)")
    p.add_argument("--name", default=None, help="system name in results (default: the run's tag column)")
    p.add_argument("--output_path", default="results", help="folder for <name>/results_<timestamp>.json, or the results file itself when it ends in .json")
    p.add_argument("--include_path", action="append", default=[], help="extra folder of task YAMLs")
    p.add_argument(
        "--dataset_path", default=None, help="local dataset folder or Hub id overriding the tasks'"
    )
    p.add_argument(
        "--limit", type=pair_limit, default=None,
        help="the first N (>= 1) pairs of each task, or a share in (0, 1): that fraction of each task's pairs "
        "(at least 1), a seeded sample; whole pairs, never a row without its partner"
    )
    p.add_argument("--bootstrap_iters", type=bootstrap_iters, default=None, help="bootstrap replicates")
    p.add_argument("--seed", type=non_negative_int, default=None, help="bootstrap seed (default: task's)")
    add_bootstrap_unit(p)
    p.add_argument(
        "--log_samples", action="store_true", help="also write samples, the run per task and qrels"
    )
    p.add_argument("--strict", action="store_true",
                   help="fail if any requested task is skipped or any run line names a document not in the corpus")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from pqb.harness.cli.run import settings_of
    from pqb.harness.evaluation.results import summary_table
    from pqb.harness.evaluation.session import EvaluationSession

    runs = [Path(p.strip()) for p in args.run.split(",") if p.strip()]
    out = EvaluationSession(settings_of(args)).score(runs, name=args.name)
    print(summary_table(out.results))
    print(f"\nresults: {out.path}" + (f" (+{len(out.extra)} samples/run files)" if out.extra else ""))
    return 0
