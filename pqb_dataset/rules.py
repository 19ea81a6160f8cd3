"""The rules every PQB number shares: the cut-offs K, the tie rule, and when a cut-off is saturated.

Three readers must apply them identically and once kept copies that drifted: the harness (every metric,
the ``saturated_at`` marks), the dataset card's lexical-ceiling report (``pqb.builders.reports.lexical_ceiling``,
which states for each build the Hit@K at which the harness will mark BM25 saturated) and the leaderboard
(the Space's columns). They read them here; the builders and the harness never import each other.

**Tie rule** (docs/design.md §10): the rank of a target is 1 + the documents scoring higher + the
documents scoring the same that come earlier in corpus order (corpus sorted by id). "The same" is
within :data:`TIE_RTOL` relative to the target's score: float32 sums are not associative, so one document
scored twice can differ in its last bit (bm25s gave 1.7985868 and 1.7985870 for two identical
documents). The relative tolerance is taken of ``max(|score|, TIE_FLOOR)``: at a score of exactly 0 (BM25
for a document sharing no query term) a relative tolerance is 0 whatever the factor, and
:data:`TIE_FLOOR` = 1e-12 makes "the same as 0" mean within 1e-18. (The card's report once used
``np.finfo(float64).tiny``, 2.2e-308, there: a tolerance of 2e-314, below the smallest float32 step,
i.e. no floor at all; on every committed build the two floors give the same ranks, since no
retriever score lies in (0, 1e-18], and the harness's compiled BM25 kernels, run cache and published
results use 1e-12.)

**Saturation**: at a cut-off K where both sides' Hit@K exceed :data:`SATURATION_HIT` (or both are below
1 − it) a Flip@K or Deg@K of 0 says "no room to move", not "robust". The harness also calls a K
saturated when the Flip@K expected from independent misses is below the width of its CI, but only with
at least :data:`SATURATION_MIN_PAIRS` pairs: below that the CI is wide because the sample is small, and
the K is "too few pairs", not saturated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

K_VALUES: tuple[int, ...] = (1, 5, 10, 20)
"""The cut-offs of Hit@K, Flip@K and Deg@K (the paper's), the default of every task."""

RR_CUTOFF = 200
"""RR is 1/rank within the top 200 (the paper's), else 0."""

TIE_RTOL = 1e-6
"""Scores within this relative distance count as tied (a few float32 ulps)."""

TIE_FLOOR = 1e-12
"""The smallest magnitude the relative tolerance is taken of (see the module docstring)."""

SATURATION_HIT = 0.95
"""Hit@K above which, on both sides, Flip@K and Deg@K at that K have no room left to show a difference
(and below ``1 − SATURATION_HIT`` on both sides: nothing retrieved, nothing to flip)."""

SATURATION_MIN_PAIRS = 30
"""Pairs a task (or average) needs before "the expected flip is below the CI width" marks a K saturated.
With 10 pairs a 95% CI spans ±30 points whatever the system (a 10-pair run read "saturated at K 5" at
Hit@5 = 60%); 30 is where a share's CI first narrows to about ±18 points at p = 0.5, so a CI wider than
the expected flip says something about the hit rate, not about the sample size."""


def tie_tolerance(scores: np.ndarray | float) -> Any:
    """How far from each score another score still ties with it: ``TIE_RTOL × max(|score|, TIE_FLOOR)``
    (a float for one score, an array for an array)."""
    out = TIE_RTOL * np.maximum(np.abs(np.asarray(scores, dtype=np.float64)), TIE_FLOOR)
    return float(out) if out.ndim == 0 else out


def target_ranks(scores: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each row's target in a full score matrix under the tie rule.

    Args:
        scores: (n_queries, n_docs) scores in corpus order; higher is better.
        targets: (n_queries,) corpus index of each query's target; ``-1`` = target not in the corpus.

    Returns:
        ``ranks`` (float64, ``inf`` when unranked: absent target or NaN score) and ``ties`` (bool: another
        document has the target's score within the tolerance, i.e. the tie rule decided something).
    """
    scores = np.atleast_2d(np.asarray(scores))
    targets = np.asarray(targets, dtype=np.int64).reshape(-1)
    if scores.shape[0] != targets.shape[0]:
        raise ValueError(f"{scores.shape[0]} score rows but {targets.shape[0]} targets")
    n_q, n_d = scores.shape
    ranks = np.full(n_q, np.inf)
    ties = np.zeros(n_q, dtype=bool)
    valid = (targets >= 0) & (targets < n_d)
    if not valid.any():
        return ranks, ties
    rows = np.flatnonzero(valid)
    sub = scores[rows]
    t_score = sub[np.arange(len(rows)), targets[rows]][:, None].astype(np.float64)
    tol = tie_tolerance(t_score)
    higher = (sub > t_score + tol).sum(axis=1)
    equal = np.abs(sub - t_score) <= tol
    earlier = np.arange(n_d)[None, :] < targets[rows][:, None]
    tied_earlier = (equal & earlier).sum(axis=1)
    ok = ~np.isnan(t_score[:, 0])
    ranks[rows[ok]] = 1 + higher[ok] + tied_earlier[ok]
    ties[rows] = ok & (equal.sum(axis=1) > 1)
    return ranks, ties


def at_ceiling(hits: Iterable[float | None]) -> bool:
    """Every side's Hit@K is known and above :data:`SATURATION_HIT`."""
    values = list(hits)
    return bool(values) and all(h is not None and h > SATURATION_HIT for h in values)


def at_floor(hits: Iterable[float | None]) -> bool:
    """Every side's Hit@K is known and below ``1 − SATURATION_HIT`` (nothing retrieved)."""
    values = list(hits)
    return bool(values) and all(h is not None and h < 1 - SATURATION_HIT for h in values)
