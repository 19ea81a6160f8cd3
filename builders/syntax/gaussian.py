"""Per-user Gaussians with low-rank + diagonal covariance Σ = diag(σ²) + V diag(λ) Vᵀ (docs/design.md §6).

All quantities are exact and use only the structure (O(d·k²) per point, never a d×d inverse):

* Mahalanobis (Woodbury): with D = diag(σ²), a = D⁻¹r, M = diag(λ)⁻¹ + VᵀD⁻¹V,
  r ᵀΣ⁻¹r = rᵀa − (Vᵀa)ᵀ M⁻¹ (Vᵀa). The authors' "D²" dropped the cross terms (docs/design.md §11).
* log det Σ (determinant lemma) = Σ log σ² + log det(I + diag(λ) VᵀD⁻¹V).
* KL and Bhattacharyya between two such Gaussians reuse the same identities; the average of two
  rank-k + diagonal covariances is rank-2k + diagonal, so Bhattacharyya stays exact.

V need not be orthonormal, which is what makes the mixtures above work. ``RankOneDiagGaussian`` is
the paper's model (k = 1); ``LowRankDiagGaussian.fit(..., rank=2)`` is the rank-two baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pqb.builders import linalg
from pqb.builders.workdir import read_parquet, write_parquet

PSD_FLOOR = 1e-6
DIAG_FLOOR = 1e-4
LOG_2PI = float(np.log(2 * np.pi))


def _rows_dot(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` for the small matrices here, as an elementwise product and a numpy sum (no BLAS)."""
    return (A[:, :, None] * B[None, :, :]).sum(axis=1)


def _sym_solve_quad(M: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Row-wise bᵀ M⁻¹ b for a small symmetric positive-definite ``M`` (k × k) and rows ``B`` (n × k)."""
    w, U = linalg.eigh(M)
    C = _rows_dot(B, U)
    return (C * C / w).sum(axis=1)


def moments(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample covariance (n−1) with elementwise sums only, so the bits are machine-independent."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] < 2:
        raise ValueError(f"need >= 2 points to fit a Gaussian, got shape {Z.shape}")
    mu = Z.mean(axis=0)
    R = Z - mu
    return mu, (R[:, :, None] * R[:, None, :]).sum(axis=0) / (len(Z) - 1)


@dataclass(eq=False)
class LowRankDiagGaussian:
    mu: np.ndarray
    V: np.ndarray  # (d, k)
    lams: np.ndarray  # (k,)
    sigma2: np.ndarray  # (d,)
    threshold: float = float("nan")
    threshold_kind: str = "chi2"

    def __post_init__(self) -> None:
        self.mu = np.asarray(self.mu, dtype=np.float64)
        self.V = np.asarray(self.V, dtype=np.float64).reshape(len(self.mu), -1)
        self.lams = np.asarray(self.lams, dtype=np.float64).reshape(-1)
        self.sigma2 = np.asarray(self.sigma2, dtype=np.float64)

    @property
    def dim(self) -> int:
        return len(self.mu)

    @classmethod
    def fit(cls, Z: np.ndarray, rank: int = 1, **kw: Any) -> LowRankDiagGaussian:
        """Closed form: mean, sample covariance (n−1), top-``rank`` eigenpairs (λ ≥ 1e-6), floored residual."""
        return cls.fit_many([Z], rank=rank, **kw)[0]

    @classmethod
    def fit_many(cls, Zs: Sequence[np.ndarray], rank: int = 1, **kw: Any) -> list[LowRankDiagGaussian]:
        """:meth:`fit` for several samples at once: one batched Jacobi solve for all covariances (written
        into one preallocated stack: at 1M LOAD TEST reviews that is 73K users, 150 MB)."""
        if not Zs:
            return []
        mu0, cov0 = moments(Zs[0])
        mus, covs = np.empty((len(Zs), *mu0.shape)), np.empty((len(Zs), *cov0.shape))
        mus[0], covs[0] = mu0, cov0
        for i in range(1, len(Zs)):
            mus[i], covs[i] = moments(Zs[i])
        w, U = linalg.eigh(covs)
        out = []
        for mu, S, wi, Ui in zip(mus, covs, w, U, strict=True):
            lams = np.maximum(wi[:rank], PSD_FLOOR)
            V = Ui[:, :rank].copy()
            V *= np.where(V[np.abs(V).argmax(axis=0), np.arange(rank)] < 0, -1.0, 1.0)  # deterministic sign
            sigma2 = np.maximum(np.diag(S) - (V**2 * lams).sum(axis=1), DIAG_FLOOR)
            out.append(cls(mu, V, lams, sigma2, **kw))
        return out

    def covariance(self) -> np.ndarray:
        """The dense Σ (for tests and small checks only)."""
        return np.diag(self.sigma2) + _rows_dot(self.V * self.lams, self.V.T)

    def _M(self) -> np.ndarray:
        return np.diag(1.0 / self.lams) + _rows_dot(self.V.T, self.V / self.sigma2[:, None])

    def mahalanobis2(self, Z: np.ndarray) -> np.ndarray:
        """Exact squared Mahalanobis distance of each row of ``Z`` (n, d) → (n,)."""
        R = np.atleast_2d(np.asarray(Z, dtype=np.float64)) - self.mu
        A = R / self.sigma2
        return (R * A).sum(axis=1) - _sym_solve_quad(self._M(), _rows_dot(A, self.V))

    def logdet(self) -> float:
        """log det Σ by the matrix determinant lemma (on the symmetric form I + Λ½ VᵀD⁻¹V Λ½)."""
        h = np.sqrt(self.lams)
        K = np.eye(len(self.lams)) + h[:, None] * _rows_dot(self.V.T, self.V / self.sigma2[:, None]) * h
        w, _ = linalg.eigh(K)
        return float(np.log(self.sigma2).sum() + np.log(w).sum())

    def logpdf(self, Z: np.ndarray) -> np.ndarray:
        return -0.5 * (self.mahalanobis2(Z) + self.logdet() + self.dim * LOG_2PI)

    def inv_quad_trace(self, other: LowRankDiagGaussian) -> float:
        """tr(Σ_self⁻¹ Σ_other) without forming either matrix."""
        U = self.V / self.sigma2[:, None]  # D⁻¹V
        w, E = linalg.eigh(self._M())
        C = _rows_dot(U, E) * np.sqrt(other.sigma2)[:, None]  # tr(M⁻¹ Uᵀ diag(σ²_o) U) = Σ C²/w
        t_diag = float((other.sigma2 / self.sigma2).sum() - (C * C / w).sum())
        t_low = float((other.lams * self.mahalanobis2(other.V.T + self.mu)).sum())
        return t_diag + t_low


class RankOneDiagGaussian(LowRankDiagGaussian):
    """The paper's per-user model: Σ = λ v vᵀ + diag(σ²); ``v``/``lam`` expose the single component."""

    def __init__(
        self,
        mu: np.ndarray,
        v: np.ndarray,
        lam: float,
        sigma2: np.ndarray,
        threshold: float = float("nan"),
        threshold_kind: str = "chi2",
        audit: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(mu, np.asarray(v).reshape(-1, 1), np.array([lam]), sigma2, threshold, threshold_kind)
        self.audit = dict(audit or {})

    @property
    def v(self) -> np.ndarray:
        return self.V[:, 0]

    @property
    def lam(self) -> float:
        return float(self.lams[0])

    @classmethod
    def fit_many(  # type: ignore[override]
        cls, Zs: Sequence[np.ndarray], rank: int = 1, **kw: Any
    ) -> list[RankOneDiagGaussian]:
        return [
            cls(g.mu, g.V[:, 0], float(g.lams[0]), g.sigma2, **kw)
            for g in LowRankDiagGaussian.fit_many(Zs, rank=1)
        ]


# --------------------------------------------------------------------------------------------------
# Distances between Gaussians
# --------------------------------------------------------------------------------------------------


def kl(a: LowRankDiagGaussian, b: LowRankDiagGaussian) -> float:
    """KL(N_a ‖ N_b), exact."""
    d = a.dim
    quad = float(b.mahalanobis2(a.mu[None, :])[0])
    return 0.5 * (b.inv_quad_trace(a) + quad - d + b.logdet() - a.logdet())


def sym_kl(a: LowRankDiagGaussian, b: LowRankDiagGaussian) -> float:
    """Symmetric KL (Jeffreys divergence) KL(a‖b) + KL(b‖a): our pair-distance default (docs/design.md §8)."""
    return kl(a, b) + kl(b, a)


SYM_KL_SCREEN_TOL = 1e-9
"""Relative bound, per term magnitude, on how far :func:`sym_kl_matrix` may be from :func:`sym_kl`
(measured: 1e-14 on the embedded build's 99 Gaussians, so the bound holds with a wide margin)."""


def sym_kl_matrix(gs: Sequence[LowRankDiagGaussian]) -> tuple[np.ndarray, np.ndarray]:
    """All-pairs :func:`sym_kl` of rank-one + diagonal Gaussians at once: ``(D, E)`` with
    ``|D[i, j] − sym_kl(gs[i], gs[j])| <= E[i, j]`` (zero diagonal).

    The same closed forms as :meth:`~LowRankDiagGaussian.inv_quad_trace` and
    :meth:`~LowRankDiagGaussian.mahalanobis2`, written as (n × d)·(d × n) products through
    :func:`pqb.builders.linalg.matmul`, so D and E are the same bits on every BLAS kernel. The sums
    run in another order than the per-pair functions, so D is a *screen*: pairing takes the pairs
    that can be the farthest given E and recomputes those with :func:`sym_kl`, which is what reaches
    the dataset. O(n²·d) instead of n² calls of a few hundred small numpy operations each.
    """
    if any(g.V.shape[1] != 1 for g in gs):
        raise ValueError("sym_kl_matrix needs rank-one + diagonal Gaussians")
    mu = np.stack([g.mu for g in gs])
    v = np.stack([g.V[:, 0] for g in gs])
    lam = np.array([g.lams[0] for g in gs])
    s2 = np.stack([g.sigma2 for g in gs])
    d = mu.shape[1]
    inv = 1.0 / s2
    u = v * inv  # D⁻¹v per Gaussian
    vu = (v * u).sum(axis=1)
    m = 1.0 / lam + vu  # the 1×1 Woodbury matrix M
    logdet = np.log(s2).sum(axis=1) + np.log(1.0 + lam * vu)

    def mm(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A·B`` and what bounds its error: K · max|row of A| · max|column of B| (matmul is exact
        to ~2⁻⁴⁶ of that; the tolerance below leaves four orders of magnitude on top)."""
        bound = A.shape[1] * np.abs(A).max(axis=1)[:, None] * np.abs(B).max(axis=0)[None, :]
        return linalg.matmul(A, B), bound

    # KL(a‖b) for rows a, columns b: tr(Σb⁻¹Σa) + (μa−μb)ᵀΣb⁻¹(μa−μb) − d + log|Σb| − log|Σa|
    t_diag, b_diag = mm(s2, inv.T)
    t_corr, b_corr = mm(s2, (u * u).T)
    uv, b_uv = mm(v, u.T)
    t_vv, b_vv = mm(v * v, inv.T)
    q_aa, b_aa = mm(mu * mu, inv.T)
    q_ab, b_ab = mm(mu, (mu * inv).T)
    mu_u, b_mu = mm(mu, u.T)
    q_bb = ((mu * mu) * inv).sum(axis=1)[None, :]
    um = mu_u - (u * mu).sum(axis=1)[None, :]
    t_low = lam[:, None] * (t_vv - uv * uv / m)
    kl = 0.5 * (
        t_diag
        - t_corr / m
        + t_low
        + (q_aa - 2 * q_ab + q_bb)
        - um * um / m
        - d
        + logdet[None, :]
        - logdet[:, None]
    )
    mag = (
        b_diag + (np.abs(t_corr) + b_corr) / m + np.abs(lam[:, None]) * (b_vv + np.abs(t_vv) + (uv * uv + 2 * np.abs(uv) * b_uv) / m)
        + b_aa + np.abs(q_aa) + 2 * (b_ab + np.abs(q_ab)) + q_bb + (um * um + 2 * np.abs(um) * b_mu) / m + d
        + np.abs(logdet)[None, :] + np.abs(logdet)[:, None]
    )  # fmt: skip
    D = kl + kl.T
    E = SYM_KL_SCREEN_TOL * (mag + mag.T)
    np.fill_diagonal(D, 0.0)
    np.fill_diagonal(E, 0.0)
    return D, E


def bhattacharyya(a: LowRankDiagGaussian, b: LowRankDiagGaussian) -> float:
    """Bhattacharyya distance, exact: Σ̄ = (Σa+Σb)/2 is diag + rank-(ka+kb)."""
    mix = LowRankDiagGaussian(
        mu=np.zeros(a.dim),
        V=np.hstack([a.V, b.V]),
        lams=np.concatenate([a.lams, b.lams]) / 2,
        sigma2=(a.sigma2 + b.sigma2) / 2,
    )
    dmu = (a.mu - b.mu)[None, :]
    return float(0.125 * mix.mahalanobis2(dmu)[0] + 0.5 * (mix.logdet() - 0.5 * (a.logdet() + b.logdet())))


# --------------------------------------------------------------------------------------------------
# Thresholds and audit (docs/design.md §6)
# --------------------------------------------------------------------------------------------------


def chi2_threshold(q: float = 0.95, dim: int = 16) -> float:
    from scipy import stats  # seconds to import; a skipped stage never needs it

    return float(stats.chi2.ppf(q, dim))


MIN_CALIBRATION = 20
"""Calibration sentences a user needs for the threshold to be their own 95% quantile alone: with n >= 20
= 1/(1 - 0.95) at least one calibration D² is expected above the true quantile, so the estimate is an
interpolation between observed values rather than an extrapolation past the largest one."""


def interpolated_quantile(values: np.ndarray, q: float) -> float:
    """The linearly interpolated sample quantile (Hyndman & Fan type 7, numpy's default): h = (n−1)q,
    x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋+1₎ − x₍⌊h⌋₎). At n = 2 and q = 0.95 it is 95% of the way from the smaller
    value to the larger; the old order statistic x₍⌊0.95(n−1)⌋₎ was the smaller one."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if not len(v):
        return float("nan")
    h = (len(v) - 1) * q
    lo = int(np.floor(h))
    hi = min(lo + 1, len(v) - 1)
    return float(v[lo] + (h - lo) * (v[hi] - v[lo]))


def calibrated_threshold(
    d2_calibration: np.ndarray,
    q: float = 0.95,
    dim: int = 16,
    n_min: int = MIN_CALIBRATION,
    prior: float | None = None,
) -> tuple[float, str]:
    """A user's acceptance threshold from their calibration D² values, and the rule that applied.

    * n >= ``n_min``: the interpolated ``q`` quantile (``"calibrated"``);
    * 2 <= n < ``n_min``: shrunk toward ``prior``, w·q̂ + (1 − w)·prior with w = n/n_min (``"shrunk"``):
      a handful of values cannot locate a 95% quantile, so the estimate counts in proportion to the
      evidence, and at n = 2 it is mostly the prior;
    * n < 2: the prior alone (``"prior_fallback"``): nothing to interpolate.

    ``prior`` defaults to the model's own bound χ²_dim(q); the profiles stage passes
    :func:`pooled_prior` instead (see there for why).
    """
    prior = chi2_threshold(q, dim) if prior is None else float(prior)
    n = len(d2_calibration)
    if n < 2:
        return prior, "prior_fallback"
    qhat = interpolated_quantile(d2_calibration, q)
    if n >= n_min:
        return qhat, "calibrated"
    w = n / n_min
    return w * qhat + (1 - w) * prior, "shrunk"


def pooled_prior(
    d2_calibration: Sequence[np.ndarray], q: float = 0.95, dim: int = 16, n_min: int = MIN_CALIBRATION
) -> tuple[float, str]:
    """The small-sample prior: the ``q`` quantile of every user's calibration D² under their own Gaussian.

    χ²_dim(q) is the bound of a Gaussian known exactly. Fitted on a user's ~10–40 profile sentences,
    these Gaussians put their own unseen sentences much farther out (on the Video_Games slice the
    median held-out D² is ≈ 38 against χ²₁₆(0.95) = 26.3, for every one of the 99 users), so
    shrinking toward χ² would shrink toward a bound the data already reject. The pooled quantile is
    what the same kind of model does on the same kind of data: an empirical-Bayes prior. Only the
    calibration halves enter it, so every audit split stays unseen. Below ``n_min`` pooled values the
    prior falls back to χ²_dim(q). Returns (value, ``"pooled"`` or ``"chi2"``).
    """
    values = np.concatenate([np.asarray(v, dtype=np.float64) for v in d2_calibration] or [np.zeros(0)])
    if len(values) < n_min:
        return chi2_threshold(q, dim), "chi2"
    return interpolated_quantile(values, q), "pooled"


def calibration_split(
    sentence_ids: Sequence[str], salt: str = "pqb_calibration_v1|"
) -> tuple[list[int], list[int]]:
    """Disjoint (calibration, audit) index lists over a user's held-out sentences.

    The sentences are ordered by a salted SHA-1 of their id and dealt alternately, calibration first:
    both sides are non-empty from 2 sentences on, the split does not depend on file order, and the
    audit never sees a sentence the threshold was computed from.
    """
    import hashlib

    order = sorted(
        range(len(sentence_ids)), key=lambda i: hashlib.sha1(f"{salt}{sentence_ids[i]}".encode()).hexdigest()
    )
    return sorted(order[0::2]), sorted(order[1::2])


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ (average ranks for ties) with elementwise sums: scipy's goes through BLAS."""
    from scipy import stats

    ra, rb = stats.rankdata(a), stats.rankdata(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / np.sqrt((ra * ra).sum() * (rb * rb).sum()))


def audit(
    g: LowRankDiagGaussian,
    profile: np.ndarray,
    heldout: np.ndarray,
    *,
    threshold: float,
    stability: np.ndarray | None = None,
    n_subsamples: int = 20,
    frac: float = 0.8,
    seed: int = 0,
) -> dict[str, Any]:
    """A1 numerics, A2 calibration, A3 stability (20 refits on 80% subsamples; Spearman and agreement).

    ``heldout`` is the audit split: A2 asks whether the threshold, computed elsewhere, holds ≥ 80% of
    these sentences and their median. A3 is about the fit, not the threshold's calibration, so it ranks
    ``stability`` (default ``heldout``; the stage passes every held-out sentence) under the refits.
    """
    d2 = g.mahalanobis2(heldout) if len(heldout) else np.zeros(0)
    stability = heldout if stability is None else stability
    d2_stab = g.mahalanobis2(stability) if len(stability) else np.zeros(0)
    ld = g.logdet()
    a1 = bool(np.all(g.lams > 0) and np.all(g.sigma2 > 0) and np.isfinite(ld) and np.all(np.isfinite(d2)))
    inside = float(np.mean(d2 <= threshold)) if len(d2) else float("nan")
    med = float(np.median(d2)) if len(d2) else float("nan")
    a2 = bool(inside >= 0.8 and med <= threshold)
    rng = np.random.default_rng(seed)
    m = max(2, round(frac * len(profile)))
    subsets = [np.sort(rng.choice(len(profile), size=m, replace=False)) for _ in range(n_subsamples)]
    samples = [profile[idx] for idx in subsets]
    subs = (
        type(g).fit_many(samples)
        if isinstance(g, RankOneDiagGaussian)
        else LowRankDiagGaussian.fit_many(samples, rank=len(g.lams))
    )
    rhos, agree, ok = [], [], 0
    for sub in subs:
        d2s = sub.mahalanobis2(stability) if len(stability) else np.zeros(0)
        if not np.all(np.isfinite(d2s)):
            continue
        ok += 1
        if len(d2_stab):
            agree.append(float(np.mean((d2s <= threshold) == (d2_stab <= threshold))))
        if len(d2_stab) >= 3 and np.ptp(d2_stab) > 0 and np.ptp(d2s) > 0:
            rhos.append(spearman(d2_stab, d2s))
    success = ok / n_subsamples
    med_rho = float(np.median(rhos)) if rhos else float("nan")
    med_agree = float(np.median(agree)) if agree else float("nan")
    a3 = bool(success >= 0.9 and med_rho >= 0.8 and med_agree >= 0.8)
    return {
        "audit_numerics": a1,
        "audit_calibration": a2,
        "audit_stability": a3,
        "valid": a1 and a2 and a3,
        "heldout_frac_inside": inside,
        "heldout_median_d2": med,
        "heldout_q50": interpolated_quantile(d2, 0.5),
        "heldout_q95": interpolated_quantile(d2, 0.95),
        "fit_success_rate": success,
        "median_spearman": med_rho,
        "median_agreement": med_agree,
        "logdet": ld,
    }


# --------------------------------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------------------------------

AUDIT_COLUMNS = (
    ("audit_numerics", pa.bool_()), ("audit_calibration", pa.bool_()), ("audit_stability", pa.bool_()),
    ("valid", pa.bool_()), ("heldout_frac_inside", pa.float64()), ("heldout_median_d2", pa.float64()),
    ("heldout_q50", pa.float64()), ("heldout_q95", pa.float64()), ("fit_success_rate", pa.float64()),
    ("median_spearman", pa.float64()), ("median_agreement", pa.float64()), ("logdet", pa.float64()),
    ("n_profile", pa.int64()), ("n_heldout", pa.int64()), ("n_calibration", pa.int64()),
    ("n_audit", pa.int64()),
)  # fmt: skip
GAUSSIANS_SCHEMA = pa.schema(
    [("user_id", pa.string()), ("mu", pa.list_(pa.float64())), ("v", pa.list_(pa.float64())),
     ("lam", pa.float64()), ("sigma2", pa.list_(pa.float64())), ("threshold", pa.float64()),
     ("threshold_kind", pa.string()), *AUDIT_COLUMNS]
)  # fmt: skip


def save_gaussians(path: Path, gaussians: Mapping[str, RankOneDiagGaussian]) -> None:
    """``gaussians.parquet``: one row per user (sorted), parameters plus audit columns."""
    rows = []
    for uid in sorted(gaussians):
        g = gaussians[uid]
        row = {"user_id": uid, "mu": g.mu.tolist(), "v": g.v.tolist(), "lam": g.lam, "sigma2": g.sigma2.tolist(),
               "threshold": float(g.threshold), "threshold_kind": g.threshold_kind}  # fmt: skip
        for name, typ in AUDIT_COLUMNS:
            val = g.audit.get(name)
            row[name] = None if val is None else (bool(val) if typ == pa.bool_() else
                                                  int(val) if typ == pa.int64() else float(val))  # fmt: skip
        rows.append(row)
    write_parquet(pa.Table.from_pylist(rows, schema=GAUSSIANS_SCHEMA), Path(path))


def load_gaussians(path: Path) -> dict[str, RankOneDiagGaussian]:
    out: dict[str, RankOneDiagGaussian] = {}
    audit_names = [n for n, _ in AUDIT_COLUMNS]
    for r in read_parquet(Path(path)).to_pylist():
        out[r["user_id"]] = RankOneDiagGaussian(
            np.array(r["mu"]), np.array(r["v"]), r["lam"], np.array(r["sigma2"]), r["threshold"],
            r["threshold_kind"], {k: r.get(k) for k in audit_names},
        )  # fmt: skip
    return out
