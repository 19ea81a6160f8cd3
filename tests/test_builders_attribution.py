"""Attribution metrics on synthetic users with known separability."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from pqb.builders.reports.attribution import (
    DECISIVE_MARGIN,
    METHODS,
    auroc,
    decisive_attribution,
    pairwise_accuracy,
    run_attribution,
    to_markdown,
    vmf_kappa,
)


def _users(sep: float, n_users: int = 6, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    prof, held = {}, {}
    for u in range(n_users):
        c = rng.normal(size=16) * sep
        Z = c + rng.normal(size=(30, 16))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        prof[f"u{u}"], held[f"u{u}"] = Z[:24], Z[24:]
    return prof, held


def test_auroc_matches_sklearn_with_ties() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, 300).astype(float)
    y = rng.random(300) < 0.3
    assert auroc(s, y) == pytest.approx(roc_auc_score(y, s))


def test_pairwise_accuracy_small() -> None:
    S = np.array([[2.0, 1.0], [0.0, 0.0], [1.0, 3.0]])
    acc = pairwise_accuracy(S, np.array([0, 0, 1]), 2)
    # user 0: one win (2 > 1) and one tie (0 = 0) against user 1; user 1: one win (3 > 1)
    np.testing.assert_allclose(acc, [[0.5, 0.75], [1.0, 0.5]])


def test_separable_users_are_attributed() -> None:
    prof, held = _users(sep=3.0)
    res = {r.key: r for r in run_attribution(prof, held, n_boot=50, seed=0)}
    assert set(res) == set(METHODS)
    for r in res.values():
        assert r.balanced > 0.9 and r.auroc > 0.8 and r.full_top1 > 0.8, r
        assert r.full_pairwise >= r.full_top1 and r.full_pairwise > 0.95
        assert (r.decisive_share is None) == (r.key in {"mean_cosine", "knn"})
        assert r.balanced_ci[0] <= r.balanced <= r.balanced_ci[1] + 1e-9


def test_indistinguishable_users_are_near_chance() -> None:
    prof, held = _users(sep=0.0, n_users=8, seed=1)
    r = {r.key: r for r in run_attribution(prof, held, n_boot=20, seed=0)}["rank1_diag"]
    assert 0.35 < r.balanced < 0.65


def test_deterministic_and_markdown() -> None:
    prof, held = _users(sep=0.5)
    a = run_attribution(prof, held, n_boot=30, seed=3, coreview=[("u0", "u1")])
    b = run_attribution(prof, held, n_boot=30, seed=3, coreview=[("u0", "u1")])
    assert [x.as_dict() for x in a] == [x.as_dict() for x in b]
    assert a[0].n_coreview_pairs == 1
    md = to_markdown(a, {"users": 6})
    assert "Rank-One + Diagonal Gaussian" in md and "(65.55, 0.6265, 65.52)" in md


def test_full_profile_pairwise_is_not_top1_of_n() -> None:
    """With many users, 1-of-n Top-1 sits far below the pairwise form at the same separability."""
    prof, held = _users(sep=0.25, n_users=30, seed=2)
    r = {r.key: r for r in run_attribution(prof, held, n_boot=20, seed=0)}["rank1_diag"]
    assert r.full_pairwise > 0.5 and r.full_top1 < r.full_pairwise - 0.2
    assert r.full_pairwise_ci[0] <= r.full_pairwise <= r.full_pairwise_ci[1] + 1e-9


def test_decisive_attribution_by_hand() -> None:
    m = DECISIVE_MARGIN  # ~1.151
    S = np.array([[0.0, -2.0], [0.0, -0.5], [0.0, 3.0], [-3.0, 0.0]])
    author = np.array([0, 0, 0, 1])
    share, bal = decisive_attribution(S, author, 2)
    # user 0: sentence 0 decisive and right, 1 not decisive, 2 decisive and wrong; user 1: decisive, right
    assert share == pytest.approx(3 / 4)
    assert bal == pytest.approx((0.5 + 1.0) / 2)
    assert m == pytest.approx(0.5 * np.log(10))


def test_vmf_kappa_grows_with_concentration() -> None:
    rng = np.random.default_rng(0)
    tight = np.array([1.0] + [0] * 15) + 0.05 * rng.normal(size=(50, 16))
    loose = rng.normal(size=(50, 16))
    assert vmf_kappa(tight) > 10 * vmf_kappa(loose)
