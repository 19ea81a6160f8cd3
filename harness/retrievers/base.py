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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np


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
    """Content hash of (ids, titles, texts); part of every cache key."""

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class SearchResult:
    """Top-k per query: ``indices[q, j]`` is the corpus index at rank ``j + 1`` (``-1`` = no document)."""

    indices: np.ndarray  # (n_queries, k) int64
    scores: np.ndarray  # (n_queries, k) float32


def topk_stable(scores: np.ndarray, k: int) -> SearchResult:
    """Top-k of each row, ties broken by corpus order (lower index first) — PQB's pinned tie rule.

    ``np.argsort(-scores, kind="stable")`` orders by descending score and keeps corpus order within
    equal scores; for large corpora we first partition to the k best and then sort stably.
    """
    scores = np.asarray(scores, dtype=np.float32)
    n_q, n_d = scores.shape
    k = min(k, n_d)
    if k <= 0:
        return SearchResult(np.empty((n_q, 0), np.int64), np.empty((n_q, 0), np.float32))
    if k < n_d:
        # threshold = k-th best score; keep every doc >= threshold so that ties at the cut are all seen
        kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1 : k]
        out_idx = np.empty((n_q, k), np.int64)
        for q in range(n_q):
            cand = np.flatnonzero(scores[q] >= kth[q, 0])
            order = np.lexsort((cand, -scores[q, cand]))[:k]
            out_idx[q] = cand[order]
    else:
        out_idx = np.argsort(-scores, axis=1, kind="stable")
    return SearchResult(out_idx, np.take_along_axis(scores, out_idx, axis=1))


class Retriever:
    """Base class: subclasses implement ``index`` and ``score`` (or ``search`` for rerankers).

    Attributes set by subclasses:
        full_scoring: ``score`` returns one score per corpus document (exact ranks possible).
        weights: what was actually loaded: ``{"model": <hub id or path>, "revision": ..., "stand_in_for": ...}``.
    """

    name: ClassVar[str] = "retriever"
    full_scoring: ClassVar[bool] = True

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
