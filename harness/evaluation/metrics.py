"""PQB's metrics as functions over rank arrays (ranx style): each returns one value per query or pair.

Averaging, macro averages and confidence intervals happen later (:func:`mean_or_nan`,
:func:`macro_mean`, :mod:`pqb.harness.evaluation.bootstrap`). Definitions (docs/design.md §10):

* Hit@K(q) = 1[rank(q) ≤ K];  RR(q) = 1/rank(q) if rank(q) ≤ 200 (``cutoff``) else 0;
  nDCG@10(q) = 1/log2(rank(q) + 1) if rank(q) ≤ 10 else 0 (one relevant document, so IDCG = 1).
* Syntactic or error pair (q, q′): Flip@K = 1[Hit@K(q) ≠ Hit@K(q′)];
  RRstd = population std of {RR(q), RR(q′)} = |RR(q) − RR(q′)| / 2.
* Error pair (clean c, error e): Deg@K = Hit@K(c) − Hit@K(e); RRdeg = RR(c) − RR(e), whose mean is
  MRRdeg = MRR(clean) − MRR(error). Positive = the error hurt.

Ranks are floats; ``inf`` means unranked. All functions are vectorized and accept empty arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pqb.dataset.rules import K_VALUES as DEFAULT_K_VALUES  # one definition, shared with builders/leaderboard
from pqb.dataset.rules import RR_CUTOFF as DEFAULT_RR_CUTOFF


def _ranks(r: np.ndarray | Sequence[float]) -> np.ndarray:
    return np.asarray(r, dtype=np.float64).reshape(-1)


# -- per query ---------------------------------------------------------------------------------------


def hit_at_k(ranks: np.ndarray, k: int) -> np.ndarray:
    """Hit@K per query: 1.0 where the target is at rank ≤ k."""
    return (_ranks(ranks) <= k).astype(np.float64)


def reciprocal_rank(ranks: np.ndarray, cutoff: int | None = DEFAULT_RR_CUTOFF) -> np.ndarray:
    """RR per query: 1/rank within the top ``cutoff`` (paper: 200), else 0. ``cutoff=None``: no cutoff."""
    r = _ranks(ranks)
    limit = np.inf if cutoff is None else cutoff
    with np.errstate(divide="ignore"):
        return np.where(r <= limit, 1.0 / r, 0.0)


def ndcg_at_k(ranks: np.ndarray, k: int = 10) -> np.ndarray:
    """nDCG@k per query with one relevant document: 1/log2(rank + 1) inside the top k, else 0."""
    r = _ranks(ranks)
    inside = r <= k
    out = np.zeros_like(r)
    out[inside] = 1.0 / np.log2(r[inside] + 1.0)
    return out


# -- per pair ----------------------------------------------------------------------------------------


def flip_at_k(rank_a: np.ndarray, rank_b: np.ndarray, k: int) -> np.ndarray:
    """Flip@K per pair: 1.0 where exactly one query of the pair has the target in the top k."""
    return (hit_at_k(rank_a, k) != hit_at_k(rank_b, k)).astype(np.float64)


def rr_std(rank_a: np.ndarray, rank_b: np.ndarray, cutoff: int | None = DEFAULT_RR_CUTOFF) -> np.ndarray:
    """RRstd per pair: population std (ddof 0) of the pair's two RRs, i.e. |RR(a) − RR(b)| / 2."""
    return np.abs(reciprocal_rank(rank_a, cutoff) - reciprocal_rank(rank_b, cutoff)) / 2.0


def deg_at_k(rank_clean: np.ndarray, rank_error: np.ndarray, k: int) -> np.ndarray:
    """Deg@K per error pair: Hit@K(clean) − Hit@K(error) ∈ {−1, 0, 1}; its mean is Deg@K."""
    return hit_at_k(rank_clean, k) - hit_at_k(rank_error, k)


def rr_deg(
    rank_clean: np.ndarray, rank_error: np.ndarray, cutoff: int | None = DEFAULT_RR_CUTOFF
) -> np.ndarray:
    """RR(clean) − RR(error) per error pair; its mean is MRRdeg (an absolute difference, not a %)."""
    return reciprocal_rank(rank_clean, cutoff) - reciprocal_rank(rank_error, cutoff)


# -- families ----------------------------------------------------------------------------------------


def effectiveness(
    ranks: np.ndarray, k_values: Sequence[int] = DEFAULT_K_VALUES, cutoff: int | None = DEFAULT_RR_CUTOFF
) -> dict[str, np.ndarray]:
    """Per-query ``hit@K`` for each K, ``mrr`` (RR values) and ``ndcg@10``."""
    out = {f"hit@{k}": hit_at_k(ranks, k) for k in k_values}
    out["mrr"] = reciprocal_rank(ranks, cutoff)
    out["ndcg@10"] = ndcg_at_k(ranks, 10)
    return out


def pair_robustness(
    rank_a: np.ndarray,
    rank_b: np.ndarray,
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    cutoff: int | None = DEFAULT_RR_CUTOFF,
) -> dict[str, np.ndarray]:
    """Per-pair ``flip@K`` for each K and ``rrstd`` (syntactic pairs, and error pairs too)."""
    out = {f"flip@{k}": flip_at_k(rank_a, rank_b, k) for k in k_values}
    out["rrstd"] = rr_std(rank_a, rank_b, cutoff)
    return out


def error_degradation(
    rank_clean: np.ndarray,
    rank_error: np.ndarray,
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    cutoff: int | None = DEFAULT_RR_CUTOFF,
) -> dict[str, np.ndarray]:
    """Per-pair ``deg@K`` for each K and ``mrr_deg`` (per-pair RR differences; mean = MRRdeg)."""
    out = {f"deg@{k}": deg_at_k(rank_clean, rank_error, k) for k in k_values}
    out["mrr_deg"] = rr_deg(rank_clean, rank_error, cutoff)
    return out


# -- aggregation and the authors' variants -------------------------------------------------------------


def mean_or_nan(values: np.ndarray) -> float:
    """Mean of a per-pair/per-query array; NaN (not an error) for an empty set."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()) if v.size else float("nan")


def group_means(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Mean of ``values`` within each group (groups in sorted order), vectorized with bincount."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    _, inverse = np.unique(np.asarray(groups), return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    return sums / counts


def macro_mean(values: np.ndarray, groups: np.ndarray) -> float:
    """The authors' per-ASIN macro average: mean over groups of the group's mean (NaN if empty)."""
    return mean_or_nan(group_means(values, groups))


def rrstd_per_group(
    ranks: np.ndarray, groups: np.ndarray, cutoff: int | None = DEFAULT_RR_CUTOFF
) -> np.ndarray:
    """The authors' Stage-11 RRstd: population std of the RRs of *all* queries of each ASIN with ≥ 2
    queries (one value per such ASIN, sorted by ASIN). Equals :func:`rr_std` for two-query ASINs."""
    rr = reciprocal_rank(ranks, cutoff)
    if rr.size == 0:
        return rr
    _, inverse, counts = np.unique(np.asarray(groups), return_inverse=True, return_counts=True)
    mean = np.bincount(inverse, weights=rr) / counts
    var = np.bincount(inverse, weights=(rr - mean[inverse]) ** 2) / counts
    return np.sqrt(var[counts >= 2])


def similarity_gate(
    n_pairs: int,
    threshold: float = 0.9,
    *,
    similarity: np.ndarray | None = None,
    texts: tuple[Sequence[str], Sequence[str]] | None = None,
    embed: Callable[[Sequence[str]], np.ndarray] | None = None,
) -> np.ndarray:
    """The authors' cosine ≥ ``threshold`` pair gate as a boolean mask over pairs.

    Give either a precomputed per-pair ``similarity`` array, or both sides' ``texts`` and an
    ``embed`` callable (texts -> (n, d) vectors; the authors used GTE-base, L2-normalised).
    """
    if similarity is None:
        if embed is None or texts is None:
            raise ValueError(
                "the cosine pair gate needs query similarities: pass similarity=<array per pair> or "
                "texts=(side_a, side_b) with embed=<callable returning embeddings>, e.g. a dense "
                'retriever\'s encoder (pip install "pqb-benchmark[neural]")'
            )
        a = np.asarray(embed(list(texts[0])), dtype=np.float64)
        b = np.asarray(embed(list(texts[1])), dtype=np.float64)
        a /= np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        similarity = (a * b).sum(axis=1)
    similarity = np.asarray(similarity, dtype=np.float64).reshape(-1)
    if similarity.shape[0] != n_pairs:
        raise ValueError(f"similarity has {similarity.shape[0]} values for {n_pairs} pairs")
    return similarity >= threshold
