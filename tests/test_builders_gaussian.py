"""Exact Mahalanobis / log-density / KL / Bhattacharyya against dense numpy; audit; persistence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from pqb.builders.syntax.gaussian import (
    MIN_CALIBRATION,
    LowRankDiagGaussian,
    RankOneDiagGaussian,
    audit,
    bhattacharyya,
    calibrated_threshold,
    calibration_split,
    chi2_threshold,
    interpolated_quantile,
    kl,
    load_gaussians,
    pooled_prior,
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
    assert interpolated_quantile(np.arange(10.0), 0.95) == pytest.approx(8.55)  # h = 0.95 * 9
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


def test_quantile_rule_at_n_2_5_50() -> None:
    chi = chi2_threshold(0.95, 16)
    # n = 2: interpolated q95 is 95% of the way to the larger value (the old rule gave the smaller),
    # then shrunk toward chi2 with weight 2/20
    two = np.array([10.0, 50.0])
    assert interpolated_quantile(two, 0.95) == pytest.approx(48.0)
    t2, rule2 = calibrated_threshold(two)
    assert rule2 == "shrunk" and t2 == pytest.approx(0.1 * 48.0 + 0.9 * chi)
    # n = 5: h = 3.8, between the 4th and 5th values; weight 5/20
    five = np.array([5.0, 1.0, 4.0, 2.0, 3.0]) * 10
    assert interpolated_quantile(five, 0.95) == pytest.approx(48.0)
    t5, rule5 = calibrated_threshold(five)
    assert rule5 == "shrunk" and t5 == pytest.approx(0.25 * 48.0 + 0.75 * chi)
    # n = 50 >= MIN_CALIBRATION: the user's own quantile alone, equal to numpy's default (type 7)
    fifty = np.random.default_rng(3).chisquare(16, 50) * 1.7
    t50, rule50 = calibrated_threshold(fifty)
    assert MIN_CALIBRATION <= 50 and rule50 == "calibrated"
    assert t50 == pytest.approx(float(np.quantile(fifty, 0.95)), rel=1e-12)
    # fewer than 2 values: the chi2 bound
    assert calibrated_threshold(np.array([99.0])) == (chi, "prior_fallback")
    assert calibrated_threshold(np.array([])) == (chi, "prior_fallback")


def test_audit_split_is_disjoint_from_calibration_split() -> None:
    ids = [f"user|{i}|0" for i in range(13)]
    cal, aud = calibration_split(ids)
    assert set(cal).isdisjoint(aud) and sorted(cal + aud) == list(range(13))
    assert (len(cal), len(aud)) == (7, 6)
    assert calibration_split(ids) == (cal, aud)  # deterministic
    # independent of order: the same sentences land on the same side when listed in reverse
    rc, _ = calibration_split(ids[::-1])
    assert {ids[::-1][i] for i in rc} == {ids[i] for i in cal}
    assert calibration_split(["a", "b"])[0] and calibration_split(["a", "b"])[1]  # both sides from n = 2


def test_audit_judges_the_threshold_on_the_audit_split_only() -> None:
    Z = _data(11, 70)
    g = RankOneDiagGaussian.fit(Z[:40])
    held = Z[40:]
    d2 = g.mahalanobis2(held)
    cal, aud = calibration_split([str(i) for i in range(len(held))])
    thr, _ = calibrated_threshold(d2[cal])
    rep = audit(g, Z[:40], held[aud], threshold=thr, stability=held, n_subsamples=5, seed=0)
    assert rep["heldout_frac_inside"] == pytest.approx(float(np.mean(d2[aud] <= thr)))
    assert audit(g, Z[:40], held[:0], threshold=thr, n_subsamples=3)["audit_calibration"] is False


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


def test_pooled_prior_and_shrinkage_toward_it() -> None:
    chi = chi2_threshold(0.95, 16)
    few = [np.array([40.0, 50.0]), np.array([60.0])]
    assert pooled_prior(few) == (chi, "chi2")  # fewer than MIN_CALIBRATION pooled values: the χ² bound
    many = [np.arange(1.0, 11.0), np.arange(11.0, 21.0), np.arange(21.0, 31.0)]  # 1..30
    prior, kind = pooled_prior(many)
    assert kind == "pooled" and prior == pytest.approx(1 + 0.95 * 29)  # type-7 quantile of 1..30
    t, rule = calibrated_threshold(np.array([10.0, 20.0, 30.0, 40.0, 50.0]), prior=prior)
    assert rule == "shrunk" and t == pytest.approx(0.25 * 48.0 + 0.75 * prior)  # q̂ = 40 + 0.8·10
    assert calibrated_threshold(np.array([]), prior=prior) == (prior, "prior_fallback")
