"""The retriever contract every PQB model implements.

PQB needs the target's exact rank up to ``rr_cutoff`` (200) and "a miss" beyond it (the ranking contract,
:mod:`pqb.harness.evaluation.ranking`); the evaluator asks for it through ``rank``. Its default scores a
chunk of queries against every document (``score``, one chunk at a time: never queries × corpus at once);
``bm25`` overrides it with a path that never sorts the corpus. Retrievers that cannot score the whole
corpus (rerankers over a first stage) implement ``search`` only and say so with ``full_scoring = False``;
ranks then come from their ranked lists (a target absent from the list is unranked: RR 0, no hit).

Lifecycle (one ``Retriever`` instance per run)::

    r = Cls(**model_args)                     # --model_args k=v,... become constructor kwargs
    r.index(corpus, cache_dir=...)            # once per (model, corpus); may load from cache
    scores = r.score(["query", ...])          # (n_queries, n_docs) float32, corpus order (a chunk)
    ranked = r.rank(queries, query_of, targets, k=200, cutoff=200)   # Ranked(ranks, ties, top)
    hits = r.search(["query", ...], k=100)    # SearchResult(indices, scores), best first
    r.describe()                              # what was actually loaded, for the results file
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.dataset.rules import tie_tolerance
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

    @functools.cached_property
    def index_of(self) -> dict[str, int]:
        """``{document id: corpus index}``, built once per corpus (targets are looked up per chunk)."""
        return {doc_id: i for i, doc_id in enumerate(self.ids)}

    def documents(self, field: str = "title+text") -> list[str]:
        """The string a retriever reads per document, in corpus order (see :data:`DOCUMENT_FIELDS`).

        ``title+text`` is :func:`pqb.dataset.schema.document_string`, MTEB's and BEIR's join
        (``title + " " + text``), so PQB and MTEB score identical documents. No global truncation:
        each model truncates with its own tokenizer limit.
        """
        return list(self.iter_documents(field))

    def iter_documents(self, field: str = "title+text") -> Iterator[str]:
        """:meth:`documents` one at a time, for a reader that streams (a second corpus-sized list of
        joined strings would be the largest object of a lexical index build)."""
        if field not in DOCUMENT_FIELDS:
            raise ValueError(f"field must be one of {', '.join(DOCUMENT_FIELDS)}, got {field!r}")
        if field == "title+text":
            yield from map(document_string, self.titles, self.texts)
        else:
            yield from (s or "" for s in (self.titles if field == "title" else self.texts))


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


UNRANKED = np.inf
"""The rank of a target that is absent, unscored or beyond the cutoff: no hit, RR 0."""


@dataclass(frozen=True)
class SearchResult:
    """Top-k per query: ``indices[q, j]`` is the corpus index at rank ``j + 1`` (``-1`` = no document)."""

    indices: np.ndarray  # (n_queries, k) int64
    scores: np.ndarray  # (n_queries, k) float32


@dataclass(frozen=True)
class Ranked:
    """What :meth:`Retriever.rank` returns under the ranking contract (:mod:`pqb.harness.evaluation.ranking`).

    ``ranks[j]``/``ties[j]``: rank of target ``j`` (exact up to the cutoff, else ``inf``) and whether the
    tie rule decided something about it; ``top``: each query's top-k list (pinned tie order).
    """

    ranks: np.ndarray
    ties: np.ndarray
    top: SearchResult


def apply_cutoff(ranks: np.ndarray, ties: np.ndarray, cutoff: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The ranking contract: ranks beyond ``cutoff`` become misses (``inf``) with the tie flag off."""
    if cutoff is None:
        return ranks, ties
    out = np.asarray(ranks, dtype=np.float64).copy()
    miss = out > cutoff
    out[miss] = UNRANKED
    return out, np.where(miss, False, ties)


def ranks_from_lists(indices: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Rank of each target in a ranked list (``indices[q, j]`` = doc at rank j+1; ``-1`` padding).

    For retrievers that do not score the whole corpus (rerankers): a target absent from the list is
    unranked (``inf``), which gives RR 0 and no hit — never the authors' 1/20001.
    """
    indices = np.atleast_2d(np.asarray(indices, dtype=np.int64))
    targets = np.asarray(targets, dtype=np.int64).reshape(-1)
    match = (indices == targets[:, None]) & (targets[:, None] >= 0)
    found = match.any(axis=1)
    ranks = np.full(len(targets), UNRANKED)
    ranks[found] = match[found].argmax(axis=1) + 1
    return ranks


MAX_SCORE_CELLS = 32_000_000
"""Upper bound on chunk × n_docs float32 cells scored at once (~128 MB): the evaluator hands ``rank`` and
``score`` chunks of at most this many cells, and ``bm25.score`` refuses more."""


def order_near_ties(cand: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Documents ``cand`` (scores ``s``) by descending score, near-ties (gaps within ``TIE_RTOL``) by
    corpus index: the pinned order of a top-k list."""
    s = np.asarray(s, dtype=np.float64)
    exact = np.lexsort((cand, -s))
    cand, s = cand[exact], s[exact]
    gaps = s[:-1] - s[1:]
    new_group = gaps > tie_tolerance(s[:-1])
    if new_group.all():
        return cand
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
        floor = kth - tie_tolerance(kth)
    for q in range(n_q):
        cand = np.flatnonzero(scores[q] >= floor[q]) if k < n_d else np.arange(n_d)
        out_idx[q] = order_near_ties(cand, scores[q][cand])[:k]
    top = np.take_along_axis(scores, out_idx, axis=1).astype(np.float32)
    return SearchResult(out_idx, top)


_UNSOURCED: dict[type, str] = {}


def code_digest(cls: type) -> str:
    """sha256 (16 hex) of the source of ``cls``'s module, else of ``cls`` itself (a notebook cell); a class
    whose source cannot be read (typed at a plain ``python`` prompt) gets a random token for this process,
    so nothing cached by another process is reused for it."""
    import inspect
    import sys
    import uuid

    for obj in (sys.modules.get(cls.__module__), cls):
        try:
            source = inspect.getsource(obj) if obj is not None else None
        except (OSError, TypeError):
            continue
        if source:
            return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    return _UNSOURCED.setdefault(cls, f"unsourced-{uuid.uuid4().hex[:16]}")


ArgRule = Callable[[Any], str | None]
"""A ``--model_args`` value check: ``None`` if the value is fine, else what it must be."""


def _is_number(value: Any) -> bool:
    """A finite int or float: ``inf`` and ``nan`` pass every ``> 0`` or ``<= 1`` test they should fail."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


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


def in_range(low: float, high: float, *, low_open: bool = False) -> ArgRule:
    """A finite number in ``[low, high]`` (``(low, high]`` with ``low_open``): the documented range."""

    def rule(value: Any) -> str | None:
        if not (_is_number(value) and (low < value if low_open else low <= value)):
            return f"must be a number {'>' if low_open else '>='} {low:g}"
        return None if value <= high else f"must be a number <= {high:g}"

    return rule


BM25_K1 = in_range(0, 100, low_open=True)
"""BM25's k1: > 0, and at most 100 (the usual range is 0.5-3; far above it BM25 is plain tf-idf, and at
~1e308 the saturation term overflows so every score is nan and every metric 0)."""


def unit_interval(value: Any) -> str | None:
    return None if _is_number(value) and 0 <= value <= 1 else "must be a number in [0, 1]"


def one_of(*choices: Any) -> ArgRule:
    def rule(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(map(str, choices))}"

    return rule


class Retriever:
    """Base class of every retriever, and what you subclass to evaluate your own (``pqb.harness.Retriever``).

    Implement ``index(corpus)`` and either ``score(queries)`` — a ``(len(queries), len(corpus))`` float
    array, higher is better, columns in ``corpus`` order: exact ranks under PQB's tie rule — or, for a
    system that cannot score every document (a reranker, an ANN index), ``search(queries, k)`` returning a
    :class:`SearchResult` and ``full_scoring = False`` (a target missing from the list is a miss)::

        class WordOverlap(pqb.harness.Retriever):
            name = "word-overlap"

            def index(self, corpus, *, cache_dir=None):
                self.corpus = corpus
                self.docs = [set(d.lower().split()) for d in corpus.documents()]

            def score(self, queries):
                return np.array([[len(set(q.lower().split()) & d) for d in self.docs] for q in queries],
                                dtype=np.float32)

    Pass an instance to ``pqb.harness.evaluate(model=...)``, or register the class
    (``@pqb.harness.register_model("word-overlap")``) to name it there and on the command line; constructor
    keywords are its ``model_args``. ``index`` may take ``cache_dir`` (a folder under ``PQB_CACHE_DIR``
    for what it builds). ``describe()`` goes into the results file; ``cache_settings()`` must name
    everything that changes scores, because the run cache and the resume key are keyed on it (its
    default, :meth:`cache_settings`, adds a digest of a class defined outside ``pqb``'s own code).

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
    corpus: Corpus | None = None
    """Set by ``index`` (also a class default, for a subclass whose ``__init__`` skips ``super().__init__()``)."""

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

    def rank(self, queries: Sequence[str], query_of: np.ndarray, targets: np.ndarray, *, k: int,
             cutoff: int | None) -> Ranked | None:  # fmt: skip
        """Top-``k`` of every query and the rank of every target under the ranking contract, or ``None``.

        Target ``j`` (a corpus index, ``-1`` if absent) belongs to query ``query_of[j]``; ranks are exact
        (pinned tie rule) up to ``cutoff`` and ``inf`` beyond (``None``: no cutoff). ``None`` — the default —
        means "no faster path": the evaluator scores the chunk with ``score`` (or ``search``) and ranks it
        itself. ``bm25`` and ``bm25-pyserini`` override it.
        """
        return None

    # -- metadata -----------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Settings and weights actually used, written into the results file's ``config.model_info``."""
        return {"name": self.name}

    def cache_settings(self) -> dict[str, Any]:
        """Everything that changes scores; hashed with the corpus fingerprint into cache keys.

        The default is :meth:`describe`; for a class defined outside ``pqb`` (your own retriever) it adds
        ``code``, a digest of the class's module source (or of the class alone, in a notebook), so editing
        the class and evaluating again never serves the previous code's cached ranks.
        """
        info = self.describe()
        if type(self).__module__.split(".")[0] == "pqb":  # the harness's own code: versioned with it
            return info
        cls = type(self)
        return {**info, "class": f"{cls.__module__}:{cls.__qualname__}", "code": code_digest(cls)}

    def _require_index(self) -> Corpus:
        if self.corpus is None:
            raise RuntimeError(f"{type(self).__name__}: call index(corpus) before scoring or searching.")
        return self.corpus
