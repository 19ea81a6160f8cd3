"""Score queries against :class:`~.inverted_index.Postings`, and rank within the cutoff without sorting.

Per query, every posting of every query term is added into one preallocated float64 row of corpus length
(``np.add.at``, one call per distinct term), so the row holds each document's exact score: float32
weights summed in float64 are exact while they span less than 2^29, hence independent of the order terms
are added in, and each score is then rounded once to float32 (the precision ties are judged at). That is
what ``score`` returns, block by block into a preallocated float32 buffer.

Ranking never sorts the corpus. The pinned rule (:mod:`pqb.harness.evaluation.ranking`) is applied on a
*band*: every document scoring at least a floor that lies below the ``K``-th best score (``K = max(k,
cutoff)``) by two tie tolerances. The floor is the K-th best score among the documents of the query's
highest-weighted terms (a subset's K-th best never exceeds the corpus's), and one comparison over the row
collects the band; without such a subset the floor comes from one partition of the row. Inside the band,
the top-k list and the target's rank are counted exactly as
:func:`~pqb.harness.retrievers.base.topk_stable` and :func:`~pqb.harness.evaluation.ranking.target_ranks`
would on the full row; a target outside the band ranks below ``K`` documents: a miss.

With numba installed (``kernel=auto``) the sum and the band come from one compiled loop per query
(:mod:`.kernels`, which releases the GIL) and the same rule is applied on its band; a query it declines
takes the numpy path above. Both give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from pqb.dataset.rules import tie_tolerance
from pqb.harness.retrievers.base import UNRANKED, Ranked, SearchResult, order_near_ties
from pqb.harness.retrievers.lexical import kernels
from pqb.harness.retrievers.lexical.inverted_index import Bm25sWeights, LuceneWeights, Postings

KERNELS = ("auto", "numba", "numpy")

COMPILED_CHUNK = 64
"""Queries per call of the compiled kernel: each worker's band buffers are ``COMPILED_CHUNK ×
BAND_CAPACITY`` (3 MB), reused."""
BAND_CAPACITY = 4096
"""Band documents the compiled kernel keeps per query; a wider band (a huge tie) takes the numpy path."""

BLOCK_CELLS = 8_000_000
"""float32 cells of one ``score_blocks`` buffer (32 MB), whatever the number of queries."""


def check_kernel(kernel: str) -> bool:
    """Whether ``kernel`` asks for the compiled path; a clear error for an unknown or uninstalled one."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "numba" and not kernels.available():
        raise ImportError(
            "kernel=numba needs numba: pip install 'pqb-benchmark[fast]' (or use kernel=auto or numpy)"
        )
    return kernel != "numpy"


def term_counts(terms: Sequence[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for t in terms:
        counts[t] = counts.get(t, 0) + 1
    return counts


class SparseScorer:
    """Exact BM25 scores, top-k lists and cutoff ranks for queries given as term ids."""

    def __init__(self, postings: Postings, weights: Bm25sWeights | LuceneWeights, *, kernel: str = "auto") -> None:  # fmt: skip
        """``weights``: the variant's posting weights. ``kernel``: ``numba`` (compiled bands,
        :mod:`.kernels`), ``numpy``, or ``auto`` (numba when installed); every kernel gives the same bits."""
        self.postings, self.weights = postings, weights
        self.compiled = check_kernel(kernel) and kernels.available()
        self.max_weight = np.zeros(postings.n_terms)
        present = postings.df() > 0
        if present.any():
            self.max_weight[present] = np.maximum.reduceat(weights.w, postings.indptr[:-1][present])
        self._buffers: list[_Buffers] = []
        self.stats = {"pruned_band": 0, "full_row_band": 0, "compiled_band": 0}

    def _buffers_for(self, n: int) -> list[_Buffers]:
        while len(self._buffers) < n:
            self._buffers.append(_Buffers(self.postings.n_docs))
        return self._buffers[:n]

    # -- scores ---------------------------------------------------------------------------------------
    def _accumulate(self, counts: dict[int, int], buf: _Buffers) -> np.ndarray:
        row, p = buf.row, self.postings
        row.fill(0.0)
        for t, n in counts.items():
            np.add.at(row, p.docs[p.indptr[t] : p.indptr[t + 1]], self.weights.weight(p, t, n))
        return row

    def score_blocks(self, queries: Sequence[Sequence[int]], cells: int = BLOCK_CELLS) -> Iterator[tuple[int, np.ndarray]]:  # fmt: skip
        """``(first query, float32 scores of a block of queries)``; the block is one reused buffer."""
        n_docs = self.postings.n_docs
        rows = max(1, min(len(queries), cells // max(1, n_docs)))
        buf = np.empty((rows, n_docs), np.float32)
        for start in range(0, len(queries), rows):
            block = buf[: min(rows, len(queries) - start)]
            for i in range(len(block)):
                block[i] = self._accumulate(term_counts(queries[start + i]), self._buffers_for(1)[0])
            yield start, block

    # -- ranking --------------------------------------------------------------------------------------
    def _band(self, counts: dict[int, int], K: int, buf: _Buffers) -> tuple[np.ndarray, np.ndarray, float]:
        """(documents, their float32 scores, floor): every document scoring ≥ floor, with
        floor ≤ (K-th best score − 2 tolerances), so near-ties at the K-th place are all inside.

        The floor comes from a subset — the documents of the query's highest-weighted terms, at least
        ``2K`` of them: the K-th best score of any subset is at most the K-th best of the corpus. One
        comparison over the row then collects the band."""
        row, p, n_docs = buf.row, self.postings, self.postings.n_docs
        if n_docs > K and counts:
            terms = sorted(counts, key=lambda t: (-self.max_weight[t], t))
            buf.stamp_id += 1
            stamp, cur, parts, seen = buf.stamp, buf.stamp_id, [], 0
            for t in terms:
                docs = p.docs[p.indptr[t] : p.indptr[t + 1]]
                new = docs[stamp[docs] != cur]  # each document once
                stamp[new] = cur
                parts.append(new)
                seen += len(new)
                if seen >= 2 * K:
                    break
            if seen >= K:
                sub = row[np.concatenate(parts)].astype(np.float32)
                tau = float(np.partition(sub, len(sub) - K)[len(sub) - K])
                floor = tau - 2 * tie_tolerance(tau)
                if floor > 0:
                    docs = np.flatnonzero(row >= floor * (1 - 1e-6))  # float32 rounding can lift a score
                    s32 = row[docs].astype(np.float32)
                    keep = s32 >= floor
                    buf.pruned += 1
                    return docs[keep], s32[keep], floor
        buf.full_row += 1
        s32 = row.astype(np.float32)
        if n_docs <= K:
            return np.arange(n_docs), s32, -np.inf
        kth = float(np.partition(s32, n_docs - K)[n_docs - K])
        floor = kth - 2 * tie_tolerance(kth)
        docs = np.flatnonzero(s32 >= floor)
        return docs, s32[docs], floor

    def rank(self, queries: Sequence[Sequence[int]], query_of: np.ndarray, targets: np.ndarray, *, k: int,
             cutoff: int | None, threads: int = 1) -> Ranked:  # fmt: skip
        """Top-``k`` of each query and the rank of each target ``j`` of query ``query_of[j]`` (exact up to
        ``cutoff``, else ``inf``; ``None`` = no cutoff).

        ``threads`` workers take contiguous slices of the queries, each with its own buffers (the compiled
        kernel and ``np.add.at`` release the GIL); every query is computed alone and exactly, so results
        do not depend on it, nor on the kernel."""
        n_docs = self.postings.n_docs
        cut = n_docs if cutoff is None else int(cutoff)
        K, k_out, n_q = max(k, cut), min(k, n_docs), len(queries)
        targets = np.asarray(targets, np.int64)
        top_idx = np.full((n_q, k_out), -1, np.int64)
        top_scores = np.full((n_q, k_out), np.nan, np.float32)
        ranks, ties = np.full(len(targets), UNRANKED), np.zeros(len(targets), bool)
        of_query: list[list[int]] = [[] for _ in range(n_q)]
        for j, q in enumerate(np.asarray(query_of).tolist()):
            of_query[q].append(j)

        def finish(q: int, docs: np.ndarray, s32: np.ndarray, floor: float, target_score: Callable[[int], float],
                   full_row: Callable[[], np.ndarray]) -> None:  # fmt: skip
            """The pinned rule on query ``q``'s band (``docs`` ascending, their float32 scores)."""
            s64 = s32.astype(np.float64)
            if len(docs) > k_out > 0:
                kth = float(-np.partition(-s64, k_out - 1)[k_out - 1])
                sel = s64 >= kth - tie_tolerance(kth)
                cand, cand_s = docs[sel], s64[sel]
            else:
                cand, cand_s = docs, s64
            order = order_near_ties(cand, cand_s)[:k_out]
            top_idx[q, : len(order)] = order
            top_scores[q, : len(order)] = s32[np.searchsorted(docs, order)]
            for j in of_query[q]:
                t = int(targets[j])
                if 0 <= t < n_docs:
                    found = self._target_rank(target_score(j), t, docs, s64, floor, cut, full_row)
                    if found is not None:
                        ranks[j], ties[j] = found

        def numpy_query(q: int, buf: _Buffers) -> None:
            counts = term_counts(queries[q])
            row = self._accumulate(counts, buf)
            docs, s32, floor = self._band(counts, K, buf)
            finish(q, docs, s32, floor, lambda j: float(np.float32(row[targets[j]])),
                   lambda: row.astype(np.float32).astype(np.float64))  # fmt: skip

        def compiled_query(q: int, band: _Band, buf: _Buffers) -> None:
            i = q - band.first
            n = int(band.n[i])
            if n == kernels.FALLBACK:
                numpy_query(q, buf)
                return
            docs, s32 = band.docs[i, :n], band.scores[i, :n]
            buf.compiled += 1

            def full_row() -> np.ndarray:  # a target at the band's edge (rare): count on the whole row
                return self._accumulate(term_counts(queries[q]), buf).astype(np.float32).astype(np.float64)

            finish(q, docs, s32, float(band.floor[i]),
                   lambda j: float(band.target_scores[band.target_at[j]]), full_row)  # fmt: skip

        def work(lo: int, hi: int, buf: _Buffers) -> None:
            if not self.compiled:
                for q in range(lo, hi):
                    numpy_query(q, buf)
                return
            for a in range(lo, hi, COMPILED_CHUNK):
                band = self._compiled_bands(
                    queries, of_query, targets, a, min(a + COMPILED_CHUNK, hi), K, buf
                )
                for q in range(a, min(a + COMPILED_CHUNK, hi)):
                    compiled_query(q, band, buf)

        n_workers = max(1, min(int(threads), n_q))
        bufs = self._buffers_for(n_workers)
        before = [(b.pruned, b.full_row, b.compiled) for b in bufs]
        bounds = np.linspace(0, n_q, n_workers + 1).astype(int)
        if n_workers == 1:
            work(0, n_q, bufs[0])
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(n_workers) as pool:
                for f in [pool.submit(work, bounds[i], bounds[i + 1], bufs[i]) for i in range(n_workers)]:
                    f.result()
        for b, (p0, f0, c0) in zip(bufs, before, strict=True):
            self.stats["pruned_band"] += b.pruned - p0
            self.stats["full_row_band"] += b.full_row - f0
            self.stats["compiled_band"] += b.compiled - c0
        return Ranked(ranks, ties, SearchResult(top_idx, top_scores))

    def _compiled_bands(self, queries: Sequence[Sequence[int]], of_query: Sequence[Sequence[int]],
                        targets: np.ndarray, a: int, z: int, K: int, buf: _Buffers) -> _Band:  # fmt: skip
        """The compiled kernel's bands of queries ``a:z`` (:func:`.kernels.bands`)."""
        q_ptr, q_terms, q_counts, t_ptr, t_docs, target_at = [0], [], [], [0], [], {}
        for q in range(a, z):
            counts = term_counts(queries[q])
            q_terms += counts
            q_counts += counts.values()
            q_ptr.append(len(q_terms))
            for j in of_query[q]:
                target_at[j] = len(t_docs)
                t_docs.append(int(targets[j]))
            t_ptr.append(len(t_docs))
        p, w = self.postings, self.weights
        lucene = isinstance(w, LuceneWeights)
        empty = np.empty(0, np.float32)
        band = _Band(a, z - a, len(t_docs), target_at, buf)
        i64 = np.int64
        kernels.bands(np.asarray(q_ptr, i64), np.asarray(q_terms, i64), np.asarray(q_counts, i64),
                      np.asarray(t_ptr, i64), np.asarray(t_docs, i64), p.indptr, p.docs, w.w,
                      w.idf if lucene else empty, w.tfn if lucene else empty, lucene, K, buf.row,
                      band.docs, band.scores, band.n, band.floor, band.target_scores)  # fmt: skip
        return band

    @staticmethod
    def _target_rank(ts: float, t: int, docs: np.ndarray, s64: np.ndarray, floor: float, cut: int,
                     full_row: Callable[[], np.ndarray]) -> tuple[float, bool] | None:  # fmt: skip
        """(rank, tie) of document ``t`` (float32 score ``ts``) by the pinned rule, or ``None`` beyond
        ``cut``; ``full_row()`` gives every document's float32 score, for a target at the band's edge."""
        tol = tie_tolerance(ts)
        if ts - tol >= floor:  # every document within tol of the target is in the band
            scores, ids = s64, docs
        elif ts + tol < floor and len(docs) >= cut:  # >= cut documents score higher: a miss
            return None
        else:  # at the band's edge: count on the whole row (rare)
            scores, ids = full_row(), None
        higher = int((scores > ts + tol).sum())
        if higher >= cut:
            return None
        equal = np.flatnonzero(np.abs(scores - ts) <= tol)
        equal = equal if ids is None else ids[equal]
        r = 1 + higher + int((equal < t).sum())
        return (float(r), len(equal) > 1) if r <= cut else None


class _Band:
    """What the compiled kernel returns for queries ``first:first + n`` (see :func:`.kernels.bands`); the
    band arrays are the worker's, reused by its next call."""

    def __init__(self, first: int, n: int, n_targets: int, target_at: dict[int, int], buf: _Buffers) -> None:
        if buf.band_docs is None:
            buf.band_docs = np.empty((COMPILED_CHUNK, BAND_CAPACITY), np.int64)
            buf.band_scores = np.empty((COMPILED_CHUNK, BAND_CAPACITY), np.float32)
        self.first, self.target_at = first, target_at
        self.docs, self.scores = buf.band_docs[:n], buf.band_scores[:n]
        self.n = np.empty(n, np.int64)
        self.floor = np.empty(n, np.float64)
        self.target_scores = np.empty(n_targets, np.float32)


class _Buffers:
    """One worker's reusable arrays: the score row, the band's "seen by query" stamps, the kernel's bands."""

    def __init__(self, n_docs: int) -> None:
        self.row = np.zeros(n_docs)
        self.stamp = np.zeros(n_docs, np.int64)
        self.stamp_id = 0
        self.band_docs: np.ndarray | None = None  # the compiled kernel's band buffers, made on first use
        self.band_scores: np.ndarray | None = None
        self.pruned = 0
        self.full_row = 0
        self.compiled = 0
