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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from pqb.harness.retrievers.base import UNRANKED, Ranked, SearchResult, order_near_ties, tie_tolerance
from pqb.harness.retrievers.lexical.inverted_index import Postings

WeightFn = Callable[[Postings, int, int], np.ndarray]
"""``(postings, term, times named in the query) -> float64 weights of the term's postings``."""

BLOCK_CELLS = 8_000_000
"""float32 cells of one ``score_blocks`` buffer (32 MB), whatever the number of queries."""


def term_counts(terms: Sequence[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for t in terms:
        counts[t] = counts.get(t, 0) + 1
    return counts


class SparseScorer:
    """Exact BM25 scores, top-k lists and cutoff ranks for queries given as term ids."""

    def __init__(self, postings: Postings, weight: WeightFn, unit_weights: np.ndarray) -> None:
        """``unit_weights``: each posting's weight for a term named once (what ``weight(p, t, 1)`` gives)."""
        self.postings, self.weight = postings, weight
        self.max_weight = np.zeros(postings.n_terms)
        present = postings.df() > 0
        if present.any():
            self.max_weight[present] = np.maximum.reduceat(unit_weights, postings.indptr[:-1][present])
        self._buffers: list[_Buffers] = []
        self.stats = {"pruned_band": 0, "full_row_band": 0}

    def _buffers_for(self, n: int) -> list[_Buffers]:
        while len(self._buffers) < n:
            self._buffers.append(_Buffers(self.postings.n_docs))
        return self._buffers[:n]

    # -- scores ---------------------------------------------------------------------------------------
    def _accumulate(self, counts: dict[int, int], buf: _Buffers) -> np.ndarray:
        row, p = buf.row, self.postings
        row.fill(0.0)
        for t, n in counts.items():
            np.add.at(row, p.docs[p.indptr[t] : p.indptr[t + 1]], self.weight(p, t, n))
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

        ``threads`` workers take contiguous slices of the queries, each with its own row (``np.add.at``
        releases the GIL); every query is computed alone and exactly, so results do not depend on it."""
        n_docs = self.postings.n_docs
        cut = n_docs if cutoff is None else int(cutoff)
        K, k_out, n_q = max(k, cut), min(k, n_docs), len(queries)
        top_idx = np.full((n_q, k_out), -1, np.int64)
        top_scores = np.full((n_q, k_out), np.nan, np.float32)
        ranks, ties = np.full(len(targets), UNRANKED), np.zeros(len(targets), bool)
        of_query: list[list[int]] = [[] for _ in range(n_q)]
        for j, q in enumerate(np.asarray(query_of).tolist()):
            of_query[q].append(j)

        def work(lo: int, hi: int, buf: _Buffers) -> None:
            for q in range(lo, hi):
                counts = term_counts(queries[q])
                row = self._accumulate(counts, buf)
                docs, s32, floor = self._band(counts, K, buf)
                s64 = s32.astype(np.float64)
                if len(docs) > k_out > 0:
                    kth = float(-np.partition(-s64, k_out - 1)[k_out - 1])
                    sel = s64 >= kth - tie_tolerance(kth)
                    cand, cand_s = docs[sel], s64[sel]
                else:
                    cand, cand_s = docs, s64
                order = order_near_ties(cand, cand_s)[:k_out]
                top_idx[q, : len(order)] = order
                top_scores[q, : len(order)] = row[order].astype(np.float32)
                for j in of_query[q]:
                    t = int(targets[j])
                    if 0 <= t < n_docs:
                        found = self._target_rank(row, t, docs, s64, floor, cut)
                        if found is not None:
                            ranks[j], ties[j] = found

        n_workers = max(1, min(int(threads), n_q))
        bufs = self._buffers_for(n_workers)
        before = [(b.pruned, b.full_row) for b in bufs]
        bounds = np.linspace(0, n_q, n_workers + 1).astype(int)
        if n_workers == 1:
            work(0, n_q, bufs[0])
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(n_workers) as pool:
                for f in [pool.submit(work, bounds[i], bounds[i + 1], bufs[i]) for i in range(n_workers)]:
                    f.result()
        for b, (p0, f0) in zip(bufs, before, strict=True):
            self.stats["pruned_band"] += b.pruned - p0
            self.stats["full_row_band"] += b.full_row - f0
        return Ranked(ranks, ties, SearchResult(top_idx, top_scores))

    @staticmethod
    def _target_rank(row: np.ndarray, t: int, docs: np.ndarray, s64: np.ndarray, floor: float,
                     cut: int) -> tuple[float, bool] | None:  # fmt: skip
        """(rank, tie) of document ``t`` by the pinned rule, or ``None`` beyond ``cut``."""
        ts = float(np.float32(row[t]))
        tol = tie_tolerance(ts)
        if ts - tol >= floor:  # every document within tol of the target is in the band
            scores, ids = s64, docs
        elif ts + tol < floor and len(docs) >= cut:  # >= cut documents score higher: a miss
            return None
        else:  # at the band's edge: count on the whole row (rare)
            scores, ids = row.astype(np.float32).astype(np.float64), None
        higher = int((scores > ts + tol).sum())
        if higher >= cut:
            return None
        equal = np.flatnonzero(np.abs(scores - ts) <= tol)
        equal = equal if ids is None else ids[equal]
        r = 1 + higher + int((equal < t).sum())
        return (float(r), len(equal) > 1) if r <= cut else None


class _Buffers:
    """One worker's reusable arrays: the score row and the band's "seen by query" stamps."""

    def __init__(self, n_docs: int) -> None:
        self.row = np.zeros(n_docs)
        self.stamp = np.zeros(n_docs, np.int64)
        self.stamp_id = 0
        self.pruned = 0
        self.full_row = 0
