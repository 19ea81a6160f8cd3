"""Evaluate one retriever on a list of tasks: load data, rank each distinct query once, score metrics.

Flow (each step one short function)::

    load_tasks          rows + corpus of every task, validated (dataset_checks) before any
                        ranking; absent configs are recorded skips, violations stop the run
    rank per task       tasks ordered by corpus: one index per (model, corpus), built lazily and
                        cached on disk; run cache first, then chunked scoring
    compute_task        per-pair/per-query metric arrays -> means, bootstrap CIs, breakdowns, samples
    on_task             called as each task finishes, so the caller can checkpoint it

Scores are computed ``chunk`` queries at a time, so an (n_queries × n_docs) matrix never exists
for a large corpus.
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pqb.dataset import settings
from pqb.dataset.io import stable_hash
from pqb.dataset.progress import bar
from pqb.dataset.schema import ValidationReport
from pqb.harness.errors import DataError, DatasetInvalidError, DatasetNotFoundError, TaskConfigError
from pqb.harness.evaluation import metrics as M
from pqb.harness.evaluation.bootstrap import DEFAULT_UNIT, bootstrap_design, percentile_ci
from pqb.harness.evaluation.data import (
    CARD_RETRIES,
    card_generation,
    config_names,
    corpus_from_dataset,
    load_config,
    require_card,
)
from pqb.harness.evaluation.dataset_checks import (
    CorpusCheck,
    check_corpus,
    check_rows_config,
    check_task_pairs,
    violation_lines,
)
from pqb.harness.evaluation.design import derive, effective_unit, task_design
from pqb.harness.evaluation.pairs import EDIT_FIELDS, PairSet, dosed_rows, edit_count, edit_values
from pqb.harness.evaluation.ranking import ranks_from_lists, target_ranks
from pqb.harness.evaluation.run_cache import RankEntry, RunCache
from pqb.harness.evaluation.task_registry import TaskConfig
from pqb.harness.retrievers.base import MAX_SCORE_CELLS, Corpus, Retriever, apply_cutoff, topk_stable

log = logging.getLogger(__name__)


@dataclass
class TaskData:
    cfg: TaskConfig
    rows: list[dict[str, Any]]
    pairs: PairSet
    dataset_path: str
    fingerprint: str
    """Content hash of every column of the evaluated rows (after ``limit``)."""
    corpus: Corpus


@dataclass
class TaskOutcome:
    """Everything the results writer needs about one task."""

    cfg: TaskConfig
    metrics: dict[str, float]
    ci: dict[str, tuple[float, float]]
    replicates: dict[str, np.ndarray]
    counts: dict[str, int]
    breakdown: dict[str, Any] | None
    samples: list[dict[str, Any]]
    trec: list[str]
    dataset: dict[str, Any]
    unit: str = DEFAULT_UNIT
    """The bootstrap unit the CIs resampled."""
    ranks: np.ndarray | None = None
    """Rank of every query's target (``inf`` = unranked), in ``query_ids`` order: kept in the results
    file so ``compare`` can pair two systems query by query."""
    query_ids: list[str] = field(default_factory=list)
    qrels: list[str] = field(default_factory=list)


@dataclass
class EvaluationOutput:
    outcomes: dict[str, TaskOutcome] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)


# -- data -----------------------------------------------------------------------------------------------


def load_tasks(
    tasks: Sequence[TaskConfig],
    dataset_path: str | None = None,
    limit: int | float | None = None,
    *,
    _attempt: int = 1,
) -> tuple[dict[str, TaskData], dict[str, str]]:
    """(task data, skipped tasks with the reason) for ``tasks``; nothing is ranked yet.

    Every rows config and corpus is validated with :mod:`~pqb.harness.evaluation.dataset_checks` (the ``validate``
    checks) on its full content, before ``limit`` selects pairs; any violation in any task raises
    :class:`DatasetInvalidError` listing them all, so nothing is evaluated on broken data. A dataset
    unreachable as a whole stops the run; an absent config is a recorded skip. When a publish replaced
    a local folder's card meanwhile (:func:`~pqb.harness.evaluation.data.card_generation`), the tasks are
    loaded again, so no task pairs rows of one build with the corpus of the next.
    """
    paths = sorted({(dataset_path or c.resolved_dataset_path(), c.dataset_revision) for c in tasks}, key=str)
    generations = {path: card_generation(path) for path, _ in paths}
    for path, rev in paths:
        require_card(path)
        try:
            config_names(path, rev, strict=True)
        except DataError:  # the card named shards a publish has just replaced
            if _attempt < CARD_RETRIES and card_generation(path) != generations[path]:
                return load_tasks(tasks, dataset_path, limit, _attempt=_attempt + 1)
            raise
    loader = _CheckedLoader()
    loaded: dict[str, TaskData] = {}
    skipped: dict[str, str] = {}
    for cfg in bar(tasks, desc="loading tasks", unit="task", leave=False, dynamic_ncols=True):
        path = dataset_path or cfg.resolved_dataset_path()
        try:
            got = loader.load(cfg, path)
        except DatasetNotFoundError as exc:
            log.debug("skipping %s: %s", cfg.task, exc)
            skipped[cfg.task] = str(exc)
            continue
        if got is not None:  # a task without pairs is a dataset fault; a --limit never makes one
            loaded[cfg.task], n_pairs = _task_data(cfg, path, *got, limit=limit)
            loader.report.extend(check_task_pairs(cfg.task, cfg.dataset_name, n_pairs))
    report = loader.report
    del loader  # the Arrow tables; then Arrow's allocator hands back the pages reading them used
    pa.default_memory_pool().release_unused()  # (about 200 MB at 200K documents) before any index
    if _attempt < CARD_RETRIES and any(card_generation(p) != g for p, g in generations.items()):
        log.warning("a publish replaced the dataset while its tasks were loaded; loading them again")
        return load_tasks(tasks, dataset_path, limit, _attempt=_attempt + 1)
    if not report.ok:
        rules = dict(sorted(report.by_rule().items()))
        raise DatasetInvalidError(
            f"the dataset has {len(report.violations)} violation(s) {rules} (listed above); nothing was "
            "evaluated. Rebuild it (pqb-build all --domain <domain>) or fix the files "
            "(pqb-harness validate prints the same report)",
            details=violation_lines(report),
        )
    return loaded, skipped


def skipped_note(skipped: Mapping[str, str]) -> str:
    """The one ``note:`` line naming every task without data (``ls tasks`` marks them in advance)."""
    return (
        f"note: {len(skipped)} task(s) have no data in this dataset and were not run: "
        f"{', '.join(sorted(skipped))} (pqb-harness ls tasks marks the tasks with local data)"
    )


class _CheckedLoader:
    """Loads each (rows config, corpus) once, validates it once, and collects every violation."""

    def __init__(self) -> None:
        self.report = ValidationReport()
        self._seen: dict[tuple, tuple[list[dict[str, Any]], Corpus] | None] = {}
        self._corpora: dict[tuple, tuple[CorpusCheck, Corpus | None]] = {}
        """(its check, the built Corpus or None when it broke a rule) per (path, corpus config,
        revision): tasks sharing a corpus share one, and its Arrow table is released once built."""

    def load(self, cfg: TaskConfig, path: str) -> tuple[list[dict[str, Any]], Corpus] | None:
        """(all rows, corpus), or ``None`` when the data broke a rule (recorded in ``report``)."""
        key = (path, cfg.dataset_name, cfg.test_split, cfg.corpus, cfg.dataset_revision)
        if key not in self._seen:
            self._seen[key] = self._load_checked(cfg, path)
        return self._seen[key]

    def _corpus(self, cfg: TaskConfig, path: str) -> tuple[CorpusCheck, Corpus | None]:
        key = (path, cfg.corpus, cfg.dataset_revision)
        if key not in self._corpora:
            corpus_ds = load_config(path, cfg.corpus, split=None, revision=cfg.dataset_revision)
            check = check_corpus(corpus_ds, cfg.corpus)
            self._corpora[key] = (check, corpus_from_dataset(corpus_ds) if check.report.ok else None)
        return self._corpora[key]

    def _load_checked(self, cfg: TaskConfig, path: str) -> tuple[list[dict[str, Any]], Corpus] | None:
        rows_ds = load_config(path, cfg.dataset_name, split=cfg.test_split, revision=cfg.dataset_revision,
                              split_from=cfg.location("test_split"))  # fmt: skip
        check, corpus = self._corpus(cfg, path)
        report = check_rows_config(rows_ds, cfg.dataset_name, check)
        if not report.ok or corpus is None:
            self.report.violations.extend(report.violations)
            return None
        return rows_ds.to_list(), corpus


def task_pairs(cfg: TaskConfig, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], PairSet]:
    """(rows as the task sees them, i.e. at its error dose, and its pairs): one function, so validate
    counts the pairs run would evaluate."""
    if cfg.pairtype.edits and cfg.error_dose is not None:
        rows = dosed_rows(rows, cfg.error_dose)
        return rows, cfg.pairtype.build_pairs(rows, dose=cfg.error_dose)
    return rows, cfg.pairtype.build_pairs(rows)


def _task_data(cfg: TaskConfig, path: str, rows: list[dict[str, Any]], corpus: Corpus, *,
               limit: int | float | None) -> tuple[TaskData, int]:  # fmt: skip
    """(the task's data after ``limit``, its number of pairs before it)."""
    rows, pairs = task_pairs(cfg, rows)
    if pairs.n_malformed:
        log.warning(
            "%s: %d malformed rows (empty query or target) were not evaluated", cfg.task, pairs.n_malformed
        )
    if pairs.n_short_chain:
        log.warning("%s: %d of %d rows have an error_chain shorter than the task's error_dose %d and were not "
                    "evaluated (counted as n_short_chain)", cfg.task, pairs.n_short_chain, len(rows),
                    cfg.error_dose)  # fmt: skip
    n_pairs = len(pairs.pair_a)
    if limit is not None:
        pairs, kept = pairs.subset(limited_pairs(n_pairs, limit, seed=int(cfg.bootstrap.get("seed", 0))))
        rows = [rows[i] for i in kept]
    return TaskData(cfg, rows, pairs, path, stable_hash(rows), corpus), n_pairs


def limited_pairs(n: int, limit: int | float, *, seed: int) -> np.ndarray:
    """``--limit``, in pairs (lm-eval's documents are PQB's pairs): an int keeps the first ``limit`` pairs of
    the task; a share in (0, 1) keeps ``ceil(share × n)`` of them, at least 1, drawn with the task's seed
    (kept in pair order), so a quick look spans the whole task and the same command gives the same pairs.
    The share is read exactly (``0.1 × 210`` is 21 pairs, not the 22 that float rounding would give)."""
    if isinstance(limit, int):
        return np.arange(min(limit, n), dtype=np.int64)
    size = min(n, max(1, math.ceil(Fraction(repr(limit)) * n)))
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)) if n else np.arange(0)


def target_indices(corpus: Corpus, targets: Sequence[str]) -> np.ndarray:
    """Corpus index of each target id; ``-1`` where the target is not in the corpus."""
    pos = corpus.index_of
    return np.asarray([pos.get(t, -1) for t in targets], dtype=np.int64)


# -- ranking ---------------------------------------------------------------------------------------------


class Ranker:
    """Ranks (text, target) needs for one retriever, one corpus at a time, via the run cache."""

    def __init__(self, retriever: Retriever, *, depth: int, cutoff: int | None = 200,
                 use_cache: bool = True) -> None:  # fmt: skip
        self.retriever = retriever
        self.depth = depth
        self.cutoff = cutoff
        """Ranks are exact up to here and misses beyond (the ranking contract); ``None``: full ranks."""
        self.use_cache = use_cache
        self.stats = {"index_calls": 0, "queries_scored": 0, "run_cache_hits": 0, "run_cache_misses": 0}
        self._indexed: str | None = None
        self._caches: dict[str, RunCache] = {}
        self._ranked: dict[str, dict[tuple[str, str], RankEntry]] = {}
        """This run's entries per corpus: tasks share queries (the error task's clean side is the
        syntactic task's query), so each is scored once per run even with ``--no_run_cache``."""

    def _ensure_index(self, corpus: Corpus) -> None:
        if self._indexed != corpus.fingerprint:
            index = self.retriever.index  # ``index(corpus)`` is enough for your own retriever
            if "cache_dir" in inspect.signature(index).parameters:
                index(corpus, cache_dir=Path(settings.PQB_CACHE_DIR) / "index")
            else:
                index(corpus)
            self.stats["index_calls"] += 1
            self._indexed = corpus.fingerprint

    def rank(self, corpus: Corpus, needs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], RankEntry]:
        """RankEntry for every distinct (query text, target id) in ``needs``."""
        if corpus.fingerprint not in self._caches:  # read the shards once per corpus, not per task
            self._caches[corpus.fingerprint] = RunCache(
                Path(settings.PQB_CACHE_DIR),
                {**self.retriever.cache_settings(), "rank_cutoff": self.cutoff},
                corpus.fingerprint,
                self.depth,
            )
        cache = self._caches[corpus.fingerprint]
        ranked = self._ranked.setdefault(corpus.fingerprint, {})
        unique = sorted(set(needs))
        found = {key: ranked[key] for key in unique if key in ranked}
        missing = []
        for key in unique:
            if key in found:
                continue
            entry = cache.get(*key) if self.use_cache else None
            if entry is None:
                missing.append(key)
            else:
                found[key] = entry
                self.stats["run_cache_hits"] += 1
        self.stats["run_cache_misses"] += len(missing)
        if missing:
            self._ensure_index(corpus)
            new = self._score_missing(corpus, missing)
            cache.add((t, tgt, e) for (t, tgt), e in new.items())
            found.update(new)
        ranked.update(found)
        return found

    def _score_missing(
        self, corpus: Corpus, missing: list[tuple[str, str]]
    ) -> dict[tuple[str, str], RankEntry]:
        texts = sorted({t for t, _ in missing})
        by_text: dict[str, list[str]] = {}
        for t, tgt in missing:
            by_text.setdefault(t, []).append(tgt)
        chunk = max(1, min(1024, MAX_SCORE_CELLS // max(1, len(corpus))))
        out: dict[tuple[str, str], RankEntry] = {}
        for start in bar(
            range(0, len(texts), chunk),
            desc=f"ranking ({len(corpus)} docs)",
            unit="chunk",
            leave=False,
            dynamic_ncols=True,
        ):
            out.update(self._rank_chunk(corpus, texts[start : start + chunk], by_text))
        self.stats["queries_scored"] += len(texts)
        return out

    def _rank_chunk(self, corpus: Corpus, texts: list[str], by_text: dict[str, list[str]]) -> dict:
        pos = [i for i, t in enumerate(texts) for _ in by_text[t]]
        tgt_ids = [tgt for t in texts for tgt in by_text[t]]
        tgt_idx = target_indices(corpus, tgt_ids)
        # no list is longer than the corpus: a task's K, run_depth or rr_cutoff past it (up to the YAML's
        # cap) ranks the whole corpus, it does not allocate the depth asked for (issue 45: MemoryError)
        depth = min(self.depth, len(corpus))
        cutoff = None if self.cutoff is None else min(self.cutoff, len(corpus))
        ranked = self.retriever.rank(texts, np.asarray(pos, dtype=np.int64), tgt_idx, k=depth,
                                     cutoff=cutoff)  # fmt: skip
        if ranked is not None:
            ranks, ties, top = ranked.ranks, ranked.ties, ranked.top
        elif self.retriever.full_scoring:  # the chunk is bounded by MAX_SCORE_CELLS
            scores = self.retriever.score(texts)
            top = topk_stable(scores, depth)
            ranks, ties = apply_cutoff(*target_ranks(scores[pos], tgt_idx), cutoff)
        else:
            top = self.retriever.search(texts, depth)
            ranks, ties = apply_cutoff(
                ranks_from_lists(top.indices[pos], tgt_idx), np.zeros(len(pos), bool), cutoff
            )
        return {
            (texts[p], tgt_ids[j]): RankEntry(float(ranks[j]), bool(ties[j]), top.indices[p], top.scores[p])
            for j, p in enumerate(pos)
        }


# -- metrics --------------------------------------------------------------------------------------------


def apply_gate(cfg: TaskConfig, pairs: PairSet, embed: Callable | None) -> np.ndarray:
    """Boolean mask of pairs kept by the authors' cosine gate (all True when the gate is off)."""
    n = len(pairs.pair_a)
    if cfg.similarity_gate is None:
        return np.ones(n, dtype=bool)
    if embed is None:
        raise TaskConfigError(
            f"task {cfg.task!r} sets similarity_gate={cfg.similarity_gate} but no query embedder is "
            'available: set gate_model to a dense model name (pip install "pqb-benchmark[neural]")'
        )
    q = pairs.queries
    texts = ([q[i] for i in pairs.pair_a], [q[i] for i in pairs.pair_b])
    return M.similarity_gate(n, cfg.similarity_gate, texts=texts, embed=embed)


def compute_task(data: TaskData, ranks: np.ndarray, *, n_boot: int, seed: int, unit: str = DEFAULT_UNIT,
                 embed: Callable | None = None,
                 extra: Mapping[str, np.ndarray] | None = None) -> tuple[dict, dict, dict]:  # fmt: skip
    """(metric means, CIs, bootstrap replicate means) of one task from per-query ranks.

    Every metric, effectiveness included, gets a CI from one clustered resampling of ``unit``
    (:mod:`pqb.harness.evaluation.bootstrap`); the ceiling-aware Flip is derived from the same replicates.
    """
    cfg, pairs = data.cfg, data.pairs
    keep = apply_gate(cfg, pairs, embed)
    design = task_design(cfg, pairs, ranks, unit=unit, keep=keep, extra=extra)
    values = derive(design.point(), cfg.k_values)
    if cfg.similarity_gate is not None:
        values["n_pairs_gated"] = int(keep.sum())  # pairs the cosine gate kept (of n_pairs)
    values["n_bootstrap_units"] = design.n_units
    reps = derive(bootstrap_design(design, n_boot=n_boot, seed=seed), cfg.k_values)
    ci = {k: percentile_ci(v) for k, v in reps.items()}
    return values, ci, reps


def error_breakdown(data: TaskData, ranks: np.ndarray) -> dict[str, Any]:
    """Deg@K and MRRdeg (and n) by edit mechanism, location class and position in the word (a pair counts
    under each value its edits take; ``function_word_only`` is the built-in control: pairs whose edits all
    fall on function words), number of edits, and personal vs backoff profile (``all`` beside them)."""
    cfg, pairs = data.cfg, data.pairs
    deg = M.error_degradation(ranks[pairs.pair_a], ranks[pairs.pair_b], cfg.k_values, cfg.rr_cutoff)
    rows = [data.rows[i] for i in pairs.row_index[pairs.pair_a]]
    n_edits = [str(n) if (n := edit_count(r)) is not None else "unknown" for r in rows]

    def summarize(mask: np.ndarray) -> dict[str, float | int]:
        out: dict[str, float | int] = {k: M.mean_or_nan(v[mask]) for k, v in deg.items()}
        out["n"] = int(mask.sum())
        return out

    out: dict[str, Any] = {}
    for by in EDIT_FIELDS:
        lists = [edit_values(r, by) for r in rows]
        values = sorted({x for xs in lists for x in xs})
        out[by] = {x: summarize(np.asarray([x in xs for xs in lists], dtype=bool)) for x in values}
        if by == "location" and lists:
            out[by]["function_word_only"] = summarize(
                np.asarray([xs == ["function_word"] for xs in lists], dtype=bool)
            )
    out["n_edits"] = {
        n: summarize(np.asarray([x == n for x in n_edits], dtype=bool)) for n in sorted(set(n_edits))
    }
    backoff = [r.get("backoff") for r in rows]
    out["profile"] = {"all": summarize(np.ones(len(rows), dtype=bool))}
    if any(b is not None for b in backoff):
        out["profile"]["personal"] = summarize(np.asarray([b is False for b in backoff], dtype=bool))
        out["profile"]["backoff"] = summarize(np.asarray([b is True for b in backoff], dtype=bool))
    return out


# -- samples and TREC ------------------------------------------------------------------------------------


def task_samples(data: TaskData, corpus: Corpus, entries: list[RankEntry], ranks: np.ndarray) -> list[dict]:
    """One JSON-able record per query (``--log_samples``)."""
    cfg, pairs = data.cfg, data.pairs
    rr = M.reciprocal_rank(ranks, cfg.rr_cutoff)
    pair_of: dict[int, list[str]] = {}
    for j, (a, b) in enumerate(zip(pairs.pair_a, pairs.pair_b, strict=True)):
        for q in (a, b):
            pair_of.setdefault(int(q), []).append(pairs.pair_ids[j])
    depth = max(cfg.k_values)
    out = []
    for i, q in enumerate(pairs.queries):
        rec = {
            "query_id": pairs.query_ids[i],
            "query": q,
            "target": pairs.targets[i],
            "rank": None if not np.isfinite(ranks[i]) else int(ranks[i]),
            "rr": float(rr[i]),
            "hits": {str(k): bool(ranks[i] <= k) for k in cfg.k_values},
            "tie_touches_target": entries[i].tie,
            "top_k": [corpus.ids[d] for d in entries[i].top_idx[:depth] if d >= 0],
            "pair_ids": pair_of.get(i, []),
        }
        if sides := cfg.pairtype.sides:
            row = data.rows[int(pairs.row_index[i])]
            rec["side"] = sides[0] if i < len(pairs.pair_a) else sides[1]
            for by in EDIT_FIELDS:
                rec[f"{by}s"] = edit_values(row, by)
            rec["n_edits"] = edit_count(row)
        out.append(rec)
    return out


def run_file_depth(cfg: TaskConfig) -> int:
    """Documents per query in TREC runs: ``run_depth``, but never fewer than ``rr_cutoff`` or the largest K,
    so MRR (which counts ranks up to ``rr_cutoff``) and Hit@K can be recomputed from the run alone
    (``pqb-harness score``)."""
    return max(cfg.run_depth, cfg.rr_cutoff or 0, *cfg.k_values)


def trec_lines(data: TaskData, corpus: Corpus, entries: list[RankEntry], run_name: str) -> list[str]:
    """TREC run lines ``qid Q0 docid rank score run`` (top :func:`run_file_depth` per query), whose scores
    strictly decrease with rank (:func:`monotone_scores`), so trec_eval's order is the rank column's."""
    depth = run_file_depth(data.cfg)
    lines = []
    for qid, e in zip(data.pairs.query_ids, entries, strict=True):
        ranked = [(d, s) for d, s in zip(e.top_idx[:depth], e.top_scores, strict=False) if d >= 0]
        texts = monotone_scores([s for _, s in ranked])
        for r, ((d, _), text) in enumerate(zip(ranked, texts, strict=True), start=1):
            lines.append(f"{qid} Q0 {corpus.ids[d]} {r} {text} {run_name}")
    return lines


def monotone_scores(scores: Sequence[float]) -> list[str]:
    """The scores of one ranked list as text that strictly decreases down the list and reads back exactly.

    PQB's tie rule orders documents whose scores lie within ``TIE_RTOL`` by corpus id, so a list can hold
    3.723988 above 3.723989; and exact ties (documents scoring 0) are in id order, where trec_eval breaks
    ties by docid the other way. Written as they are (they once were, at 6 decimals), 6 of the embedded
    build's 420 error queries ranked a document above a higher score: ``score --strict`` refused the
    harness's own run and trec_eval re-sorted those queries. Each score is written as the shortest text
    that reads back to its float32 value (``3.7239878``); where that text, read as a float64 (as trec_eval
    and ``score`` read it), does not fall below the line above, the next float64 below that line's value is
    written instead (a change under ``TIE_RTOL`` relative, where the tie rule already called the two equal;
    at exact ties of 0, a denormal). NaN stays ``nan``.
    """
    out: list[str] = []
    above = math.inf
    for s in scores:
        text = str(np.float32(s))
        value = float(text)
        if math.isnan(value):
            out.append("nan")
            continue
        if not value < above:
            value = math.nextafter(above, -math.inf)
            text = repr(value)
        out.append(text)
        above = value
    return out


def qrels_lines(data: TaskData) -> list[str]:
    """TREC qrels ``qid 0 docid 1``: one relevant document (the target) per query."""
    return [f"{q} 0 {t} 1" for q, t in zip(data.pairs.query_ids, data.pairs.targets, strict=True)]


# -- driver ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreOptions:
    """How finished ranks become a task's scores (shared by ``run`` and ``score``)."""

    n_boot: int | None = None
    seed: int | None = None
    unit: str | None = None
    log_samples: bool = False
    run_name: str = "pqb"
    embed: Callable | None = None
    ties_known: bool = True
    """False for ranks read from a TREC run: whether a tie touched the target is unknown."""
    rewrite: Callable[..., list[str]] | None = None
    """A defense's query rewriter ``(texts, corpus) -> texts``: its correction rate on error tasks is reported."""


def evaluate(retriever: Retriever, loaded: Mapping[str, TaskData], *, n_boot: int | None = None,
             seed: int | None = None, unit: str | None = None, log_samples: bool = False, run_name: str = "pqb",
             use_cache: bool = True, embed: Callable | None = None,
             on_task: Callable[[str, TaskOutcome], None] | None = None) -> EvaluationOutput:  # fmt: skip
    """Rank and score the tasks of ``loaded`` (from :func:`load_tasks`), one task at a time.

    Tasks are ordered by corpus so each index is built once; ``on_task(name, outcome)`` runs as
    each task finishes (the CLI writes a checkpoint there, so a killed run keeps its finished tasks).
    """
    out = EvaluationOutput()
    opts = ScoreOptions(
        n_boot, seed, unit, log_samples, run_name, embed, rewrite=getattr(retriever, "rewrite", None)
    )
    depths = [run_file_depth(d.cfg) for d in loaded.values()] + [max(d.cfg.k_values) for d in loaded.values()]
    cutoffs = [d.cfg.rr_cutoff for d in loaded.values()]
    # ranks must be exact up to every K too: Hit@K/Flip@K/Deg@K read ranks up to K, which may exceed rr_cutoff
    ks = [k for d in loaded.values() for k in d.cfg.k_values]
    cutoff = None if None in cutoffs else max([200, *cutoffs, *ks])
    ranker = Ranker(retriever, depth=max([200, *depths]), cutoff=cutoff, use_cache=use_cache)
    order = sorted(loaded, key=lambda n: (loaded[n].corpus.fingerprint, n))
    for name in bar(order, desc="tasks", unit="task", leave=False, dynamic_ncols=True):
        data = loaded[name]
        entries = ranker.rank(data.corpus, list(zip(data.pairs.queries, data.pairs.targets, strict=True)))
        es = [entries[(q, t)] for q, t in zip(data.pairs.queries, data.pairs.targets, strict=True)]
        out.outcomes[name] = finish_task(data, es, opts)
        if on_task is not None:
            on_task(name, out.outcomes[name])
    out.stats = {
        **ranker.stats,
        "index_cache_hits": int(getattr(retriever, "stats", {}).get("index_cache_hits", 0)),
    }
    return out


def bootstrap_settings(cfg: TaskConfig, n_boot: int | None, seed: int | None,
                       unit: str | None = None) -> tuple[int, int, str]:  # fmt: skip
    """(replicates, seed, unit) a task's CIs use: the command-line override, else the task's ``bootstrap``.

    The unit is the one actually resampled: the authors' macro variant always resamples ASINs.
    """
    return (
        cfg.bootstrap.get("n_boot", 1000) if n_boot is None else n_boot,
        cfg.bootstrap.get("seed", 0) if seed is None else seed,
        effective_unit(cfg, cfg.bootstrap.get("unit", DEFAULT_UNIT) if unit is None else unit),
    )


def rewrite_values(data: TaskData, rewrite: Callable[..., list[str]]) -> dict[str, np.ndarray]:
    """Per error pair: did the rewriter turn the error query into the clean one (``rewrite_corrected``),
    and leave the clean query as it was (``rewrite_clean_kept``)? Compared case- and space-insensitively."""
    pairs = data.pairs
    if not data.cfg.pairtype.edits or not len(pairs.pair_a):
        return {}

    def norm(texts: Sequence[str]) -> list[str]:
        return [" ".join(t.lower().split()) for t in texts]

    clean = norm([pairs.queries[i] for i in pairs.pair_a])
    fixed = norm(rewrite([pairs.queries[i] for i in pairs.pair_b], data.corpus))
    kept = norm(rewrite([pairs.queries[i] for i in pairs.pair_a], data.corpus))
    return {
        "rewrite_corrected": np.asarray(
            [f == c for f, c in zip(fixed, clean, strict=True)], dtype=np.float64
        ),
        "rewrite_clean_kept": np.asarray(
            [k == c for k, c in zip(kept, clean, strict=True)], dtype=np.float64
        ),
    }


def finish_task(data: TaskData, es: Sequence[RankEntry], opts: ScoreOptions,
                counts_extra: Mapping[str, int] | None = None) -> TaskOutcome:  # fmt: skip
    """Scores of one task from the rank entry of every query (pair-set order); ``score`` adds its counts
    (the run file's misses, unknown documents, ...).

    Without ``opts.ties_known`` (ranks read from a run file) ``ties_touch_target`` is not reported.
    """
    t0 = time.perf_counter()
    cfg, pairs, corpus = data.cfg, data.pairs, data.corpus
    ranks = np.asarray([e.rank for e in es], dtype=np.float64)
    ties = np.asarray([e.tie for e in es], dtype=bool)
    boot_n, boot_seed, unit = bootstrap_settings(cfg, opts.n_boot, opts.seed, opts.unit)
    extra = rewrite_values(data, opts.rewrite) if opts.rewrite is not None else None
    values, ci, reps = compute_task(data, ranks, n_boot=boot_n, seed=boot_seed, unit=unit, embed=opts.embed,
                                    extra=extra)  # fmt: skip
    counts = {
        "n_pairs": len(pairs.pair_a),
        "n_queries": len(pairs.queries),
        "ties_touch_target": int(ties.sum()),
        "n_targets_missing": int((target_indices(corpus, pairs.targets) < 0).sum()),
        "n_malformed": pairs.n_malformed,
        "n_bootstrap_units": values.pop("n_bootstrap_units"),
        **(counts_extra or {}),
    }
    if (
        pairs.n_short_chain is not None
    ):  # a dosed task: rows whose chain is too short are counted, not dropped
        counts["n_short_chain"] = pairs.n_short_chain
    if not opts.ties_known:
        del counts["ties_touch_target"]
    if "n_pairs_gated" in values:
        counts["n_pairs_gated"] = values.pop("n_pairs_gated")
    log.debug("%s metrics in %.2fs", cfg.task, time.perf_counter() - t0)
    return TaskOutcome(
        cfg=cfg, metrics=values, ci=ci, replicates=reps, counts=counts,
        breakdown=error_breakdown(data, ranks) if cfg.pairtype.edits else None,
        samples=task_samples(data, corpus, es, ranks) if opts.log_samples else [],
        trec=trec_lines(data, corpus, es, opts.run_name) if opts.log_samples else [],
        dataset={"path": data.dataset_path, "name": cfg.dataset_name, "revision": cfg.dataset_revision,
                 "fingerprint": data.fingerprint, "corpus": cfg.corpus, "corpus_fingerprint": corpus.fingerprint,
                 "n_docs": len(corpus)},
        unit=unit, ranks=ranks, query_ids=list(pairs.query_ids),
        qrels=qrels_lines(data) if opts.log_samples else [],
    )  # fmt: skip
