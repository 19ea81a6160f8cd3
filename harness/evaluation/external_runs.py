"""Score TREC runs made by any system (Anserini, PyTerrier, the harness itself) as PQB tasks.

A run file holds ``qid Q0 docid rank score tag`` lines. PQB's query ids are the dataset rows' ``id``
(clean side) and ``<id>_error`` (the typo'd side of an error pair) — the ids the harness writes in
its own runs and ``qrels_<task>_<ts>.txt``. ``score --run all.trec,error.trec`` also accepts the error
side as a second file keyed by the plain row id, as a system run once on clean and once on typo'd
topics writes it.

Per query, documents are ordered by the file's rank column (ties by score, descending, then docid), the
order the system reported; trec_eval re-sorts by score instead, which agrees whenever ranks follow
scores. Where they do not, the queries are counted (``n_queries_ranks_against_scores``), noted, and
refused by ``--strict``. The target's rank is its position in that list; a target absent from the list, and a query
absent from every file, are unranked (no hit, RR 0): **a missing query counts as a miss** and the
results file counts them per task (``n_queries_missing_from_run``). A run shallower than
``rr_cutoff`` cannot reproduce MRR; the results record each file's minimum depth.

A run line whose document id is not in the task's corpus (another build, ids lower-cased, a doc id
of another domain) can never be a hit: such lines are counted per task (``n_run_docs_not_in_corpus``,
the first few as ``file:line``) and reported, ``score --strict`` refuses them, and a task none of whose
ranked documents is in the corpus is a :class:`DataError` (its Hit@K = 0 would read as "robust").

A task at a fixed error dose (``error_dose``) names its error side ``<id>_error<d>``
(:func:`pqb.harness.evaluation.pairs.error_side_suffix`): a run of the published ``<id>_error`` texts
(the personal dose) matches none of them, so it is never scored as the dosed task.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pqb.dataset.io import sha256_file
from pqb.dataset.schema import config_kind
from pqb.harness.errors import DataError
from pqb.harness.evaluation.evaluator import TaskData
from pqb.harness.evaluation.pairs import ERROR_SIDE_SUFFIX, error_side_suffix, is_error_side_id
from pqb.harness.evaluation.run_cache import RankEntry


@dataclass
class TrecRun:
    """Ranked document ids per query id, merged from one or two run files."""

    lists: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    where: dict[str, list[str]] = field(default_factory=dict)
    """``file:line`` of each document of ``lists``, so a bad document id is reported where it is."""
    files: list[dict[str, Any]] = field(default_factory=list)
    tag: str | None = None


def _text(path: Path) -> io.StringIO:
    """The run file as text lines (universal newlines); bytes that are not UTF-8 are a :class:`DataError`.

    A leading byte-order mark (Windows editors, PowerShell's ``Out-File``) is dropped: kept, it became part
    of the first line's query id, so that query's first document went to an id no task has and the query
    was scored without it (a hit at rank 1 read as a miss, with no note)."""
    try:
        return io.StringIO(path.read_bytes().decode("utf-8-sig"), newline=None)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: a TREC run file is UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _read_file(path: Path) -> dict[str, list[tuple[int, float, str, int]]]:
    """``{qid: [(rank, -score, docid, line number)]}``; a line repeated verbatim (runs of two tasks that
    share queries, concatenated) counts once, a document listed twice for a query with different ranks is
    an error."""
    by_q: dict[str, list[tuple[int, float, str, int]]] = {}
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
            by_q.setdefault(parts[0], []).append((rank, -score, parts[2], n))
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
            key = qid if role == "all" or is_error_side_id(qid) else f"{qid}{ERROR_SIDE_SUFFIX}"
            if key in run.lists:
                raise DataError(f"{path}: query {qid!r} is ranked in both run files; give each query once")
            items.sort()
            run.lists[key] = [d for _, _, d, _ in items]
            run.scores[key] = [-s for _, s, _, _ in items]
            run.where[key] = [f"{path}:{n}" for *_, n in items]
        if run.tag is None:
            with _text(path) as fh:
                first = fh.readline().split()
                run.tag = first[5] if len(first) == 6 else None
        depths = [len(v) for v in by_q.values()]
        run.files.append({"path": str(path), "role": role, "sha256": sha256_file(path), "n_queries": len(by_q),
                          "min_depth": min(depths) if depths else 0})  # fmt: skip
    return run


UNKNOWN_DOC_EXAMPLES = 5
"""How many run lines with a document id not in the corpus are named (``file:line``) per task."""


@dataclass
class RunMatch:
    """One task's queries looked up in a run: what the metrics get and what did not match."""

    entries: list[RankEntry]
    """Rank entry of every query of the task, in pair-set order."""
    n_missing: int = 0
    """Queries of the task absent from the run (counted as misses)."""
    n_docs_unknown: int = 0
    """Run lines of the task's queries whose document id is not in the corpus (never a hit)."""
    n_docs_known: int = 0
    """Run lines of the task's queries whose document id is in the corpus."""
    unknown_examples: list[str] = field(default_factory=list)
    """The first :data:`UNKNOWN_DOC_EXAMPLES` of them as ``file:line: document 'x'``."""
    n_shallow: int = 0
    """Ranked queries whose list is shorter than the task's largest K and lacks the target: their rank is
    unknown beyond the list, so Hit@K (Flip@K, Deg@K) at a K past the list reads them as misses."""
    min_depth: int | None = None
    """The shortest list among those queries."""
    n_against_scores: int = 0
    """Ranked queries whose rank column puts a document above one with a higher score. PQB orders by the
    rank column, trec_eval and ir_measures re-sort by score, so the two disagree on these queries."""


def run_entries(data: TaskData, run: TrecRun) -> RunMatch:
    """The rank entry of every query of ``data`` (pair-set order), with the queries absent from the run and
    the run lines whose document is not in the corpus counted (see the module docstring)."""
    pos = data.corpus.index_of
    match = RunMatch(entries=[])
    for qid, target in zip(data.pairs.query_ids, data.pairs.targets, strict=True):
        docs = run.lists.get(qid)
        if docs is None:
            match.n_missing += 1
            match.entries.append(
                RankEntry(float("inf"), False, np.empty(0, np.int64), np.empty(0, np.float32))
            )
            continue
        try:
            rank = float(docs.index(target) + 1)
        except ValueError:
            rank = float("inf")
            if len(docs) < max(data.cfg.k_values):
                match.n_shallow += 1
                match.min_depth = min(len(docs), match.min_depth or len(docs))
        scores = np.asarray(run.scores[qid])
        match.n_against_scores += bool(np.any(scores[1:] > scores[:-1]))  # in rank order (float64, as read)
        idx = np.asarray([pos.get(d, -1) for d in docs], dtype=np.int64)
        unknown = np.flatnonzero(idx < 0)
        match.n_docs_unknown += len(unknown)
        match.n_docs_known += len(idx) - len(unknown)
        for j in unknown[: UNKNOWN_DOC_EXAMPLES - len(match.unknown_examples)]:
            match.unknown_examples.append(f"{run.where[qid][j]}: document {docs[j]!r}")
        match.entries.append(RankEntry(rank, False, idx, scores.astype(np.float32)))
    return match


def same_sides_note(run: TrecRun) -> str | None:
    """A note when the two run files have the same bytes (``--run clean.trec,clean.trec``, or a copy).

    The error side is then the clean ranking, and Deg@K = MRRdeg = 0 [0, 0] reads as perfect robustness.
    A system that ranks every typo'd query exactly as its clean one writes the same bytes too, so this is a
    note (``--strict`` refuses), not an error."""
    if len(run.files) != 2 or run.files[0]["sha256"] != run.files[1]["sha256"]:
        return None
    return (f"note: the two run files {run.files[0]['path']} and {run.files[1]['path']} have the same bytes, so "
            "every typo'd query is scored with its clean ranking (Deg@K and MRRdeg 0 by construction); if that "
            "is not your system's output, give the run of the typo'd queries second")  # fmt: skip


def check_documents(task: str, data: TaskData, match: RunMatch, *, strict: bool = False) -> None:
    """Refuse a task whose run lines name no document of its corpus (nothing could ever be a hit, and
    Flip/Deg = 0 would read as perfect robustness) and, with ``strict``, any run line naming a document
    that is not in the corpus, or a query whose list ends before the largest K without the target."""
    if strict and match.n_shallow:
        raise DataError(f"--strict and {shallow_note(task, data, match).removeprefix('note: ')}")
    if strict and match.n_against_scores:
        raise DataError(f"--strict and {against_scores_note(task, data, match).removeprefix('note: ')}")
    if not match.n_docs_unknown:
        return
    what = (f"{match.n_docs_unknown} run line(s) of {task}'s queries name a document id that is not in its "
            f"corpus {data.cfg.corpus!r} ({len(data.corpus)} documents)")  # fmt: skip
    fix = ("score the run against the dataset build it was made on (--dataset_path), and keep the corpus's "
           "document ids exactly (case, prefixes)")  # fmt: skip
    if not match.n_docs_known:
        raise DataError(f"{what}, and none names one that is: {fix}", details=match.unknown_examples)
    if strict:
        raise DataError(f"--strict and {what}: {fix}", details=match.unknown_examples)


def unknown_docs_note(task: str, match: RunMatch) -> str:
    """The ``note:`` line for run lines whose document is not in the corpus (they count as non-hits)."""
    rest = match.n_docs_unknown - len(match.unknown_examples)
    more = f" (+{rest} more)" if rest else ""
    total = match.n_docs_unknown + match.n_docs_known
    return (f"note: {task}: {match.n_docs_unknown} of {total} run lines ({100 * match.n_docs_unknown / total:.1f}%) "
            f"name a document not in the corpus (never a hit; --strict refuses them): "
            f"{'; '.join(match.unknown_examples)}{more}")  # fmt: skip


def missing_note(task: str, data: TaskData, run: TrecRun, n_missing: int) -> str:
    """The ``note:`` line for queries absent from the run; for a task at a fixed error dose it says where
    the dosed texts come from, since the published ``<domain>-queries`` hold only the personal dose."""
    note = f"note: {task}: {n_missing} of {len(data.pairs.query_ids)} queries are not in the run; counted as misses"
    dose = data.cfg.error_dose
    if dose is None:
        return note
    suffix = error_side_suffix(dose)
    absent = [q for q in data.pairs.query_ids if q not in run.lists and q.endswith(suffix)]
    if not absent:
        return note
    personal = sum(1 for q in absent if f"{q.removesuffix(suffix)}{ERROR_SIDE_SUFFIX}" in run.lists)
    ranked = (f"; the run ranks {personal} of them as <row id>{ERROR_SIDE_SUFFIX}, the personal dose, which is "
              "another text and is not scored here") if personal else ""  # fmt: skip
    return (
        f"{note}. {len(absent)} of them are this task's {dose}-edit queries, <row id>{suffix} (the first {dose} "
        f"edits of each row's error_chain){ranked}. The published {config_kind(data.cfg.dataset_name)[0]}-queries hold only "
        f"the personal dose: take the {dose}-edit texts (query_id, query) from the samples file of "
        f"`pqb-harness run --tasks {task} --log_samples` (details/<model>/samples_{task}_<ts>.jsonl), or apply "
        f"each row's first {dose} error_chain edits (pqb.dataset.schema.apply_edits), and rank them under those ids"
    )


def against_scores_note(task: str, data: TaskData, match: RunMatch) -> str:
    """The ``note:`` line for queries whose rank column contradicts their scores."""
    return (f"note: {task}: {match.n_against_scores} of {len(data.pairs.query_ids)} queries rank a document above "
            "one with a higher score; PQB orders by the rank column, as the run reports it, where trec_eval and "
            "ir_measures re-sort by score, so their numbers differ on these queries (--strict refuses)")  # fmt: skip


def shallow_note(task: str, data: TaskData, match: RunMatch) -> str:
    """The ``note:`` line for queries whose list ends before the task's largest K without the target."""
    k = max(data.cfg.k_values)
    return (f"note: {task}: {match.n_shallow} of {len(data.pairs.query_ids)} queries have fewer than {k} documents "
            f"in the run (as few as {match.min_depth}) and not the target: Hit@K, Flip@K and Deg@K at K above "
            f"the list read them as misses (--strict refuses); write at least {k} documents per query")  # fmt: skip
