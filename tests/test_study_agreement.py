"""The study's agreement statistics against published worked examples, and its adjudication rule."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("krippendorff", reason="the study's agreement statistics need pqb-benchmark[study]")
pytest.importorskip("sklearn", reason="the study's agreement statistics need pqb-benchmark[study]")

from pqb.builders.study.agreement import (
    bootstrap_mean,
    cohen_kappa,
    disagree,
    final_value,
    krippendorff_alpha,
    pairwise_kappa,
    summarise,
)
from pqb.builders.study.rubric import BY_NAME, Dimension

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12 units,
# values 1-5, missing marked None. Published: nominal 0.743, ordinal 0.815, interval 0.849.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def _labels() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for rater, values in KRIPPENDORFF_2011.items():
        for unit, v in enumerate(values):
            if v is not None:
                out.setdefault(f"u{unit:02d}", {})[rater] = str(v)
    return out


@pytest.mark.parametrize(("level", "published"), [("ordinal", 0.815), ("nominal", 0.743)])
def test_alpha_matches_krippendorffs_worked_example(level: str, published: float) -> None:
    dim = Dimension("x", "syntactic", level, ("1", "2", "3", "4", "5"), "", ("",) * 5)
    labels = {u: v for u, v in _labels().items() if len(v) >= 2}  # a unit with one value is not pairable
    assert krippendorff_alpha(dim, labels, list(KRIPPENDORFF_2011)) == pytest.approx(published, abs=5e-4)


def test_alpha_is_none_when_every_rating_is_the_same() -> None:
    dim = BY_NAME["naturalness"]
    assert krippendorff_alpha(dim, {"a": {"x": "4", "y": "4"}, "b": {"x": "4", "y": "4"}}, ["x", "y"]) is None


def test_cohen_kappa_matches_the_textbook_example() -> None:
    """Wikipedia's Cohen's kappa example: 50 items; both yes 20, A yes/B no 5, A no/B yes 10, both no 15:
    p_o = 0.7, p_e = 0.5, kappa = 0.4."""
    a = ["A"] * 20 + ["A"] * 5 + ["B"] * 10 + ["B"] * 15
    b = ["A"] * 20 + ["B"] * 5 + ["A"] * 10 + ["B"] * 15
    assert cohen_kappa(BY_NAME["attribution"], a, b) == pytest.approx(0.4)


def test_weighted_kappa_by_hand() -> None:
    """Quadratic weights, two raters, 4 items on the 1-5 scale, computed from the definition."""
    a, b = ["1", "2", "3", "5"], ["1", "3", "3", "4"]
    cats = [1, 2, 3, 4, 5]
    w = {(i, j): (i - j) ** 2 / 16 for i in cats for j in cats}
    obs = sum(w[int(x), int(y)] for x, y in zip(a, b, strict=True)) / 4
    pa = {c: a.count(str(c)) / 4 for c in cats}
    pb = {c: b.count(str(c)) / 4 for c in cats}
    exp = sum(w[i, j] * pa[i] * pb[j] for i in cats for j in cats)
    assert cohen_kappa(BY_NAME["naturalness"], a, b) == pytest.approx(1 - obs / exp)


def test_pairwise_kappa_averages_pairs_with_shared_items() -> None:
    labels = {
        "i1": {"x": "A", "y": "A", "z": "B"},
        "i2": {"x": "B", "y": "B", "z": "B"},
        "i3": {"x": "A", "y": "B"},
    }
    got = pairwise_kappa(BY_NAME["attribution"], labels, ["x", "y", "z"])
    assert set(got["pairs"]) == {"x|y", "x|z", "y|z"}
    assert got["pairs"]["x|y"]["items"] == 3
    assert got["mean"] == pytest.approx(sum(p["kappa"] for p in got["pairs"].values()) / 3)


def test_adjudication_rule() -> None:
    nat, att = BY_NAME["naturalness"], BY_NAME["attribution"]
    assert not disagree(nat, ["3", "4"]) and disagree(nat, ["2", "4"])
    assert final_value(nat, ["3", "4"], None) == 3.5  # agreement within a point: the mean
    assert final_value(nat, ["2", "5"], "4") == 4.0  # the adjudicator decides the side
    assert final_value(nat, ["2", "5"], "1") == 2.0  # median of (2, 5, 1)
    assert final_value(nat, ["2", "5"], None) == 3.5  # not adjudicated: the mean
    assert final_value(att, ["A", "A"], None) == "A"
    assert final_value(att, ["A", "B"], "none") == "none"
    assert final_value(att, ["A", "B"], None) is None  # a tie stays unresolved
    assert final_value(att, ["A", "A", "B"], None) == "A"


def test_summarise_rates_and_chance() -> None:
    finals = {
        "naturalness": {"a": 4.0, "b": 2.0},
        "syntactic_quality": {},
        "attribution": {"a": "A", "b": "B", "c": "none", "d": "A"},
        "error_consistency": {"e": "strict", "f": "acceptable", "g": "fail", "h": "strict"},
    }
    truth = {"a": "A", "b": "A", "c": "B", "d": "A"}
    s = summarise(finals, truth, n_boot=50, seed=0, purpose="t")
    assert s["naturalness"]["value"] == 3.0 and s["syntactic_quality"]["value"] is None
    assert s["attribution"]["value"] == pytest.approx(2 / 3)  # decisive answers only
    assert s["no_preference"]["value"] == pytest.approx(1 / 4)
    assert s["error_strict"]["value"] == 0.5 and s["error_acceptable"]["value"] == 0.75
    ci = bootstrap_mean([1.0, 0.0, 1.0, 1.0], 200, 0, "ci")
    assert ci["lo"] <= ci["value"] <= ci["hi"] and not math.isnan(ci["lo"])
