"""The retriever contract every PQB model implements.

PQB needs the target's rank among *all* documents, so full scoring is part of the contract
(``score``). Retrievers that cannot score the whole corpus (rerankers over a first stage) implement
``search`` only and say so with ``full_scoring = False``; the evaluator then reads ranks from their
ranked lists (a target absent from the list is unranked: RR 0, no hit).

Lifecycle (one ``Retriever`` instance per run)::

    r = Cls(**model_args)                     # --model_args k=v,... become constructor kwargs
    r.index(corpus, cache_dir=...)            # once per (model, corpus); may load from cache
    scores = r.score(["query", ...])          # (n_queries, n_docs) float32, corpus order
    hits = r.search(["query", ...], k=100)    # SearchResult(indices, scores), best first
    r.describe()                              # what was actually loaded, for the results file
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.dataset.schema import document_string


@dataclass(frozen=True)
class Corpus:
    """Documents in a fixed order. Index ``i`` in every score matrix is ``ids[i]``.

    The order is the corpus config's row order sorted by id, so ties broken "by corpus order" are
    reproducible across runs and machines.
    """

    ids: tuple[str, ...]
    titles: tuple[str, ...]
    texts: tuple[str, ...]
    fingerprint: str = ""
    """Content hash of (ids, titles, texts); part of every cache key. Computed when not given, so every
    corpus has one and one corpus never gets two different cache keys."""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", content_fingerprint(self.ids, self.titles, self.texts))

    def __len__(self) -> int:
        return len(self.ids)

    def documents(self, field: str = "title+text") -> list[str]:
        """The string a retriever reads per document, in corpus order (see :data:`DOCUMENT_FIELDS`).

        ``title+text`` is :func:`pqb.dataset.schema.document_string`, MTEB's and BEIR's join
        (``title + " " + text``), so PQB and MTEB score identical documents. No global truncation:
        each model truncates with its own tokenizer limit.
        """
        if field == "title+text":
            return [document_string(t, x) for t, x in zip(self.titles, self.texts, strict=True)]
        if field == "title":
            return [t or "" for t in self.titles]
        if field == "text":
            return [x or "" for x in self.texts]
        raise ValueError(f"field must be one of {', '.join(DOCUMENT_FIELDS)}, got {field!r}")


DOCUMENT_FIELDS: tuple[str, ...] = ("title+text", "text", "title")
"""What a retriever's ``field`` model arg may name: the BEIR/MTEB join (default), the body or the title."""


def content_fingerprint(ids: Sequence[str], titles: Sequence[str], texts: Sequence[str]) -> str:
    """Content hash of the documents in order (sha256 of NUL-separated fields, 16 hex chars)."""
    h = hashlib.sha256()
    for parts in zip(ids, titles, texts, strict=True):
        for p in parts:
            h.update((p or "").encode("utf-8"))
            h.update(b"\x00")
        h.update(b"\x01")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class SearchResult:
    """Top-k per query: ``indices[q, j]`` is the corpus index at rank ``j + 1`` (``-1`` = no document)."""

    indices: np.ndarray  # (n_queries, k) int64
    scores: np.ndarray  # (n_queries, k) float32


TIE_RTOL = 1e-6
"""Scores within this relative distance count as tied (a few float32 ulps): the same document scored
twice, or an exact duplicate, can differ in the last bit because float sums are not associative."""


def _near_tie_order(row: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """``cand`` ordered by descending score, near-ties (gaps within ``TIE_RTOL``) by corpus index."""
    s = row[cand].astype(np.float64)
    exact = np.lexsort((cand, -s))
    cand, s = cand[exact], s[exact]
    gaps = s[:-1] - s[1:]
    new_group = gaps > TIE_RTOL * np.maximum(np.abs(s[:-1]), 1e-12)
    group = np.concatenate(([0], np.cumsum(new_group)))
    return cand[np.lexsort((cand, group))]


def topk_stable(scores: np.ndarray, k: int) -> SearchResult:
    """Top-k of each row, ties broken by corpus order (lower index first) — PQB's pinned tie rule.

    Orders by descending score; scores within ``TIE_RTOL`` of their neighbour are a tie and keep
    corpus order, the same rule :func:`pqb.harness.evaluation.ranking.target_ranks` applies, so a logged list and a
    reported rank agree (they could differ only for a chain of near-ties wider than ``TIE_RTOL``).
    For large corpora the k best are partitioned out first (near-ties at the cut included).
    """
    scores = np.asarray(scores)
    n_q, n_d = scores.shape
    k = min(k, n_d)
    if k <= 0:
        return SearchResult(np.empty((n_q, 0), np.int64), np.empty((n_q, 0), np.float32))
    out_idx = np.empty((n_q, k), np.int64)
    if k < n_d:
        kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1].astype(np.float64)
        floor = kth - TIE_RTOL * np.maximum(np.abs(kth), 1e-12)
    for q in range(n_q):
        cand = np.flatnonzero(scores[q] >= floor[q]) if k < n_d else np.arange(n_d)
        out_idx[q] = _near_tie_order(scores[q], cand)[:k]
    top = np.take_along_axis(scores, out_idx, axis=1).astype(np.float32)
    return SearchResult(out_idx, top)


ArgRule = Callable[[Any], str | None]
"""A ``--model_args`` value check: ``None`` if the value is fine, else what it must be."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def positive(value: Any) -> str | None:
    return None if _is_number(value) and value > 0 else "must be a number > 0"


def positive_int(value: Any) -> str | None:
    return None if _is_number(value) and value > 0 and int(value) == value else "must be an integer >= 1"


def non_negative(value: Any) -> str | None:
    return None if _is_number(value) and value >= 0 else "must be a number >= 0"


def positive_int_or(*words: Any) -> ArgRule:
    """An integer >= 1, or one of ``words`` (``"auto"``, ``None``: the constructor's own default)."""

    def rule(value: Any) -> str | None:
        if value in words or (isinstance(value, str) and value in {str(w) for w in words}):
            return None
        problem = positive_int(value)
        return f"{problem} or one of {', '.join(map(str, words))}" if problem else None

    return rule


def plus_separated_weights(value: Any) -> str | None:
    """``1.0+0.5``: one number >= 0 per component, not all 0 (a hybrid's fusion weights)."""
    if value is None or value == "":
        return None
    try:
        weights = [float(w) for w in str(value).split("+")]
    except ValueError:
        return "must be '+'-separated numbers, e.g. 1.0+0.5"
    if any(w < 0 or w != w for w in weights) or not any(weights):
        return "must be numbers >= 0, not all 0"
    return None


def unit_interval(value: Any) -> str | None:
    return None if _is_number(value) and 0 <= value <= 1 else "must be a number in [0, 1]"


def one_of(*choices: Any) -> ArgRule:
    def rule(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(map(str, choices))}"

    return rule


class Retriever:
    """Base class: subclasses implement ``index`` and ``score`` (or ``search`` for rerankers).

    Attributes set by subclasses:
        full_scoring: ``score`` returns one score per corpus document (exact ranks possible).
        weights: what was actually loaded: ``{"model": <hub id or path>, "revision": ..., "stand_in_for": ...}``.
        ARG_RULES: ``{constructor argument: ArgRule}``; the registry applies them to ``--model_args``
            before constructing the model, so ``k1=-5`` is refused instead of giving garbage metrics.
            A subclass's rules add to those of its bases (the registry merges them along the MRO).
    """

    name: ClassVar[str] = "retriever"
    full_scoring: ClassVar[bool] = True
    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {}

    def __init__(self, **kwargs: Any) -> None:
        unknown = ", ".join(sorted(kwargs))
        if unknown:
            raise TypeError(f"{type(self).__name__} got unknown model_args: {unknown}")
        self.corpus: Corpus | None = None
        self.device: str = "cpu"
        self.batch_size: int | str = "auto"
        self.stats: dict[str, int] = {"index_cache_hits": 0, "docs_encoded": 0, "queries_encoded": 0}
        """Counters tests assert on (a second run must re-encode nothing) and the results file records."""

    # -- lifecycle ----------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        raise NotImplementedError

    def score(self, queries: Sequence[str]) -> np.ndarray:
        """(n_queries, n_docs) float32 scores in corpus order. Higher is better."""
        raise NotImplementedError(f"{type(self).__name__} does not score the full corpus; use search()")

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        """Top-k documents per query; the default takes the stable top-k of ``score``."""
        self._require_index()
        return topk_stable(self.score(queries), k)

    # -- metadata -----------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Settings and weights actually used, written into the results file's ``config.model_info``."""
        return {"name": self.name}

    def cache_settings(self) -> dict[str, Any]:
        """Everything that changes scores; hashed with the corpus fingerprint into cache keys."""
        return self.describe()

    def _require_index(self) -> Corpus:
        if self.corpus is None:
            raise RuntimeError(f"{type(self).__name__}: call index(corpus) before scoring or searching.")
        return self.corpus
