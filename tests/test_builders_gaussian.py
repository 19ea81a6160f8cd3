"""Exact Mahalanobis / log-density / KL / Bhattacharyya against dense numpy; audit; persistence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from builders.gaussian import (
    LowRankDiagGaussian,
    RankOneDiagGaussian,
    audit,
    bhattacharyya,
    chi2_threshold,
    empirical_quantile,
    kl,
    load_gaussians,
    save_gaussians,
    sym_kl,
)

D = 16


def _data(seed: int, n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, D)) @ rng.normal(size=(D, D)) * 0.3 + rng.normal(size=D)


def _dense_kl(a: LowRankDiagGaussian, b: LowRankDiagGaussian) -> float:
    Sa, Sb = a.covariance(), b.covariance()
    Ib, dm = np.linalg.inv(Sb), b.mu - a.mu
    return 0.5 * (np.trace(Ib @ Sa) + dm @ Ib @ dm - D + np.linalg.slogdet(Sb)[1] - np.linalg.slogdet(Sa)[1])


def test_fit_is_the_closed_form() -> None:
    Z = _data(0)
    g = RankOneDiagGaussian.fit(Z)
    S = np.cov(Z, rowvar=False, ddof=1)
    w, U = np.linalg.eigh(S)
    np.testing.assert_allclose(g.mu, Z.mean(0))
    assert g.lam == pytest.approx(w[-1])
    assert abs(abs(g.v @ U[:, -1]) - 1) < 1e-10
    np.testing.assert_allclose(g.sigma2, np.maximum(np.diag(S) - g.lam * g.v**2, 1e-4))


@pytest.mark.parametrize("rank", [1, 2])
def test_mahalanobis_and_logpdf_exact(rank: int) -> None:
    g = LowRankDiagGaussian.fit(_data(1), rank=rank)
    X = np.random.default_rng(2).normal(size=(50, D))
    S = g.covariance()
    R = X - g.mu
    np.testing.assert_allclose(g.mahalanobis2(X), np.einsum("nd,de,ne->n", R, np.linalg.inv(S), R), rtol=1e-9)
    np.testing.assert_allclose(g.logpdf(X), multivariate_normal(g.mu, S).logpdf(X), rtol=1e-9)
    assert g.logdet() == pytest.approx(np.linalg.slogdet(S)[1], rel=1e-10)


def test_mahalanobis_differs_from_the_authors_approximation() -> None:
    g = RankOneDiagGaussian.fit(_data(3))
    X = np.random.default_rng(4).normal(size=(20, D))
    R = X - g.mu
    t = R @ g.v
    approx = t**2 / g.lam + (((R - t[:, None] * g.v) ** 2) / g.sigma2).sum(1)
    assert not np.allclose(approx, g.mahalanobis2(X))


def test_kl_sym_kl_bhattacharyya_exact() -> None:
    a, b = RankOneDiagGaussian.fit(_data(5)), LowRankDiagGaussian.fit(_data(6), rank=2)
    assert kl(a, b) == pytest.approx(_dense_kl(a, b), rel=1e-9)
    assert sym_kl(a, b) == pytest.approx(_dense_kl(a, b) + _dense_kl(b, a), rel=1e-9)
    assert sym_kl(a, a) == pytest.approx(0, abs=1e-9)
    Sm = (a.covariance() + b.covariance()) / 2
    dm = a.mu - b.mu
    dense_b = dm @ np.linalg.inv(Sm) @ dm / 8 + 0.5 * (
        np.linalg.slogdet(Sm)[1]
        - 0.5 * (np.linalg.slogdet(a.covariance())[1] + np.linalg.slogdet(b.covariance())[1])
    )
    assert bhattacharyya(a, b) == pytest.approx(dense_b, rel=1e-9)
    assert bhattacharyya(a, b) == pytest.approx(bhattacharyya(b, a), rel=1e-12)


def test_thresholds_and_audit() -> None:
    assert chi2_threshold(0.95, 16) == pytest.approx(26.2962, abs=1e-3)
    assert empirical_quantile(np.arange(10.0), 0.95) == 8.0  # index floor(0.95 * 9) = 8
    Z = _data(7, 60)
    g = RankOneDiagGaussian.fit(Z[:48])
    rep = audit(g, Z[:48], Z[48:], threshold=chi2_threshold(), n_subsamples=20, seed=0)
    assert rep["audit_numerics"] and rep["fit_success_rate"] == 1.0
    assert set(rep) >= {
        "audit_calibration",
        "audit_stability",
        "valid",
        "median_spearman",
        "median_agreement",
    }
    assert rep == audit(g, Z[:48], Z[48:], threshold=chi2_threshold(), n_subsamples=20, seed=0)


def test_save_load_roundtrip(tmp_path) -> None:
    gs = {}
    for i, uid in enumerate(["u2", "u1"]):
        g = RankOneDiagGaussian.fit(_data(10 + i), threshold=26.3, threshold_kind="chi2_16_q0.95")
        g.audit = {"valid": True, "n_profile": 40, "heldout_q95": 3.5}
        gs[uid] = g
    save_gaussians(tmp_path / "g.parquet", gs)
    back = load_gaussians(tmp_path / "g.parquet")
    assert list(back) == ["u1", "u2"]
    for uid in gs:
        np.testing.assert_array_equal(back[uid].mu, gs[uid].mu)
        np.testing.assert_array_equal(back[uid].v, gs[uid].v)
        assert back[uid].lam == gs[uid].lam and back[uid].threshold == 26.3
        assert back[uid].audit["valid"] is True and back[uid].audit["n_profile"] == 40
    X = np.random.default_rng(0).normal(size=(5, D))
    np.testing.assert_array_equal(back["u1"].logpdf(X), gs["u1"].logpdf(X))
