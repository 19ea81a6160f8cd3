"""Score TREC runs made by any system (Anserini, PyTerrier, the harness itself) as PQB tasks.

A run file holds ``qid Q0 docid rank score tag`` lines. PQB's query ids are the dataset rows' ``id``
(clean side) and ``<id>_error`` (the typo'd side of an error pair) — the ids the harness writes in
its own runs and ``qrels_<task>_<ts>.txt``. ``score --run all.trec,error.trec`` also accepts the error
side as a second file keyed by the plain row id, as a system run once on clean and once on typo'd
topics writes it.

Per query, documents are ordered by the file's rank column (ties by score, descending, then docid), the
order the system reported; trec_eval re-sorts by score instead, which agrees whenever ranks follow
scores. The target's rank is its position in that list; a target absent from the list, and a query
absent from every file, are unranked (no hit, RR 0): **a missing query counts as a miss** and the
results file counts them per task (``n_queries_missing_from_run``). A run shallower than
``rr_cutoff`` cannot reproduce MRR; the results record each file's minimum depth.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pqb.dataset.io import sha256_file
from pqb.harness.errors import DataError
from pqb.harness.evaluation.evaluator import TaskData
from pqb.harness.evaluation.pairs import ERROR_SIDE_SUFFIX
from pqb.harness.evaluation.run_cache import RankEntry


@dataclass
class TrecRun:
    """Ranked document ids per query id, merged from one or two run files."""

    lists: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)
    tag: str | None = None


def _text(path: Path) -> io.StringIO:
    """The run file as text lines (universal newlines); bytes that are not UTF-8 are a :class:`DataError`."""
    try:
        return io.StringIO(path.read_bytes().decode("utf-8"), newline=None)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: a TREC run file is UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _read_file(path: Path) -> dict[str, list[tuple[int, float, str]]]:
    """``{qid: [(rank, -score, docid)]}``; a line repeated verbatim (runs of two tasks that share queries,
    concatenated) counts once, a document listed twice for a query with different ranks is an error."""
    by_q: dict[str, list[tuple[int, float, str]]] = {}
    seen: dict[tuple[str, str], tuple[int, float]] = {}
    with _text(path) as fh:
        for n, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise DataError(
                    f"{path}:{n}: a TREC run line has 6 fields (qid Q0 docid rank score tag), got {len(parts)}"
                )
            try:
                rank, score = int(parts[3]), float(parts[4])
            except ValueError:
                raise DataError(
                    f"{path}:{n}: rank must be an integer and score a number: {line.strip()!r}"
                ) from None
            if score != score:  # NaN orders nowhere: the query's documents would rank arbitrarily
                raise DataError(f"{path}:{n}: score is NaN: {line.strip()!r}")
            key = (parts[0], parts[2])
            if key in seen:
                if seen[key] != (rank, score):
                    raise DataError(
                        f"{path}:{n}: document {parts[2]!r} is listed twice for query {parts[0]!r}"
                    )
                continue
            seen[key] = (rank, score)
            by_q.setdefault(parts[0], []).append((rank, -score, parts[2]))
    return by_q


def read_runs(paths: Sequence[Path]) -> TrecRun:
    """One or two run files: the first holds any queries, the second (if given) the error side."""
    if not 1 <= len(paths) <= 2:
        raise DataError(f"--run takes one file or two (all queries, error side), got {len(paths)}")
    run = TrecRun()
    for role, path in zip(("all", "error side"), paths, strict=False):
        path = Path(path)
        if not path.is_file():
            raise DataError(f"run file {path} does not exist")
        by_q = _read_file(path)
        for qid, items in by_q.items():
            key = qid if role == "all" or qid.endswith(ERROR_SIDE_SUFFIX) else f"{qid}{ERROR_SIDE_SUFFIX}"
            if key in run.lists:
                raise DataError(f"{path}: query {qid!r} is ranked in both run files; give each query once")
            items.sort()
            run.lists[key] = [d for _, _, d in items]
            run.scores[key] = [-s for _, s, _ in items]
        if run.tag is None:
            with _text(path) as fh:
                first = fh.readline().split()
                run.tag = first[5] if len(first) == 6 else None
        depths = [len(v) for v in by_q.values()]
        run.files.append({"path": str(path), "role": role, "sha256": sha256_file(path), "n_queries": len(by_q),
                          "min_depth": min(depths) if depths else 0})  # fmt: skip
    return run


def run_entries(data: TaskData, run: TrecRun) -> tuple[list[RankEntry], int]:
    """(rank entry of every query of ``data`` in pair-set order, number of queries absent from the run)."""
    pos = {d: i for i, d in enumerate(data.corpus.ids)}
    entries, missing = [], 0
    for qid, target in zip(data.pairs.query_ids, data.pairs.targets, strict=True):
        docs = run.lists.get(qid)
        if docs is None:
            missing += 1
            entries.append(RankEntry(float("inf"), False, np.empty(0, np.int64), np.empty(0, np.float32)))
            continue
        try:
            rank = float(docs.index(target) + 1)
        except ValueError:
            rank = float("inf")
        idx = np.asarray([pos.get(d, -1) for d in docs], dtype=np.int64)
        entries.append(RankEntry(rank, False, idx, np.asarray(run.scores[qid], dtype=np.float32)))
    return entries, missing
