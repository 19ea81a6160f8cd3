"""``pqb-harness run``: evaluate one model on tasks/groups/tags and write a results file."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import PQBHarnessError

HELP = "Evaluate a retriever on PQB tasks and write results_<timestamp>.json."
EPILOG = """examples:
  pqb-harness run --model bm25 --tasks pqb --output_path results/
  pqb-harness --model bm25 --model_args k1=0.9,b=0.4,stemmer=english --tasks syntactic,error
  pqb-harness run --model random --tasks pqb_error_video_games --limit 50 --log_samples
  pqb-harness run --model bm25 --tasks pqb --overwrite only-missing   # resume: skip finished tasks
"""
log = logging.getLogger("harness")


def _batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--batch_size must be an integer or 'auto', got {value!r}") from exc


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="registered model or preset (pqb-harness ls models)")
    p.add_argument(
        "--model_args", default="", help="constructor kwargs: k=v,k=v (ints/floats/bools converted)"
    )
    p.add_argument("--tasks", default="pqb", help="comma list of tasks, groups or tags (default: pqb)")
    p.add_argument("--limit", type=int, default=None, help="evaluate only the first N rows of each task")
    p.add_argument("--output_path", default="results", help="folder for <model>/results_<timestamp>.json")
    p.add_argument(
        "--log_samples", action="store_true", help="also write per-query samples JSONL and TREC runs"
    )
    p.add_argument("--batch_size", type=_batch_size, default=None, help="int or 'auto', passed to the model")
    p.add_argument("--device", default=None, help="e.g. cpu, cuda, cuda:0 (passed to the model)")
    p.add_argument("--seed", type=int, default=None, help="bootstrap seed for every task (default: task's)")
    p.add_argument("--include_path", action="append", default=[], help="extra folder of task YAMLs")
    p.add_argument(
        "--dataset_path", default=None, help="local dataset folder or Hub id overriding the tasks'"
    )
    p.add_argument("--overwrite", choices=("always", "never", "only-missing"), default="always",
                   help="always: recompute; never: refuse if results exist; only-missing: reuse finished tasks")  # fmt: skip
    p.add_argument(
        "--bootstrap_iters", type=int, default=None, help="bootstrap replicates (default: task's, 1000)"
    )
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
    p.add_argument("--verbosity", default="INFO", help="logging level")


def run(args: argparse.Namespace) -> int:
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
    log.setLevel(getattr(logging, str(args.verbosity).upper(), logging.INFO))
    try:
        return _run(args)
    except PQBHarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _previous(args: argparse.Namespace, wanted: list[str]) -> tuple[dict[str, Any] | None, list[str]]:
    from harness.results import load_results, newest_results

    path = newest_results(Path(args.output_path), args.model)
    if path is None or args.overwrite == "always":
        return None, []
    prev = load_results(path)
    prev["_path"] = str(path)
    done = [t for t in wanted if t in prev["results"]]
    if args.overwrite == "never" and done:
        from harness.errors import PQBHarnessError as _E

        raise _E(
            f"results for {', '.join(done)} already exist in {path}; use --overwrite always or only-missing"
        )
    if args.overwrite == "only-missing":
        from harness.registry import parse_model_args

        same = prev["config"].get("model_args") == parse_model_args(args.model_args)
        return (prev, done) if same else (None, [])
    return None, []


def _gate_embedder(tasks: list[Any], args: argparse.Namespace) -> Any:
    """Query embedder for tasks using the authors' cosine pair gate, or ``None`` if no task gates.

    The gate model is ``--gate_model`` or the tasks' ``gate_model`` (a registered dense model or
    preset, e.g. ``gte-base`` as the authors used, or ``minilm`` offline); one model serves every
    task of the run, so all gated pairs are judged by the same embedding.
    """
    from harness.errors import TaskConfigError
    from harness.registry import create_retriever

    gated = [t for t in tasks if t.similarity_gate is not None]
    if not gated:
        return None
    names = {t.gate_model for t in gated}
    if len(names) != 1 or None in names:
        raise TaskConfigError(
            f"tasks {[t.task for t in gated]} use the cosine pair gate but name gate models {sorted(map(str, names))}; "
            "pass one with --gate_model (e.g. gte-base, or minilm offline)"
        )
    model = create_retriever(names.pop(), None, device=args.device, batch_size=args.batch_size)
    if not hasattr(model, "encode_queries"):
        raise TaskConfigError(f"gate model {model.name!r} cannot embed queries; use a dense model or preset")
    return model.encode_queries


def _run(args: argparse.Namespace) -> int:
    from harness.evaluator import EvaluationOutput, evaluate
    from harness.registry import create_retriever, parse_model_args
    from harness.results import build_results, summary_table, write_results
    from harness.task_registry import TaskRegistry, split_task_list

    started = time.time()
    registry = TaskRegistry(args.include_path)
    task_names, groups = registry.resolve(split_task_list(args.tasks))
    model_args = parse_model_args(args.model_args)
    previous, reused = _previous(args, task_names)
    todo = [registry.tasks[t] for t in task_names if t not in reused]
    if args.gate_model:  # recorded in each gated task's config, so results name the model that gated
        todo = [replace(t, gate_model=args.gate_model) if t.similarity_gate is not None else t for t in todo]
    retriever = create_retriever(args.model, model_args, device=args.device, batch_size=args.batch_size)
    if todo:
        embed = _gate_embedder(todo, args)
        output = evaluate(retriever, todo, dataset_path=args.dataset_path, limit=args.limit,
                          n_boot=args.bootstrap_iters, seed=args.seed, log_samples=args.log_samples,
                          run_name=args.model, use_cache=not args.no_run_cache, embed=embed)  # fmt: skip
    else:
        output = EvaluationOutput(stats={"index_calls": 0, "queries_scored": 0, "run_cache_hits": 0})
    if not output.outcomes and not reused:
        print(f"error: no task could run; skipped: {output.skipped}", file=sys.stderr)
        return 1
    if args.strict and output.skipped:
        print(f"error: --strict and {len(output.skipped)} task(s) skipped: {output.skipped}", file=sys.stderr)
        return 1
    config = {
        "model": args.model, "model_args": model_args, "model_info": retriever.describe(),
        "seeds": {"bootstrap": args.seed}, "limit": args.limit, "device": args.device,
        "batch_size": args.batch_size, "bootstrap": {"n_boot": args.bootstrap_iters, "seed": args.seed, "method": "paired percentile"},
        "stats": {k: int(v) for k, v in output.stats.items()},
    }  # fmt: skip
    results = build_results(output, registry=registry, groups=groups, config=config, started=started,
                            finished=time.time(), previous=previous, reused=reused)  # fmt: skip
    path, extra = write_results(
        results, Path(args.output_path), args.model, output.outcomes, args.log_samples
    )
    print(summary_table(results))
    print(f"\nresults: {path}" + (f" (+{len(extra)} samples/run files)" if extra else ""))
    if args.hub_results_repo:
        from harness.hub import push_results

        url = push_results(
            path.parent, path, args.hub_results_repo, samples=[p for p in extra if p.suffix == ".jsonl"]
        )
        print(f"pushed: {url}")
    return 0
