"""A task's observations as bootstrap levels: per-pair and per-query metric arrays plus their units.

One function builds, from a task's pairs and per-query ranks, everything a CI or a paired test needs
(:class:`pqb.harness.evaluation.bootstrap.Design`), so ``run``, ``score`` and ``compare`` resample exactly the same
way. Levels:

* ``pairs`` — Flip@K, RRstd (and Deg@K, MRRdeg, the clean/error effectiveness on error tasks), plus
  the pooled hit rate ``_pool@K`` the ceiling-aware Flip is derived from;
* ``queries`` — Hit@K, MRR, nDCG@10 of syntactic tasks (every query counts once);
* ``asins`` — the authors' Stage-11 RRstd (macro-average variant only).

Derived metrics (:func:`derive`) are functions of these means (MTEB's main score ``ndcg_at_10`` among them), computed the same way for the point
estimate and for every replicate: ``flip@K_expected`` = 2p̂(1−p̂) with p̂ the pooled Hit@K of the
pairs' two sides (what Flip@K would be if the two sides hit independently at that rate) and
``flip@K_ratio`` = Flip@K / ``flip@K_expected``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pqb.harness.evaluation import metrics as M
from pqb.harness.evaluation.bootstrap import Design, Level, unit_codes
from pqb.harness.evaluation.pairs import PairSet
from pqb.harness.evaluation.pairtypes import MTEB_MAIN_SCORE
from pqb.harness.evaluation.task_registry import TaskConfig

POOL_PREFIX = "_pool@"
"""Internal per-pair array (Hit@K(a) + Hit@K(b)) / 2; its mean is p̂. Never reported."""


def pair_values(cfg: TaskConfig, rank_a: np.ndarray, rank_b: np.ndarray) -> dict[str, np.ndarray]:
    """Every per-pair array of a task from the ranks of the pairs' two sides (a = clean on error tasks)."""
    ks, cut = cfg.k_values, cfg.rr_cutoff
    kind = cfg.pairtype
    # degradation compares the two named sides (clean, then typo'd); syntactic pairs have no sides
    out = M.error_degradation(rank_a, rank_b, ks, cut) if kind.sides else {}
    out.update(M.pair_robustness(rank_a, rank_b, ks, cut))
    out.update({f"{POOL_PREFIX}{k}": (M.hit_at_k(rank_a, k) + M.hit_at_k(rank_b, k)) / 2 for k in ks})
    for side, r in zip(kind.sides, (rank_a, rank_b), strict=False):
        for k, v in M.effectiveness(r, ks, cut).items():
            out[kind.side_name(k, side)] = v
    return out


def query_values(cfg: TaskConfig, ranks: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query effectiveness of a syntactic task (error tasks keep theirs per pair, by side)."""
    if not cfg.pairtype.effectiveness_per_query:
        return {}
    return M.effectiveness(ranks, cfg.k_values, cfg.rr_cutoff)


def effective_unit(cfg: TaskConfig, unit: str) -> str:
    """The unit a task is resampled by: the authors' macro variant always resamples ASINs."""
    return "target" if cfg.macro_average else unit


def _labels(pairs: PairSet, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(pair labels (n_pairs, 1 or 2), query labels (n_queries,)) of ``unit``."""
    if unit == "pair":
        return np.asarray(pairs.pair_ids, dtype=object)[:, None], np.asarray(
            pairs.query_pair_ids, dtype=object
        )
    if unit == "target":
        return np.asarray(pairs.groups, dtype=object)[:, None], np.asarray(pairs.targets, dtype=object)
    users = np.asarray(pairs.users, dtype=object)
    ua, ub = users[pairs.pair_a], users[pairs.pair_b]
    two = np.stack([ua, ub], axis=1) if np.any(ua != ub) else ua[:, None]
    return two, users


def task_design(cfg: TaskConfig, pairs: PairSet, ranks: np.ndarray, *, unit: str,
                keep: np.ndarray | None = None, ranks_b: np.ndarray | None = None,
                extra: Mapping[str, np.ndarray] | None = None) -> Design:  # fmt: skip
    """The bootstrap design of one task (see the module docstring); ``keep`` masks gated pairs.

    ``ranks_b`` (same queries) gives the pair sides their ranks from another array: the paired
    randomization test uses it to score a pair whose two queries took ranks from different systems.
    ``extra`` adds per-pair arrays (aligned with all pairs), e.g. a query rewriter's correction rate.
    """
    unit = effective_unit(cfg, unit)
    keep = np.ones(len(pairs.pair_a), dtype=bool) if keep is None else keep
    pa, pb = pairs.pair_a[keep], pairs.pair_b[keep]
    pair_lab, query_lab = _labels(pairs, unit)
    pair_lab = pair_lab[keep]
    codes, _ = unit_codes(np.concatenate([pair_lab.reshape(-1), query_lab]))
    n_units = int(codes.max()) + 1 if codes.size else 0
    pair_units = codes[: pair_lab.size].reshape(pair_lab.shape)
    query_units = codes[pair_lab.size :]
    values = pair_values(cfg, ranks[pa], (ranks if ranks_b is None else ranks_b)[pb])
    values.update({k: np.asarray(v, dtype=np.float64)[keep] for k, v in (extra or {}).items()})
    base = None
    if cfg.macro_average:  # mean of per-ASIN means: each ASIN weighs 1 whatever its number of pairs
        base = 1.0 / np.bincount(pair_units[:, 0], minlength=n_units)[pair_units[:, 0]] if pa.size else None
        values.pop("rrstd")
    levels = {"pairs": Level(pair_units, values, base)}
    if cfg.pairtype.effectiveness_per_query:
        levels["queries"] = Level(query_units, query_values(cfg, ranks))
    if cfg.macro_average:  # the authors' Stage-11 RRstd: std over all queries of an ASIN (no gate)
        targets = np.asarray(pairs.targets, dtype=object)
        asins, counts = np.unique(targets.astype(str), return_counts=True)
        code_of = {lab: int(c) for lab, c in zip(query_lab.astype(str), query_units, strict=True)}
        per_asin = M.rrstd_per_group(ranks, targets, cfg.rr_cutoff)
        multi = asins[counts >= 2]
        levels["asins"] = Level(np.asarray([code_of[a] for a in multi], dtype=np.int64), {"rrstd": per_asin})
    return Design(n_units, levels)


def derive(
    means: Mapping[str, np.ndarray | float], k_values: tuple[int, ...]
) -> dict[str, np.ndarray | float]:
    """Add the ceiling-aware Flip (``flip@K_expected``, ``flip@K_ratio``) and drop the internal ``_pool@K``.

    Works on point estimates (floats) and on replicate arrays alike; the ratio is NaN where the
    expectation is 0 (every side hit, or none: Flip@K is 0 then too and says nothing).
    """
    out = {k: v for k, v in means.items() if not k.startswith(POOL_PREFIX)}
    if "ndcg@10" in means:  # every query counts once: already pooled
        out[MTEB_MAIN_SCORE] = means["ndcg@10"]
    elif "ndcg@10_clean" in means and "ndcg@10_error" in means:  # one query of each side per pair
        out[MTEB_MAIN_SCORE] = (means["ndcg@10_clean"] + means["ndcg@10_error"]) / 2
    for k in k_values:
        pool = means.get(f"{POOL_PREFIX}{k}")
        if pool is None or f"flip@{k}" not in means:
            continue
        p = np.asarray(pool, dtype=np.float64)
        expected = 2 * p * (1 - p)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(
                expected > 0, np.asarray(means[f"flip@{k}"], dtype=np.float64) / expected, np.nan
            )
        scalar = np.ndim(pool) == 0
        out[f"flip@{k}_expected"] = float(expected) if scalar else expected
        out[f"flip@{k}_ratio"] = float(ratio) if scalar else ratio
    return out
