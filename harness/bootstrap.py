"""Seeded paired bootstrap 95% confidence intervals (percentile method), vectorized.

"Paired" means every metric of a task is resampled with the *same* pair indices in a replicate, so
CIs of related metrics (Flip@10 and RRstd, or the two sides of Deg@K) come from one resampling of
the pairs. Each robustness metric is a mean of per-pair values, so a replicate is a mean over a
resampled index set. With ``groups`` (the authors' per-ASIN macro variant) whole groups are
resampled and the statistic is the mean of group means.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.metrics import group_means


def _replicate_indices(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    return rng.integers(0, n, size=(n_boot, n))


def bootstrap_means(
    values: Mapping[str, np.ndarray],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    groups: np.ndarray | None = None,
    chunk: int = 200,
) -> dict[str, np.ndarray]:
    """``n_boot`` replicate means of each per-pair array (all the same length), one shared resampling.

    With ``groups``, group means are resampled (the per-ASIN macro variant). Empty input or
    ``n_boot <= 0`` gives empty arrays. Memory stays ``chunk × n`` indices however large ``n_boot``
    is; results depend only on ``seed``, ``n_boot`` and ``chunk`` (one generator, fixed draw order).
    """
    names = list(values)
    if not names:
        return {}
    arrays = np.stack([np.asarray(values[k], dtype=np.float64).reshape(-1) for k in names])
    if groups is not None and arrays.shape[1]:
        arrays = np.stack([group_means(a, groups) for a in arrays])
    n = arrays.shape[1]
    if n == 0 or n_boot <= 0:
        return {k: np.empty(0) for k in names}
    rng = np.random.default_rng(seed)
    means = np.empty((len(names), n_boot))
    for start in range(0, n_boot, chunk):
        stop = min(start + chunk, n_boot)
        idx = _replicate_indices(rng, n, stop - start)
        means[:, start:stop] = arrays[:, idx].mean(axis=2)
    return {k: means[i] for i, k in enumerate(names)}


def percentile_ci(replicates: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates; ``(nan, nan)`` when there are none."""
    r = np.asarray(replicates, dtype=np.float64)
    r = r[~np.isnan(r)]
    if r.size == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(r, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))
