"""Compiled per-query bands for :class:`~.scoring.SparseScorer` (numba, the ``fast`` extra).

Why: with numpy, each query costs one ``np.add.at`` per term (twice the time of a compiled loop), a
partition, several temporaries and Python work, mostly holding the GIL; at 200K documents that caps BM25
at ~2,000 q/s however many threads run. Here one compiled loop per query clears the row, adds every
posting into it, finds the exact ``K``-th best score (a guess from a sample, checked in the pass that
collects the band, else a bounded heap over the row) and collects the band; it releases the GIL, so
ranking threads run in parallel. numba is what bm25s uses for the same loops (its ``backend="numba"``).

The result is the numpy path's, bit for bit: every score is the same exact float64 sum of the same
float32 weights (sums are order-independent while exact), rounded once to float32; the band is a valid
one (every document within two tie tolerances of the ``K``-th best), so the pinned rule applied on it
gives the same lists and ranks (tests/test_retrievers_lexical.py runs both paths against a dense
reference). A query the kernel does not band (a corpus of at most ``K`` documents, or a band over the
buffer's capacity: a huge tie, as when fewer than ``K`` documents match) is flagged and goes through
the numpy path.
"""

from __future__ import annotations

import numpy as np

from pqb.dataset.rules import TIE_FLOOR, TIE_RTOL  # module globals: numba compiles them as constants

try:
    import numba
except ImportError:  # the `fast` extra is optional: the numpy path gives the same results
    numba = None

FALLBACK = -1
"""``out_n`` value of a query the kernel did not band (see the module docstring)."""

SAMPLE_STRIDE = 16
"""Every this-many-th document is sampled for the band's first guess (:func:`_sampled_band`)."""


def available() -> bool:
    return numba is not None


def _sift_down(heap, n, i):
    """Restore the min-heap property of ``heap[:n]`` below position ``i``."""
    x = heap[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= x:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = x


def _heapify(heap, n):
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(heap, n, i)


def _floor(kth):
    """Two tie tolerances below the float32 ``K``-th best score ``kth``: the band's floor."""
    tau = np.float64(np.float32(kth))
    return tau - 2 * (TIE_RTOL * max(abs(tau), TIE_FLOOR))


def _collect(row, low, floor, out_docs, out_s):
    """How many documents have a float32 score ``>= floor``, stored ascending in ``out_docs``/``out_s``,
    or ``FALLBACK`` when they overflow the buffer. ``row >= low`` is tested first, in a tight loop (float32
    rounding lifts a float64 sum by < 1e-7 relative, so ``low`` just below ``floor`` loses nothing)."""
    nb, cap = 0, len(out_docs)
    for d in range(len(row)):
        if row[d] >= low:
            if nb < cap:
                out_docs[nb] = d
            nb += 1
    if nb > cap:
        return FALLBACK
    kept = 0
    for i in range(nb):
        d = out_docs[i]
        s = np.float32(row[d])
        if s >= floor:
            out_docs[kept] = d
            out_s[kept] = s
            kept += 1
    return kept


def _kth_largest(values, n, K, heap):
    """The ``K``-th largest of ``values[:n]`` (``n >= K``), with a ``K``-heap. Applied to float64 sums
    it gives, once rounded, the float32 ``K``-th best: rounding is monotone."""
    heap[:K] = values[:K]
    _heapify(heap, K)
    for i in range(K, n):
        if values[i] > heap[0]:
            heap[0] = values[i]
            _sift_down(heap, K, 0)
    return heap[0]


def _exact_band(row, K, heap, out_docs, out_s):
    """(band size, floor) from the exact ``K``-th best over the whole row (one heap pass)."""
    floor = _floor(_kth_largest(row, len(row), K, heap))
    return _collect(row, floor - abs(floor) * 1e-6, floor, out_docs, out_s), floor


def _sampled_band(row, K, heap, out_docs, out_s):
    """(band size, floor), or ``(FALLBACK, 0)``: a guess ``theta`` from every ``SAMPLE_STRIDE``-th
    document, then one pass keeping every document above just below it. When at least ``K`` of them
    reach ``theta``, the corpus's ``K``-th best is among them, exactly, and so is the whole band (its
    floor lies above the pass's bound); otherwise the guess is discarded."""
    sample = row[::SAMPLE_STRIDE]
    ks = min(K, 2 * K // SAMPLE_STRIDE + 1)
    if len(sample) < ks:
        return FALLBACK, 0.0
    theta = _kth_largest(sample, len(sample), ks, heap)
    if theta <= 0:
        return FALLBACK, 0.0
    low = theta * (1 - 4 * TIE_RTOL)
    nb = _collect(row, low, -np.inf, out_docs, out_s)
    if nb == FALLBACK:
        return FALLBACK, 0.0
    above = 0
    for i in range(nb):
        above += row[out_docs[i]] >= theta
    if above < K:
        return FALLBACK, 0.0
    floor = _floor(_kth_largest(out_s, nb, K, heap))  # rounding is monotone: the float32 K-th best
    if floor * (1 - 1e-6) < low:  # cannot happen for theta > 0; keeps the proof local
        return FALLBACK, 0.0
    kept = 0
    for i in range(nb):
        if out_s[i] >= floor:
            out_docs[kept] = out_docs[i]
            out_s[kept] = out_s[i]
            kept += 1
    return kept, floor


def _bands(q_ptr, q_terms, q_counts, t_ptr, t_docs, indptr, docs, w, idf, tfn, lucene, K,
           row, out_docs, out_s, out_n, out_floor, out_ts):  # fmt: skip
    """For query ``q`` (terms ``q_terms[q_ptr[q]:q_ptr[q+1]]``, each named ``q_counts`` times): its band
    (``out_n[q]`` documents, ascending, in ``out_docs[q]``, their float32 scores in ``out_s[q]``,
    ``out_floor[q]``) and the float32 score of each of its targets ``t_docs[t_ptr[q]:t_ptr[q+1]]`` in
    ``out_ts``. ``row`` is the worker's corpus-length float64 buffer.

    Weights: ``w`` for a term named once; named ``n`` times, ``n`` × ``w`` in float64 (bm25s) or Lucene's
    float32 ``n·idf − n·idf / (1 + tfn)``, exactly :meth:`.inverted_index.Bm25sWeights.weight` and
    :meth:`.inverted_index.LuceneWeights.weight`. The floor lies two tie tolerances below the exact
    ``K``-th best float32 score (:func:`_sampled_band`, else :func:`_exact_band`).
    """
    n_docs = len(row)
    heap = np.empty(K, np.float64)
    for q in range(len(q_ptr) - 1):
        row[:] = 0.0
        for i in range(q_ptr[q], q_ptr[q + 1]):
            t, n = q_terms[i], q_counts[i]
            if n == 1:
                for j in range(indptr[t], indptr[t + 1]):
                    row[docs[j]] += np.float64(w[j])
            elif lucene:
                wt = np.float32(n) * idf[t]
                for j in range(indptr[t], indptr[t + 1]):
                    row[docs[j]] += np.float64(wt - wt / (np.float32(1) + tfn[j]))
            else:
                for j in range(indptr[t], indptr[t + 1]):
                    row[docs[j]] += np.float64(w[j]) * n
        for j in range(t_ptr[q], t_ptr[q + 1]):
            d = t_docs[j]
            out_ts[j] = np.float32(row[d]) if 0 <= d < n_docs else np.float32(0)
        out_n[q] = FALLBACK
        if n_docs <= K:
            continue
        nb, floor = _sampled_band(row, K, heap, out_docs[q], out_s[q])
        if nb == FALLBACK:
            nb, floor = _exact_band(row, K, heap, out_docs[q], out_s[q])
        out_n[q] = nb
        out_floor[q] = floor


if numba is not None:
    _jit = numba.njit(nogil=True, cache=True)
    _sift_down, _heapify, _floor, _collect = _jit(_sift_down), _jit(_heapify), _jit(_floor), _jit(_collect)
    _kth_largest, _exact_band, _sampled_band = _jit(_kth_largest), _jit(_exact_band), _jit(_sampled_band)
    bands = _jit(_bands)
else:
    bands = None
