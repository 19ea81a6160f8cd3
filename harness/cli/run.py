"""``pqb-harness run``: evaluate one model on tasks/groups/tags and write a results file."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pqb.dataset.argtypes import batch_size, bootstrap_iters, non_negative_int, row_limit
from pqb.harness.cli.argtypes import add_bootstrap_unit, bootstrap_note
from pqb.harness.errors import DataError, UsageError

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
        "--limit", type=row_limit, default=None,
        help="the first N (>= 1) rows of each task, or a share in (0, 1): that fraction of them, a seeded sample"
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


def bootstrap_config(args: argparse.Namespace) -> dict[str, Any]:
    """``config.bootstrap``: the command-line overrides (``None`` = each task's own) and the method."""
    return {"n_boot": args.bootstrap_iters, "seed": args.seed, "unit": args.bootstrap_unit,
            "method": "clustered paired percentile"}  # fmt: skip


def _previous(args: argparse.Namespace, system: str, wanted: list[str]) -> list[Any]:
    """Earlier runs to resume from (``only-missing``); refuses existing results with ``never``."""
    from pqb.harness.evaluation.results import details_folder, model_folder
    from pqb.harness.evaluation.resume import load_previous_runs

    if args.overwrite == "always":
        return []
    runs = load_previous_runs(
        model_folder(Path(args.output_path), system), details_folder(Path(args.output_path), system)
    )
    done = sorted(
        {t for r in runs if r.path.name.startswith("results_") for t in wanted if t in r.data["results"]}
    )
    if args.overwrite == "never" and done:
        raise UsageError(
            f"results for {', '.join(done)} already exist in {Path(args.output_path)}; "
            "use --overwrite always (recompute) or only-missing (reuse matching tasks)"
        )
    return runs


def _plan(args: argparse.Namespace, keys: dict[str, dict], runs: list[Any], details: Path) -> dict[str, Any]:
    """Tasks to reuse; prints one ``resume:`` line per task on stderr saying what happens and why."""
    from pqb.harness.evaluation.resume import plan_resume

    if args.overwrite != "only-missing":
        return {}
    reuse, why = plan_resume(keys, runs)
    if args.log_samples:  # a reused task must leave the samples, run and qrels an uninterrupted run would
        from pqb.harness.evaluation.results import earlier_task_details

        for task in [t for t, r in reuse.items() if earlier_task_details(details, t, r.path) is None]:
            why[task] = f"--log_samples and {reuse.pop(task).path.name} kept no samples for it"
    for task in sorted(keys):
        line = f"reused from {reuse[task].path}" if task in reuse else f"recomputing: {why[task]}"
        print(f"resume: {task}: {line}", file=sys.stderr)
    return reuse


def _gate_model(tasks: list[Any], args: argparse.Namespace) -> Any:
    """Query embedder (a dense retriever) for tasks using the authors' cosine pair gate, or ``None`` if
    no task gates.

    The gate model is ``--gate_model`` or the tasks' ``gate_model`` (a registered dense model or
    preset, e.g. ``gte-base`` as the authors used, or ``minilm`` offline); one model serves every
    task of the run, so all gated pairs are judged by the same embedding. It is built (weights
    identity, no weights loaded) before the resume plan: gated tasks' resume keys hold its
    ``cache_settings()``, since its name alone does not say which checkpoint gated.
    """
    from pqb.harness.errors import TaskConfigError
    from pqb.harness.registry import create_retriever

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
    return model


def resolve_tasks(args: argparse.Namespace) -> tuple[Any, list[Any], list[str]]:
    from pqb.harness.evaluation.task_registry import TaskRegistry, split_task_list

    registry = TaskRegistry(args.include_path)
    names, groups = registry.resolve(split_task_list(args.tasks))
    tasks = [registry.tasks[t] for t in names]
    if getattr(
        args, "gate_model", None
    ):  # recorded in each gated task's config, so results name the model that gated
        tasks = [
            replace(t, gate_model=args.gate_model) if t.similarity_gate is not None else t for t in tasks
        ]
    return registry, tasks, groups


def _run(args: argparse.Namespace) -> int:
    from pqb.dataset.environment import numeric_environment
    from pqb.harness.evaluation.evaluator import EvaluationOutput, evaluate, load_tasks, skipped_note
    from pqb.harness.evaluation.results import (
        build_results,
        checkpoint_path,
        details_folder,
        lm_eval_model_fields,
        names_a_file,
        resumed_path,
        summary_table,
        timestamp,
        write_checkpoint,
        write_results,
        write_task_details,
    )
    from pqb.harness.evaluation.resume import resume_inputs
    from pqb.harness.registry import create_retriever, parse_model_args, system_name

    started, stamp = time.time(), timestamp()
    if note := bootstrap_note(args.bootstrap_iters):
        print(note, file=sys.stderr)
    registry, tasks, groups = resolve_tasks(args)
    model_args = parse_model_args(args.model_args)
    system = system_name(args.model, model_args)
    runs = _previous(args, system, [t.task for t in tasks])
    retriever = create_retriever(args.model, model_args, device=args.device, batch_size=args.batch_size)
    loaded, skipped = load_tasks(tasks, args.dataset_path, args.limit)
    if skipped:  # one line for all (a dataset built for some domains lacks the others by design)
        print(skipped_note(skipped), file=sys.stderr)
    if not loaded:
        raise DataError(f"no task could run; skipped: {skipped}")
    if args.strict and skipped:
        raise DataError(f"--strict and {len(skipped)} task(s) skipped: {skipped}")
    gate = _gate_model([d.cfg for d in loaded.values()], args)
    gate_settings = gate.cache_settings() if gate is not None else None
    keys = {n: resume_inputs(d, model=system, model_settings=retriever.cache_settings(), limit=args.limit,
                             n_boot=args.bootstrap_iters, seed=args.seed, unit=args.bootstrap_unit,
                             gate_settings=gate_settings)
            for n, d in loaded.items()}  # fmt: skip
    planned = _plan(args, keys, runs, details_folder(Path(args.output_path), system))
    consumed = {r.path for r in planned.values() if r.path.name.startswith("checkpoint_")}
    reuse = {t: {**r.as_source(), "_path": str(resumed_path(r.path) if r.path in consumed else r.path)}
             for t, r in planned.items()}  # fmt: skip
    todo = {n: d for n, d in loaded.items() if n not in reuse}
    config = {
        "model": system, "model_kwargs": model_args,
        "seeds": {"bootstrap": args.seed}, "limit": args.limit, "device": args.device,
        "batch_size": args.batch_size, "bootstrap": bootstrap_config(args),
        "numeric_environment": numeric_environment(),
    }  # fmt: skip

    def results_of(output: EvaluationOutput) -> dict[str, Any]:
        info = retriever.describe()
        stats = {"model_info": info, "stats": {k: int(v) for k, v in output.stats.items()},
                 **lm_eval_model_fields(system, model_args, info)}  # fmt: skip
        if gate is not None:  # the weights that gated, as model_info names the main model's
            stats["gate_model_info"] = gate.describe()
        return build_results(output, registry=registry, groups=groups, config={**config, **stats}, started=started,
                             finished=time.time(), resume=keys, reused=reuse)  # fmt: skip

    ckpt = checkpoint_path(Path(args.output_path), system, stamp)
    done = EvaluationOutput(skipped=skipped)

    def on_task(name: str, outcome: Any) -> None:  # a killed run keeps every finished task
        done.outcomes[name] = outcome
        if args.log_samples:  # before the checkpoint names the task, so a resume finds its samples
            write_task_details(ckpt.parent, name, outcome, stamp)
        write_checkpoint(ckpt, results_of(done), {n: o.replicates for n, o in done.outcomes.items()})

    output = EvaluationOutput(stats={"index_calls": 0, "queries_scored": 0, "run_cache_hits": 0})
    if todo:
        output = evaluate(retriever, todo, n_boot=args.bootstrap_iters, seed=args.seed, unit=args.bootstrap_unit,
                          log_samples=args.log_samples, run_name=system,
                          use_cache=not args.no_run_cache,
                          embed=gate.encode_queries if gate is not None else None, on_task=on_task)  # fmt: skip
    output.skipped = skipped
    results = results_of(output)
    path, extra = write_results(results, Path(args.output_path), system, output.outcomes, args.log_samples,
                                stamp=stamp, reused_details={t: r.path for t, r in planned.items()})  # fmt: skip
    ckpt.unlink(missing_ok=True)  # this run's tasks now live in the results file
    for used in consumed:  # kept out of the resume glob; the reused tasks' ``reused_from`` names it
        if used.exists():
            os.replace(used, resumed_path(used))
    print(summary_table(results))
    print(f"\nresults: {path}" + (f" (+{len(extra)} samples/run files)" if extra else ""))
    if args.hub_results_repo:
        from pqb.harness.reporting.hub import push_results

        out = Path(args.output_path)
        url = push_results(
            out.parent if names_a_file(out) else out,
            path,
            args.hub_results_repo,
            samples=[p for p in extra if p.suffix == ".jsonl"],
        )
        print(f"pushed: {url}")
    return 0
