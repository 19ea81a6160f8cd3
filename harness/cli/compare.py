"""``pqb-harness compare A.json B.json``: paired differences of every metric, with CIs and p-values."""

from __future__ import annotations

import argparse
from pathlib import Path

from pqb.dataset.argtypes import non_negative_int
from pqb.harness.cli.argtypes import add_allow_edited, add_bootstrap_unit

HELP = "Compare two results files: paired A − B with clustered bootstrap CIs and randomization p-values."
EPILOG = """examples:
  pqb-harness compare results/bm25/results_<ts>.json results/minilm/results_<ts>.json
  pqb-harness compare A.json B.json --bootstrap_unit user --output cmp.json --metrics flip@10,deg@10,mrr
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", type=Path, help="results file of system A")
    p.add_argument("b", type=Path, help="results file of system B (differences are A − B)")
    p.add_argument(
        "--tasks", default=None, help="comma list of tasks to compare (default: every shared task)"
    )
    p.add_argument("--bootstrap_iters", type=non_negative_int, default=1000, help="bootstrap replicates")
    p.add_argument(
        "--permutations", type=non_negative_int, default=1000, help="randomization-test permutations"
    )
    p.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the draws (same for both systems)"
    )
    add_bootstrap_unit(p)
    p.add_argument("--dataset_path", default=None, help="dataset folder if it moved since the runs")
    p.add_argument("--metrics", default=None, help="comma list of metrics to print (all are written)")
    p.add_argument("--output", type=Path, default=None, help="also write the comparison as JSON here")
    add_allow_edited(p)


def run(args: argparse.Namespace) -> int:
    from pqb.dataset.io import atomic_write_json
    from pqb.harness.evaluation.compare import compare_markdown, compare_results
    from pqb.harness.evaluation.results import load_results
    from pqb.harness.evaluation.task_registry import split_task_list

    report = compare_results(
        load_results(args.a, allow_edited=args.allow_edited), load_results(args.b, allow_edited=args.allow_edited),
        tasks=split_task_list(args.tasks) if args.tasks else None, n_boot=args.bootstrap_iters,
        n_perm=args.permutations, seed=args.seed, unit=args.bootstrap_unit, dataset_path=args.dataset_path,
        allow_edited=args.allow_edited, paths=(args.a, args.b),
    )  # fmt: skip
    print(compare_markdown(report, split_task_list(args.metrics) if args.metrics else None))
    if args.output:
        from pqb.harness.evaluation.results import clean_json

        atomic_write_json(args.output, clean_json(report))
        print(f"comparison: {args.output}")
    return 0
