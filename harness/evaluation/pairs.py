"""Task rows → queries and the pairs the metrics compare (PQB's two pair designs), plus edit facts of error rows.

A module of its own, with numpy only, because both pair types (:mod:`pqb.harness.evaluation.pairtypes`)
and the evaluator need it, and neither should pull in ``datasets`` for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np

ERROR_SIDE_SUFFIX = "_error"
"""Query id of an error pair's typo'd side: ``<row id>_error`` (the clean side keeps the row id); a task at
a fixed dose (``error_dose``) appends the dose, ``<row id>_error3`` (:func:`error_side_suffix`)."""
_ERROR_SIDE_RE = re.compile(re.escape(ERROR_SIDE_SUFFIX) + r"[0-9]*$")


def error_side_suffix(dose: int | None = None) -> str:
    """``_error`` for the row's own error query (the published ``<domain>-queries`` ids), ``_error<d>``
    for the first ``d`` edits of its chain: the dosed text is another query, so it gets another id, and a
    run of the published ``_error`` texts can never be scored as the 3-edit task (it misses queries instead)."""
    return ERROR_SIDE_SUFFIX if dose is None else f"{ERROR_SIDE_SUFFIX}{dose}"


def is_error_side_id(query_id: str) -> bool:
    """Whether a query id names an error side (``<id>_error`` or a dosed ``<id>_error<d>``)."""
    return _ERROR_SIDE_RE.search(query_id) is not None


@dataclass(frozen=True)
class PairSet:
    """Queries of one task and how they pair up.

    ``queries[i]`` is a query text with ``targets[i]`` (an ASIN) and ``row_index[i]`` (its row);
    ``pair_a[j]``, ``pair_b[j]`` index ``queries`` for pair j. For error tasks side a is clean.
    """

    queries: tuple[str, ...]
    targets: tuple[str, ...]
    query_ids: tuple[str, ...]
    row_index: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_ids: tuple[str, ...]
    groups: tuple[str, ...]
    """Target ASIN per pair (for the authors' per-ASIN macro average)."""
    n_malformed: int = 0
    users: tuple[str, ...] = ()
    """User id per query (the ``user`` bootstrap unit)."""
    query_pair_ids: tuple[str, ...] = ()
    """Per query, the pair group it belongs to (syntactic: its ``pair_id``; error: its row id): the
    ``pair`` bootstrap unit of per-query metrics."""
    n_short_chain: int | None = None
    """Dosed error tasks only (``error_dose``): usable rows whose ``error_chain`` is shorter than the dose,
    so they have no error query at that dose and are not evaluated; ``None`` for every other task."""

    def subset(self, keep: Sequence[int] | np.ndarray) -> tuple[PairSet, list[int]]:
        """(the pairs ``keep`` with exactly the queries they use, the rows those queries come from).

        ``--limit`` selects pairs, not rows: every kept query belongs to a kept pair and every kept pair
        keeps both its queries, so no row is orphaned and no pair is half kept. Queries and rows stay in
        their order (an error task's clean side first), and the kept pairs are exactly ``keep`` (rebuilding
        pairs from the kept rows could add the other pairs of a larger ``pair_id`` group). Counts of rows
        that formed no pair (``n_malformed``, ``n_short_chain``) stay those of the whole task.
        """
        keep = np.sort(np.asarray(keep, dtype=np.int64))
        a, b = self.pair_a[keep], self.pair_b[keep]
        used = np.unique(np.concatenate([a, b]))
        position = np.full(len(self.queries), -1, dtype=np.int64)
        position[used] = np.arange(len(used))
        rows = sorted({int(r) for r in self.row_index[used]})
        row_position = {r: i for i, r in enumerate(rows)}

        def pick(values: tuple) -> tuple:
            return tuple(values[i] for i in used) if values else ()

        limited = replace(
            self,
            queries=pick(self.queries),
            targets=pick(self.targets),
            query_ids=pick(self.query_ids),
            row_index=np.asarray([row_position[int(r)] for r in self.row_index[used]], dtype=np.int64),
            pair_a=position[a],
            pair_b=position[b],
            pair_ids=tuple(self.pair_ids[j] for j in keep),
            groups=tuple(self.groups[j] for j in keep),
            users=pick(self.users),
            query_pair_ids=pick(self.query_pair_ids),
        )
        return limited, rows


def _usable(row: dict[str, Any]) -> bool:
    return bool((row.get("query") or "").strip()) and bool(row.get("asin"))


def syntactic_pairs(rows: Sequence[dict[str, Any]]) -> PairSet:
    """Every row is a query; pairs are all unordered cross-user pairs of rows sharing ``pair_id``."""
    good = [i for i, r in enumerate(rows) if _usable(r)]
    by_pair: dict[str, list[int]] = {}
    for pos, i in enumerate(good):
        by_pair.setdefault(rows[i]["pair_id"], []).append(pos)
    a, b, pids, groups = [], [], [], []
    for pid in sorted(by_pair):
        for x, y in combinations(by_pair[pid], 2):
            if rows[good[x]]["user_id"] != rows[good[y]]["user_id"]:
                a.append(x), b.append(y), pids.append(pid), groups.append(rows[good[x]]["asin"])
    return PairSet(
        queries=tuple(rows[i]["query"] for i in good),
        targets=tuple(rows[i]["asin"] for i in good),
        query_ids=tuple(rows[i]["id"] for i in good),
        row_index=np.asarray(good, dtype=np.int64),
        pair_a=np.asarray(a, dtype=np.int64),
        pair_b=np.asarray(b, dtype=np.int64),
        pair_ids=tuple(pids),
        groups=tuple(groups),
        n_malformed=len(rows) - len(good),
        users=tuple(str(rows[i]["user_id"]) for i in good),
        query_pair_ids=tuple(str(rows[i]["pair_id"]) for i in good),
    )


def error_pairs(rows: Sequence[dict[str, Any]], *, dose: int | None = None) -> PairSet:
    """Rows with a non-null ``error_query``: queries are [clean..., error...]; pair j = (j, n + j).

    ``dose``: the rows were re-dosed by :func:`dosed_rows`; error-side ids then carry the dose
    (:func:`error_side_suffix`) and usable rows whose chain was too short are counted in ``n_short_chain``
    (the task promises skipped rows are counted, never silently dropped).
    """
    good = [i for i, r in enumerate(rows) if _usable(r) and r.get("error_query") is not None]
    malformed = sum(
        1
        for r in rows
        if not _usable(r) or (r.get("error_query") is not None and not r["error_query"].strip())
    )
    good = [i for i in good if rows[i]["error_query"].strip()]
    n = len(good)
    clean = [rows[i]["query"] for i in good]
    err = [rows[i]["error_query"] for i in good]
    targets = tuple(rows[i]["asin"] for i in good)
    ids = [rows[i]["id"] for i in good]
    suffix = error_side_suffix(dose)
    short = None if dose is None else sum(1 for r in rows if _usable(r) and short_chain(r, dose))
    return PairSet(
        queries=tuple(clean + err),
        targets=targets + targets,
        query_ids=tuple(ids + [f"{i}{suffix}" for i in ids]),
        row_index=np.asarray(good + good, dtype=np.int64),
        pair_a=np.arange(n, dtype=np.int64),
        pair_b=np.arange(n, 2 * n, dtype=np.int64),
        pair_ids=tuple(ids),
        groups=targets,
        n_malformed=malformed,
        users=tuple(str(rows[i]["user_id"]) for i in good) * 2,
        query_pair_ids=tuple(ids + ids),
        n_short_chain=short,
    )


def edit_count(row: dict[str, Any]) -> int | None:
    """Number of recorded edits of an error row; ``None`` when the row has an error query but no edits
    (unknown, e.g. an import whose edits could not be recovered) — never silently 0."""
    edits = row.get("error_edits") or []
    return len(edits) if edits or row.get("error_query") is None else None


def short_chain(row: dict[str, Any], dose: int) -> bool:
    """Whether a row's ``error_chain`` has fewer than ``dose`` edits (no error query at that dose)."""
    return len(row.get("error_chain") or []) < dose


def dosed_rows(rows: Sequence[dict[str, Any]], dose: int) -> list[dict[str, Any]]:
    """Rows re-dosed to the first ``dose`` edits of their ``error_chain``: ``error_query`` and
    ``error_edits`` replaced; rows without a chain that long get ``error_query = None`` (not evaluated;
    ``error_pairs(..., dose=dose)`` counts them as ``n_short_chain``)."""
    from pqb.dataset.schema import apply_edits

    out = []
    for r in rows:
        chain = list(r.get("error_chain") or [])
        if not short_chain(r, dose):
            edits = chain[:dose]
            out.append({**r, "error_query": apply_edits(r["query"], edits), "error_edits": edits})
        else:
            out.append({**r, "error_query": None, "error_edits": []})
    return out


EDIT_FIELDS: tuple[str, ...] = ("mechanism", "location", "position")
"""The ``error_edits`` fields the error breakdown groups by (a pair counts once under each value its
edits take; ``unknown`` for edits without one, e.g. a position in a schema-1.1 dataset)."""


def edit_values(row: dict[str, Any], field: str) -> list[str]:
    """Distinct values of ``field`` over a row's edits, sorted (``unknown`` where an edit has none)."""
    return sorted({str(e.get(field) or "unknown") for e in (row.get("error_edits") or [])})
