"""The dataset checks ``pqb-harness validate`` prints and ``pqb-harness run`` enforces: one function.

:func:`check_task_dataset` applies the schema (:func:`pqb.dataset.schema.validate_table`), PQB's row
invariants (:func:`pqb.dataset.schema.check_rows`) and two rules the evaluator itself depends on: a
config is not empty, and in a built (non-release) rows config every ``pair_id`` has at least two
rows (a one-row pair silently contributes no syntactic pair). The authors' release legitimately
has one-record ASINs, so it is exempt, as it is from the core-term rules.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pqb.dataset.schema import ValidationReport, check_rows, config_kind, validate_table
from pqb.harness.evaluation.data import column


@dataclass(frozen=True)
class CorpusCheck:
    """The violations of a corpus config and its document ids (``None``: not loaded, or no ``id``).

    Computed once per corpus, so that tasks sharing a corpus neither re-validate it nor keep its
    Arrow table alive once the :class:`Corpus` is built."""

    report: ValidationReport
    ids: frozenset[str] | None


def check_corpus(corpus_ds: Any | None, corpus_name: str, *, missing: str = "") -> CorpusCheck:
    """Violations of a corpus config; ``corpus_ds=None`` with a ``missing`` reason is one violation."""
    report = ValidationReport()
    ids = None
    if corpus_ds is not None:
        report.extend(validate_table(corpus_ds.data.table, "corpus", corpus_name))
        _check_not_empty(report, corpus_ds, corpus_name)
        _check_some_text(report, corpus_ds, corpus_name)
        if "id" in corpus_ds.column_names:
            id_list = column(corpus_ds, "id")
            ids = frozenset(id_list)
            if len(ids) != len(id_list):  # run's corpus builder refuses them; validate says so too
                dup = sorted(i for i, n in Counter(id_list).items() if n > 1)
                report.add(corpus_name, None, "duplicate_id",
                           f"{len(id_list) - len(ids)} duplicate document id(s), e.g. {dup[:5]}")  # fmt: skip
    elif missing:
        report.add(corpus_name, None, "missing_corpus", missing)
    return CorpusCheck(report, ids)


def check_rows_config(rows_ds: Any, rows_name: str, corpus: CorpusCheck) -> ValidationReport:
    """Every violation of a task's rows config, after its corpus's (``corpus`` from :func:`check_corpus`).

    Row invariants are checked only when the rows table has its schema's columns, so a missing
    column is one clear violation instead of a ``KeyError``."""
    release = config_kind(rows_name)[1] == "release"
    report = ValidationReport()
    report.extend(validate_table(rows_ds.data.table, "release" if release else "rows", rows_name))
    _check_not_empty(report, rows_ds, rows_name)
    report.extend(corpus.report)
    if any(v.rule == "missing_column" and v.config == rows_name for v in report.violations):
        return report
    rows = rows_ds.to_list()
    report.extend(
        check_rows(
            rows, config=rows_name, require_core_terms=not release, corpus_ids=corpus.ids, release=release
        )
    )
    if not release:
        _check_complete_pairs(report, rows, rows_name)
    return report


def check_task_dataset(
    rows_ds: Any, rows_name: str, corpus_ds: Any | None, corpus_name: str, *, corpus_missing: str = ""
) -> ValidationReport:
    """Every violation of a task's rows config and its corpus (``corpus_ds=None``: not loaded)."""
    return check_rows_config(rows_ds, rows_name, check_corpus(corpus_ds, corpus_name, missing=corpus_missing))


def check_task_pairs(task: str, rows_name: str, n_pairs: int) -> ValidationReport:
    """A task whose rows give no pair of its type (e.g. an error task on rows without typos) has no
    metric to report: a violation in validate and run alike, not an empty result with exit 0."""
    report = ValidationReport()
    if n_pairs == 0:
        report.add(rows_name, None, "no_pairs", f"task {task!r} has 0 pairs in this config")
    return report


def _check_some_text(report: ValidationReport, ds: Any, name: str) -> None:
    """A corpus whose documents are all empty ranks nothing: every target ties with every document.
    It is a violation (it once reached BM25's index builder as an ``IndexError``)."""
    fields = [f for f in ("title", "text") if f in ds.column_names]
    if len(ds) and fields and not any((v or "").strip() for f in fields for v in column(ds, f)):
        report.add(name, None, "empty_documents", f"all {len(ds)} documents have an empty title and text")


def _check_not_empty(report: ValidationReport, ds: Any, name: str) -> None:
    if len(ds) == 0:
        report.add(name, None, "empty_config", "the config has 0 rows")


def _check_complete_pairs(report: ValidationReport, rows: list[dict[str, Any]], name: str) -> None:
    first: dict[str, int] = {}
    count: dict[str, int] = {}
    for i, r in enumerate(rows):
        first.setdefault(r["pair_id"], i)
        count[r["pair_id"]] = count.get(r["pair_id"], 0) + 1
    for pid, n in count.items():
        if n < 2:
            report.add(
                name, first[pid], "pair_singleton", f"pair {pid!r} has 1 row; a syntactic pair needs 2"
            )


def violation_lines(report: ValidationReport, max_lines: int = 50) -> list[str]:
    """The first ``max_lines`` violations as lines, plus a ``... N more`` line when cut."""
    lines = [str(v) for v in report.violations[:max_lines]]
    if len(report.violations) > max_lines:
        lines.append(f"... {len(report.violations) - max_lines} more")
    return lines
