"""Pairing: the farthest user pair, inside-own/outside-partner selection, gates, and injection seeding.

Gaussians are hand-built in 2-D with (near-)isotropic unit covariance, so D² is the squared Euclidean
distance to the mean and expected choices can be checked by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pqb.builders.config import PairConfig
from pqb.builders.pairing.pairs import Selection, pair_products, ranked_pairs, select_for_user, select_pair
from pqb.builders.queries.generate import Candidate
from pqb.builders.seeds import derive_seed
from pqb.builders.syntax.gaussian import RankOneDiagGaussian, bhattacharyya, sym_kl
from pqb.dataset.schema import check_rows

# FIXTURES ------------------------------------------------------------------------------------------


def gauss(x: float, y: float, threshold: float = 4.0) -> RankOneDiagGaussian:
    """Unit isotropic Gaussian at (x, y) (rank-one part negligible): D² = squared distance to the mean."""
    return RankOneDiagGaussian(np.array([x, y]), np.array([1.0, 0.0]), 1e-9, np.ones(2), threshold, "test")


G = {"a": gauss(0, 0), "b": gauss(10, 0), "c": gauss(1, 0), "d": gauss(0, 3)}
# candidate -> point; a's region (D² <= 4) holds c0..c2, b's region c3, c4
POINTS = {
    "c0": (0.0, 0.0),
    "c1": (1.5, 0.0),
    "c2": (0.5, 0.5),
    "c3": (10.0, 0.0),
    "c4": (9.0, 0.5),
    "c5": (5, 5),
}


def encode(texts: list[str]) -> np.ndarray:
    return np.array([POINTS[t.split()[0]] for t in texts], dtype=float)


Z = encode(list(POINTS))

# TESTS ---------------------------------------------------------------------------------------------


def test_ranked_pairs_farthest_first_and_ignores_unfitted_users() -> None:
    pairs = ranked_pairs(["c", "a", "b", "zz"], G, sym_kl)
    assert [(a, b) for _, a, b in pairs] == [("a", "b"), ("b", "c"), ("a", "c")]
    # unit covariances: sym KL = squared distance between means
    assert [p[0] for p in pairs] == pytest.approx([100.0, 81.0, 1.0], rel=1e-6)
    assert ranked_pairs(["a", "b", "c"], G, bhattacharyya)[0][1:] == ("a", "b")


def test_selection_prefers_highest_density_inside_own_outside_partner() -> None:
    sel = select_for_user(Z, G["a"], G["b"], "a")
    assert isinstance(sel, Selection)
    assert sel.index == 0 and sel.own_d2 == pytest.approx(0.0) and sel.partner_d2 == pytest.approx(100.0)
    # partner c (at (1,0), threshold 4) contains c0, c1 and c2 -> nothing of a's region is outside c's
    assert select_for_user(Z, G["a"], G["c"], "a") == "no_candidate_outside_partner"
    # with a tighter partner region (c, threshold 0.3) only c0 (D²_c = 1) and c2 (D²_c = 0.5) qualify;
    # c0 has the higher own density (D²_a = 0 < 0.5)
    tight = gauss(1, 0, threshold=0.3)
    assert select_for_user(Z, G["a"], tight, "a").index == 0
    tight_c = gauss(0, 0.1, threshold=0.05)  # partner now contains c0 only
    chosen = select_for_user(Z, G["a"], tight_c, "a")
    assert chosen.index == 2  # c2 (D²_a = 0.5) beats c1 (D²_a = 2.25)
    assert select_for_user(Z, gauss(50, 50), G["b"], "x") == "no_candidate_inside_own"


def test_select_pair_gates() -> None:
    assert select_pair(Z, [], G, sym_kl) == (None, "no_users")
    assert select_pair(Z, ["a", "nobody"], G, sym_kl) == (None, "one_user")
    # farthest pair of a, b, c is (a, b), although (b, c) would also work
    result, gate = select_pair(Z, ["c", "b", "a"], G, sym_kl)
    assert gate is None
    sa, sb, dist, rank = result
    assert (sa.user, sb.user, rank, sa.index, sb.index) == ("a", "b", 0, 0, 3)
    assert dist == pytest.approx(100.0, rel=1e-6)


def test_fallback_to_next_pair_only_when_allowed() -> None:
    users = ["a", "b", "d"]  # pairs by distance: (b, d) 109, (a, b) 100, (a, d) 9
    g = dict(G, d=gauss(0, 3, threshold=0.01))  # d's region holds no candidate
    assert select_pair(Z, users, g, sym_kl, max_pairs_tried=1) == (None, "no_candidate_inside_own")
    result, _ = select_pair(Z, users, g, sym_kl, max_pairs_tried=3)
    assert result is not None and (result[0].user, result[1].user, result[3]) == ("a", "b", 1)


class FakeInjector:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, list[str], int, dict[str, Any]]] = []

    def inject(self, query: str, user_id: str, protected: list[str], seed: int, **where: Any) -> Any:
        self.calls.append((query, user_id, list(protected), seed, where))
        from types import SimpleNamespace

        if user_id == "b":
            return SimpleNamespace(error_query=None, edits=[], reason="no_profile")
        i = query.index("query")
        edit = {
            "start": i,
            "end": i + 5,
            "original": "query",
            "edited": "qeury",
            "mechanism": "transposition",
            "location": "content_word",
            "position": "interior",
        }
        return SimpleNamespace(
            error_query=query[:i] + "qeury" + query[i + 5 :], edits=[edit], chain=[edit], reason="ok",
            profile_evidence=1, backoff=True,
        )  # fmt: skip


def test_pair_products_rows_counts_and_injection_seeds() -> None:
    product = {
        "parent_asin": "P1", "core_terms": ["alpha", "beta", "gamma", "delta", "omega"],
        "protected_terms": ["acme"], "attributes": [{"name": "Brand", "value": "alpha"}],
    }  # fmt: skip
    terms = "alpha beta gamma delta omega"
    cands = {"P1": [Candidate(f"{k} query {terms}", "f", "t") for k in POINTS], "P2": []}
    inj = FakeInjector()
    encoded: list[int] = []

    def counting_encode(texts: list[str]) -> np.ndarray:
        encoded.append(len(texts))
        return encode(texts)

    rows, counts = pair_products(
        "video_games",
        [product, dict(product, parent_asin="P2"), dict(product, parent_asin="P3")],
        cands | {"P3": cands["P1"]},
        {"P1": ["a", "b"], "P3": ["a"]},
        G,
        counting_encode,
        config=PairConfig(),
        seed=5,
        injector=inj,
        progress=False,
    )
    assert counts["paired"] == 1 and counts["fail_no_candidates"] == 1 and counts["fail_one_user"] == 1
    assert encoded == [len(POINTS)]  # P3, one linked user, is gated before its candidates are encoded
    assert counts["rows"] == 2 and counts["error_pairs"] == 1
    assert counts["inject_ok"] == 1 and counts["inject_no_profile"] == 1
    by_user = {r["user_id"]: r for r in rows}
    assert by_user["a"]["query"].startswith("c0") and by_user["b"]["query"].startswith("c3")
    assert by_user["a"]["pair_id"] == by_user["b"]["pair_id"] == "video_games:P1"
    assert by_user["a"]["syntax"]["pair_distance"] == pytest.approx(100.0, rel=1e-6)
    assert by_user["a"]["error_query"].startswith("c0 qeury")
    assert [c[3] for c in inj.calls] == [derive_seed(5, "P1", "a"), derive_seed(5, "P1", "b")]
    assert inj.calls[0][2] == []  # nothing protected by exclusion: core terms only label locations
    assert inj.calls[0][4]["core_terms"] == product["core_terms"]
    assert by_user["a"]["error_chain"] == by_user["a"]["error_edits"] and by_user["a"]["backoff"] is True
    assert check_rows(rows).ok
