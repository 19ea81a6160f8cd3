"""``pqb-harness run``: evaluate one model on tasks/groups/tags and write a results file."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from pqb.dataset.argtypes import batch_size, bootstrap_iters, non_negative_int, pair_limit
from pqb.harness.cli.argtypes import add_bootstrap_unit
from pqb.harness.errors import UsageError

HELP = "Evaluate a retriever on PQB tasks and write results_<timestamp>.json."
EPILOG = """examples:
  pqb-harness run --model bm25 --tasks pqb --output_path results/
  pqb-harness --model bm25 --model_args k1=0.9,b=0.4,stemmer=english --tasks syntactic,error
  pqb-harness run --model random --tasks pqb_error_video_games --limit 50 --log_samples
  pqb-harness run --model bm25 --tasks pqb --overwrite only-missing   # resume: skip finished tasks
"""
log = logging.getLogger("harness")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="registered model or preset (pqb-harness ls models); required to run")
    p.add_argument(
        "--model_args", default="", help="constructor kwargs: k=v,k=v (ints/floats/bools converted)"
    )
    p.add_argument("--tasks", default="pqb",
                   help="comma list of tasks, groups or tags (default: pqb); 'list', 'list_groups' or "
                   "'list_tags' prints them, as lm-eval does")  # fmt: skip
    p.add_argument(
        "--limit", type=pair_limit, default=None,
        help="the first N (>= 1) pairs of each task, or a share in (0, 1): that fraction of each task's pairs "
        "(at least 1), a seeded sample; whole pairs, never a row without its partner"
    )
    p.add_argument("--output_path", default="results", help="folder for <model>/results_<timestamp>.json, or the results file itself when it ends in .json")
    p.add_argument(
        "--log_samples", action="store_true", help="also write per-query samples JSONL and TREC runs"
    )
    p.add_argument("--batch_size", type=batch_size, default=None, help="int or 'auto', passed to the model")
    p.add_argument("--device", default=None, help="e.g. cpu, cuda, cuda:0 (passed to the model)")
    p.add_argument(
        "--seed", type=non_negative_int, default=None, help="bootstrap seed for every task (default: task's)"
    )
    p.add_argument("--include_path", action="append", default=[], help="extra folder of task YAMLs")
    p.add_argument(
        "--dataset_path", default=None, help="local dataset folder or Hub id overriding the tasks'"
    )
    p.add_argument("--overwrite", choices=("always", "never", "only-missing"), default="always",
                   help="always: recompute; never: refuse if results exist; only-missing: reuse finished tasks")  # fmt: skip
    p.add_argument("--bootstrap_iters", type=bootstrap_iters, default=None,
                   help="bootstrap replicates (default: task's, 1000); 0 = no confidence intervals")  # fmt: skip
    add_bootstrap_unit(p)
    p.add_argument("--strict", action="store_true", help="fail if any requested task is skipped")
    p.add_argument(
        "--no_run_cache", action="store_true", help="re-rank every query instead of reading the run cache"
    )
    p.add_argument(
        "--gate_model",
        default=None,
        help="dense model/preset embedding queries for tasks with the authors' cosine pair gate",
    )
    p.add_argument("--hub_results_repo", default=None, help="push the results to this Hub dataset repo")
    p.add_argument("--verbosity", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper,
                   help="logging level")  # fmt: skip
    p.add_argument("--no-progress", "--no_progress", dest="no_progress", action="store_true",
                   help="draw no progress bar (harness, encoders, indexing, datasets downloads)")  # fmt: skip


LISTINGS = {"list": "tasks", "list_groups": "groups", "list_tags": "tags"}
"""lm-eval's ``--tasks list`` habit: the same tables as ``pqb-harness ls``."""


def run(args: argparse.Namespace) -> int:
    if args.tasks in LISTINGS:
        from pqb.harness.cli import ls

        return ls.run(argparse.Namespace(what=LISTINGS[args.tasks], include_path=args.include_path))
    if not args.model:
        raise UsageError("run needs --model <name> (pqb-harness ls models lists them)")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
    log.setLevel(getattr(logging, args.verbosity))
    from pqb.dataset.progress import progress_bars

    with progress_bars(not args.no_progress):
        return _run(args)


def settings_of(args: argparse.Namespace) -> Any:
    """The session settings ``run`` and ``score`` share, from their parsed arguments."""
    from pqb.harness.evaluation.session import SessionSettings

    return SessionSettings(
        tasks=args.tasks, include_path=args.include_path, dataset_path=args.dataset_path, limit=args.limit,
        n_boot=args.bootstrap_iters, seed=args.seed, unit=args.bootstrap_unit, log_samples=args.log_samples,
        output_path=args.output_path, overwrite=getattr(args, "overwrite", "always"), strict=args.strict,
    )  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    from pqb.harness.evaluation.results import names_a_file, summary_table
    from pqb.harness.evaluation.session import EvaluationSession

    out = EvaluationSession(settings_of(args)).run(
        args.model, args.model_args, device=args.device, batch_size=args.batch_size,
        gate_model=args.gate_model, use_cache=not args.no_run_cache,
    )  # fmt: skip
    print(summary_table(out.results))
    print(f"\nresults: {out.path}" + (f" (+{len(out.extra)} samples/run files)" if out.extra else ""))
    if args.hub_results_repo:
        from pqb.harness.reporting.hub import push_results

        where = Path(args.output_path)
        url = push_results(
            where.parent if names_a_file(where) else where,
            out.path,
            args.hub_results_repo,
            samples=[p for p in out.extra if p.suffix == ".jsonl"],
        )
        print(f"pushed: {url}")
    return 0
