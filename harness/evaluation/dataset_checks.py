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


# -- the BEIR/MTEB views ---------------------------------------------------------------------------------

VIEW_EXAMPLES = 5
"""Offending ids named per violated rule of the retrieval views."""


def _first(ids: list[str]) -> str:
    more = f" (+{len(ids) - VIEW_EXAMPLES} more)" if len(ids) > VIEW_EXAMPLES else ""
    return f"{ids[:VIEW_EXAMPLES]}{more}"


def _repeats(items: list[Any]) -> list[int]:
    """Indices of the items that repeat an earlier one."""
    seen: set[Any] = set()
    out = []
    for i, x in enumerate(items):
        if x in seen:
            out.append(i)
        seen.add(x)
    return out


def check_retrieval_views(
    domain: str, corpus: CorpusCheck, queries_ds: Any, qrels_ds: Any
) -> ValidationReport:
    """Violations of a domain's BEIR/MTEB views ``<domain>-queries`` and ``<domain>-qrels`` against its corpus.

    ``export-beir`` and MTEB read these views as they are: a duplicate query id or (query, document) qrel
    silently collapses (BEIR keeps one text/relevance per key), a qrel to a document outside the corpus
    can never be retrieved and one to a query outside ``-queries`` is never asked, and a query without
    a qrel scores as a miss (or is dropped, depending on the reader). Each rule is one violation naming
    how many and the first offending ids, at the row of the first one.
    """
    q_name, r_name = f"{domain}-queries", f"{domain}-qrels"
    report = ValidationReport()
    report.extend(corpus.report)
    for ds, kind, name in ((queries_ds, "queries", q_name), (qrels_ds, "qrels", r_name)):
        report.extend(validate_table(ds.data.table, kind, name))
        _check_not_empty(report, ds, name)
    if any(v.rule == "missing_column" for v in report.violations):
        return report
    qids = [str(q) for q in column(queries_ds, "id")]
    rel_q = [str(q) for q in column(qrels_ds, "query-id")]
    rel_d = [str(d) for d in column(qrels_ds, "corpus-id")]
    report.checked["queries"] += len(qids)
    report.checked["qrels"] += len(rel_q)

    def add(name: str, rows: list[int], rule: str, what: str, ids: list[str]) -> None:
        if rows:
            report.add(name, rows[0], rule, f"{len(rows)} {what}, e.g. {_first(ids)}")

    dup = _repeats(qids)
    add(q_name, dup, "duplicate_query_id", "duplicate query id(s)", [qids[i] for i in dup])
    dup = _repeats(list(zip(rel_q, rel_d, strict=True)))
    add(r_name, dup, "duplicate_qrel", "duplicate (query-id, corpus-id) qrel(s)",
        [f"{rel_q[i]} -> {rel_d[i]}" for i in dup])  # fmt: skip
    if corpus.ids is not None:
        bad = [i for i, d in enumerate(rel_d) if d not in corpus.ids]
        add(r_name, bad, "qrel_unknown_document", f"qrel(s) to a document not in {domain}-corpus",
            [f"{rel_q[i]} -> {rel_d[i]}" for i in bad])  # fmt: skip
    known = set(qids)
    bad = [i for i, q in enumerate(rel_q) if q not in known]
    add(r_name, bad, "qrel_unknown_query", f"qrel(s) to a query not in {q_name}", [rel_q[i] for i in bad])
    judged = set(rel_q)
    bad = [i for i, q in enumerate(qids) if q not in judged]
    add(q_name, bad, "query_without_qrels", f"query(ies) without a qrel in {r_name}", [qids[i] for i in bad])
    return report


def load_checked_views(path: str, domain: str, revision: str | None = None) -> tuple[Any, Any, Any]:
    """``(corpus, queries, qrels)`` datasets of a domain's retrieval views, after
    :func:`check_retrieval_views`: any violation raises :class:`DatasetInvalidError` listing them, so no
    BEIR folder or MTEB task is built from views that break them."""
    from pqb.harness.errors import DatasetInvalidError
    from pqb.harness.evaluation.data import load_config

    corpus_ds = load_config(path, f"{domain}-corpus", split=None, revision=revision)
    queries_ds = load_config(path, f"{domain}-queries", split=None, revision=revision)
    qrels_ds = load_config(path, f"{domain}-qrels", split=None, revision=revision)
    report = check_retrieval_views(domain, check_corpus(corpus_ds, f"{domain}-corpus"), queries_ds, qrels_ds)
    if not report.ok:
        raise DatasetInvalidError(
            f"{path}: the retrieval views of {domain!r} have {len(report.violations)} violation(s) "
            f"{dict(sorted(report.by_rule().items()))}, the first: {report.violations[0]}; nothing is built "
            "from them. Rebuild the views (pqb-build) or fix the files (pqb-harness validate prints the same report)",
            details=violation_lines(report),
        )
    return corpus_ds, queries_ds, qrels_ds
