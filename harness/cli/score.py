"""``pqb-harness score --run run.trec[,run_error.trec] --tasks ...``: every PQB metric from TREC runs."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from pqb.dataset.argtypes import bootstrap_iters, non_negative_int, row_limit
from pqb.harness.cli.argtypes import add_bootstrap_unit, bootstrap_note

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
        "--limit", type=row_limit, default=None,
        help="the first N (>= 1) rows of each task, or a share in (0, 1): that fraction of them, a seeded sample"
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
    from pqb.harness.cli.run import bootstrap_config, resolve_tasks
    from pqb.harness.errors import DataError
    from pqb.harness.evaluation.evaluator import (
        EvaluationOutput,
        ScoreOptions,
        _finish_task,
        load_tasks,
        skipped_note,
    )
    from pqb.harness.evaluation.external_runs import (
        against_scores_note,
        check_documents,
        missing_note,
        read_runs,
        run_entries,
        same_sides_note,
        shallow_note,
        unknown_docs_note,
    )
    from pqb.harness.evaluation.results import (
        build_results,
        lm_eval_model_fields,
        summary_table,
        timestamp,
        write_results,
    )
    from pqb.harness.evaluation.resume import resume_inputs

    started, stamp = time.time(), timestamp()
    if note := bootstrap_note(args.bootstrap_iters):
        print(note, file=sys.stderr)
    trec = read_runs([Path(p.strip()) for p in args.run.split(",") if p.strip()])
    if note := same_sides_note(trec):
        if args.strict:
            raise DataError(f"--strict and {note.removeprefix('note: ')}")
        print(note, file=sys.stderr)
    name = args.name or trec.tag or "external"
    registry, tasks, groups = resolve_tasks(args)
    loaded, skipped = load_tasks(tasks, args.dataset_path, args.limit)
    if skipped:  # one line for all (a dataset built for some domains lacks the others by design)
        print(skipped_note(skipped), file=sys.stderr)
    if not loaded:
        raise DataError(f"no task could be scored; skipped: {skipped}")
    if args.strict and skipped:
        raise DataError(f"--strict and {len(skipped)} task(s) skipped: {skipped}")
    opts = ScoreOptions(
        args.bootstrap_iters, args.seed, args.bootstrap_unit, args.log_samples, name, ties_known=False
    )
    output = EvaluationOutput(skipped=skipped)
    missing: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for task, data in sorted(loaded.items()):
        match = run_entries(data, trec)
        check_documents(task, data, match, strict=args.strict)
        missing[task], unknown[task] = match.n_missing, match.n_docs_unknown
        output.outcomes[task] = _finish_task(data, match.entries, opts, {
            "n_queries_missing_from_run": match.n_missing, "n_run_docs_not_in_corpus": match.n_docs_unknown,
            "n_queries_shallower_than_k": match.n_shallow,
            "n_queries_ranks_against_scores": match.n_against_scores})  # fmt: skip
        if match.n_shallow:
            print(shallow_note(task, data, match), file=sys.stderr)
        if match.n_against_scores:
            print(against_scores_note(task, data, match), file=sys.stderr)
        if match.n_missing:
            print(missing_note(task, data, trec, match.n_missing), file=sys.stderr)
        if match.n_docs_unknown:
            print(unknown_docs_note(task, match), file=sys.stderr)
    settings = {"run_files": [f["sha256"] for f in trec.files]}
    keys = {t: resume_inputs(d, model=name, model_settings=settings, limit=args.limit, n_boot=args.bootstrap_iters,
                             seed=args.seed, unit=args.bootstrap_unit) for t, d in loaded.items()}  # fmt: skip
    config: dict[str, Any] = {
        "model": name, "model_kwargs": {}, "model_info": {"name": name, "external_run": True},
        **lm_eval_model_fields(name, {}, {}),
        "seeds": {"bootstrap": args.seed}, "limit": args.limit, "device": None, "batch_size": None,
        "bootstrap": bootstrap_config(args),
        "external_run": {"files": trec.files, "missing_query": "counted as a miss: unranked, no hit, RR 0",
                         "named_by": "--name" if args.name else "run tag" if trec.tag else "default",
                         "n_queries_missing": missing,
                         "unknown_document": "a run line whose document is not in the corpus: never a hit; "
                                             "counted, refused under --strict",
                         "n_docs_not_in_corpus": unknown},
    }  # fmt: skip
    results = build_results(output, registry=registry, groups=groups, config=config, started=started,
                            finished=time.time(), resume=keys)  # fmt: skip
    path, extra = write_results(
        results, Path(args.output_path), name, output.outcomes, args.log_samples, stamp=stamp
    )
    print(summary_table(results))
    print(f"\nresults: {path}" + (f" (+{len(extra)} samples/run files)" if extra else ""))
    return 0
