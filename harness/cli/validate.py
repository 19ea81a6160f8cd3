"""``pqb-harness validate``: check task YAMLs and, where the data is present, the dataset itself."""

from __future__ import annotations

import argparse

from pqb.dataset.argtypes import non_negative_int
from pqb.harness.errors import DatasetNotFoundError

HELP = "Validate task configs and the datasets they point at (schema + PQB invariants, BEIR/MTEB views)."
EPILOG = """examples:
  pqb-harness validate --tasks pqb
  pqb-harness validate --tasks pqb_error_video_games --dataset_path ./pqb_dataset
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", default="pqb", help="comma list of tasks, groups or tags")
    p.add_argument("--include_path", action="append", default=[], help="extra folder of task YAMLs")
    p.add_argument(
        "--dataset_path", default=None, help="local dataset folder or Hub id overriding the tasks'"
    )
    p.add_argument("--max_lines", type=non_negative_int, default=20, help="violations printed per dataset")


def _check_dataset(
    path: str,
    rows_name: str,
    corpus_name: str,
    split: str,
    revision: str | None,
    max_lines: int,
    split_from: str = "",
) -> tuple[bool, list[dict] | None]:
    """(no violation, the rows when they pass) of one rows config and its corpus, report printed."""
    from pqb.harness.evaluation.data import load_config
    from pqb.harness.evaluation.dataset_checks import check_task_dataset

    rows_ds = load_config(path, rows_name, split=split, revision=revision, split_from=split_from)
    try:
        corpus_ds, missing = load_config(path, corpus_name, split=None, revision=revision), ""
    except DatasetNotFoundError as exc:
        corpus_ds, missing = None, str(exc)
    report = check_task_dataset(rows_ds, rows_name, corpus_ds, corpus_name, corpus_missing=missing)
    print(f"== {path} :: {rows_name} (+ {corpus_name})\n{report.summary(max_lines)}")
    return report.ok, (rows_ds.to_list() if report.ok else None)


def _check_pairs(task: object, rows: list[dict] | None, max_lines: int) -> bool:
    """The pairs ``run`` would evaluate for this task exist (a 0-pair task fails both commands)."""
    from pqb.harness.evaluation.dataset_checks import check_task_pairs
    from pqb.harness.evaluation.evaluator import task_pairs

    if rows is None:
        return True  # the config's own violations are reported already
    report = check_task_pairs(task.task, task.dataset_name, len(task_pairs(task, rows)[1].pair_a))  # type: ignore[attr-defined]
    if not report.ok:
        print(f"-- {task.task}:\n{report.summary(max_lines)}")  # type: ignore[attr-defined]
    return report.ok


def _check_views(path: str, domain: str, revision: str | None, max_lines: int) -> bool:
    """The domain's BEIR/MTEB views (``-queries``, ``-qrels``) against its corpus, as ``export-beir`` and
    the MTEB tasks require them (:func:`~pqb.harness.evaluation.dataset_checks.check_retrieval_views`)."""
    from pqb.harness.evaluation.data import load_config
    from pqb.harness.evaluation.dataset_checks import check_corpus, check_retrieval_views

    try:
        corpus_ds, queries_ds, qrels_ds = (
            load_config(path, f"{domain}-{kind}", split=None, revision=revision)
            for kind in ("corpus", "queries", "qrels")
        )
    except DatasetNotFoundError as exc:
        print(f"-- {domain}: retrieval views not present, not checked ({exc})")
        return True
    report = check_retrieval_views(domain, check_corpus(corpus_ds, f"{domain}-corpus"), queries_ds, qrels_ds)
    print(f"== {path} :: {domain}-queries + {domain}-qrels (+ {domain}-corpus)\n{report.summary(max_lines)}")
    return report.ok


def run(args: argparse.Namespace) -> int:
    from pqb.dataset.schema import config_kind
    from pqb.harness.evaluation.task_registry import TaskRegistry, split_task_list

    reg = TaskRegistry(args.include_path)
    names, _ = reg.resolve(split_task_list(args.tasks))
    print(f"task configs OK: {len(reg.tasks)} tasks, {len(reg.groups)} groups")
    seen: dict[tuple, list[dict] | None] = {}
    ok = True
    for name in names:
        c = reg.tasks[name]
        path = args.dataset_path or c.resolved_dataset_path()
        key = (path, c.dataset_name, c.corpus)
        if key not in seen:
            try:
                good, seen[key] = _check_dataset(
                    path,
                    c.dataset_name,
                    c.corpus,
                    c.test_split,
                    c.dataset_revision,
                    args.max_lines,
                    c.location("test_split"),
                )
                ok &= good
            except DatasetNotFoundError as exc:
                seen[key] = None
                print(f"-- {name}: dataset not present, not checked ({exc})")
        ok &= _check_pairs(c, seen[key], args.max_lines)
    views = sorted({(args.dataset_path or c.resolved_dataset_path(), config_kind(c.dataset_name)[0], c.dataset_revision)
                    for c in (reg.tasks[n] for n in names)}, key=str)  # fmt: skip
    for path, domain, revision in views:
        ok &= _check_views(path, domain, revision, args.max_lines)
    return 0 if ok else 1
