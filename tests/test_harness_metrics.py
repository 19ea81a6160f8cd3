"""Metrics, ranks and bootstrap: hand-computed values (ranx style) and hypothesis properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pqb.harness.evaluation import metrics as M
from pqb.harness.evaluation.bootstrap import bootstrap_means, percentile_ci
from pqb.harness.evaluation.ranking import ranks_from_lists, target_ranks
from pqb.harness.retrievers.base import topk_stable

INF = math.inf

# ------------------------------------------------------------------------------------------ ranks


def test_target_rank_tie_rule_counts_only_earlier_ties():
    scores = np.array(
        [
            [0.5, 0.9, 0.5, 0.5, 0.1],  # target 2: one higher (doc 1) + one tied earlier (doc 0) -> 3
            [0.5, 0.9, 0.5, 0.5, 0.1],  # target 0: one higher, no tied doc earlier -> 2
            [0.2, 0.3, 0.4, 0.5, 0.6],  # target 4: best, no tie -> 1
        ],
        dtype=np.float32,
    )
    ranks, ties = target_ranks(scores, np.array([2, 0, 4]))
    assert ranks.tolist() == [3.0, 2.0, 1.0]
    assert ties.tolist() == [True, True, False]


def test_target_rank_agrees_with_stable_topk():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=(20, 30)).astype(np.float32)  # many ties
    top = topk_stable(scores, 30).indices
    for q in range(20):
        for t in (0, 7, 29):
            rank, _ = target_ranks(scores[q : q + 1], np.array([t]))
            assert rank[0] == int(np.flatnonzero(top[q] == t)[0]) + 1


def test_missing_target_and_nan_are_unranked():
    scores = np.array([[1.0, 2.0], [np.nan, 1.0]], dtype=np.float32)
    ranks, ties = target_ranks(scores, np.array([-1, 0]))
    assert np.isinf(ranks).all() and not ties.any()


def test_rank_from_lists_absent_is_inf():
    idx = np.array([[4, 2, 7], [1, -1, -1]])
    assert ranks_from_lists(idx, np.array([7, 3])).tolist() == [3.0, INF]


# ----------------------------------------------------------------------------------- per query


def test_hit_rr_ndcg_hand_values():
    ranks = np.array([1, 3, 10, 11, 200, 201, INF])
    assert M.hit_at_k(ranks, 10).tolist() == [1, 1, 1, 0, 0, 0, 0]
    # RR within the top 200: rank 200 counts (1/200), rank 201 and unranked give 0 (not 1/20001)
    assert M.reciprocal_rank(ranks).tolist() == [1, 1 / 3, 1 / 10, 1 / 11, 1 / 200, 0, 0]
    assert M.reciprocal_rank(ranks, cutoff=None)[5] == pytest.approx(1 / 201)
    expected = [1.0, 1 / math.log2(4), 1 / math.log2(11), 0, 0, 0, 0]
    assert M.ndcg_at_k(ranks, 10) == pytest.approx(expected)


# ------------------------------------------------------------------------------------ per pair


def test_flip_and_rrstd_hand_values():
    a = np.array([1, 4, 30, INF])
    b = np.array([2, 12, 31, 1])
    assert M.flip_at_k(a, b, 1).tolist() == [1, 0, 0, 1]  # pair 4: unranked vs rank 1 flips
    assert M.flip_at_k(a, b, 10).tolist() == [0, 1, 0, 1]
    assert M.rr_std(a, b) == pytest.approx(
        [(1 - 1 / 2) / 2, (1 / 4 - 1 / 12) / 2, (1 / 30 - 1 / 31) / 2, 1 / 2]
    )
    # population std (ddof 0) of the two RRs
    assert M.rr_std(a, b)[1] == pytest.approx(np.std([1 / 4, 1 / 12]))


def test_deg_and_mrr_deg_hand_values():
    clean = np.array([1, 3, 250, 5])
    error = np.array([2, 3, 1, INF])
    d = M.error_degradation(clean, error, k_values=(1, 5))
    assert d["deg@1"].tolist() == [1, 0, -1, 0]
    assert d["deg@5"].tolist() == [0, 0, -1, 1]
    assert M.mean_or_nan(d["mrr_deg"]) == pytest.approx(((1 - 1 / 2) + 0 + (0 - 1) + (1 / 5 - 0)) / 4)
    # MRRdeg = MRR(clean) - MRR(error)
    assert M.mean_or_nan(d["mrr_deg"]) == pytest.approx(
        M.reciprocal_rank(clean).mean() - M.reciprocal_rank(error).mean()
    )


def test_empty_pair_sets_give_nan_not_crash():
    e = np.array([], dtype=float)
    out = M.pair_robustness(e, e)
    assert all(v.size == 0 for v in out.values())
    assert math.isnan(M.mean_or_nan(out["flip@10"]))
    assert math.isnan(M.macro_mean(e, np.array([], dtype=object)))
    assert all(math.isnan(x) for x in bootstrap_ci(out)["rrstd"])
    assert M.rrstd_per_group(e, np.array([])).size == 0


# ------------------------------------------------------------------------------ authors' variants


def test_macro_average_per_asin():
    values = np.array([1.0, 0.0, 0.0, 1.0])
    groups = np.array(["A", "A", "A", "B"])  # A: 1/3, B: 1
    assert M.macro_mean(values, groups) == pytest.approx((1 / 3 + 1) / 2)


def bootstrap_ci(values, **kw):
    """Paired percentile CI of each per-pair array, as the evaluator computes it."""
    return {k: percentile_ci(v) for k, v in bootstrap_means(values, **kw).items()}


def test_rrstd_per_group_population_std_over_all_queries():
    ranks = np.array([1, 2, 4, 5, 300])
    groups = np.array(["A", "A", "A", "B", "C"])  # C has one query: dropped
    out = M.rrstd_per_group(ranks, groups)
    assert out == pytest.approx([np.std([1, 1 / 2, 1 / 4])])


def test_similarity_gate():
    assert M.similarity_gate(3, 0.9, similarity=np.array([0.95, 0.9, 0.2])).tolist() == [True, True, False]
    emb = {"a": [1.0, 0.0], "b": [1.0, 0.1], "c": [0.0, 1.0]}
    mask = M.similarity_gate(
        2, 0.9, texts=(["a", "a"], ["b", "c"]), embed=lambda ts: np.array([emb[t] for t in ts])
    )
    assert mask.tolist() == [True, False]
    with pytest.raises(ValueError, match="similarity"):
        M.similarity_gate(2, 0.9)


# ----------------------------------------------------------------------------------- bootstrap


def test_bootstrap_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    vals = {"x": rng.random(300), "y": rng.integers(0, 2, 300).astype(float)}
    ci1 = bootstrap_ci(vals, n_boot=500, seed=3)
    ci2 = bootstrap_ci(vals, n_boot=500, seed=3)
    assert ci1 == ci2
    for k, v in vals.items():
        assert ci1[k][0] <= v.mean() <= ci1[k][1]
    assert bootstrap_ci(vals, n_boot=500, seed=4) != ci1


def test_bootstrap_is_paired_across_metrics():
    v = np.arange(50, dtype=float)
    reps = bootstrap_means({"a": v, "b": 2 * v}, n_boot=100, seed=0)
    assert np.allclose(reps["b"], 2 * reps["a"])  # the same resampled indices for both metrics


def test_constant_values_give_degenerate_ci():
    assert percentile_ci(bootstrap_means({"a": np.ones(10)}, n_boot=50)["a"]) == (1.0, 1.0)


# ------------------------------------------------------------------------------------ properties

ranks_st = st.lists(st.one_of(st.integers(1, 400).map(float), st.just(INF)), min_size=0, max_size=40)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_properties(data):
    a = np.array(data.draw(ranks_st), dtype=float)
    b = np.array(
        data.draw(
            st.lists(
                st.one_of(st.integers(1, 400).map(float), st.just(INF)), min_size=len(a), max_size=len(a)
            )
        ),
        dtype=float,
    )
    k = data.draw(st.sampled_from([1, 5, 10, 20]))
    flip = M.flip_at_k(a, b, k)
    assert ((flip >= 0) & (flip <= 1)).all()
    if a.size:
        assert 0 <= flip.mean() <= 1
    # Deg@K antisymmetric when clean and error are swapped
    assert np.array_equal(M.deg_at_k(a, b, k), -M.deg_at_k(b, a, k))
    assert np.allclose(M.rr_deg(a, b), -M.rr_deg(b, a))
    # RRstd = |ΔRR| / 2 = population std of the two RRs, and symmetric
    rra, rrb = M.reciprocal_rank(a), M.reciprocal_rank(b)
    assert np.allclose(M.rr_std(a, b), np.abs(rra - rrb) / 2)
    if a.size:
        assert np.allclose(M.rr_std(a, b), np.std(np.stack([rra, rrb]), axis=0))
    assert np.array_equal(M.flip_at_k(a, b, k), M.flip_at_k(b, a, k))


def test_last_bit_float_differences_count_as_ties() -> None:
    """Two identical documents may get scores one float32 ulp apart; corpus order must still decide."""
    from pqb.harness.evaluation.ranking import target_ranks

    a = np.float32(1.7985868)
    b = np.float32(1.7985870)
    scores = np.array([[b, a, 0.5]], dtype=np.float32)  # doc 0 (earlier) is 1 ulp above the target
    ranks, ties = target_ranks(scores, np.array([1]))
    assert ranks.tolist() == [2.0] and ties.tolist() == [True]
    scores = np.array([[a, b, 0.5]], dtype=np.float32)  # target first in corpus order wins the tie
    ranks, ties = target_ranks(scores, np.array([0]))
    assert ranks.tolist() == [1.0] and ties.tolist() == [True]
    scores = np.array([[1.80, 1.79, 0.5]], dtype=np.float32)  # a real difference is not a tie
    ranks, ties = target_ranks(scores, np.array([1]))
    assert ranks.tolist() == [2.0] and ties.tolist() == [False]


def test_logged_top_k_lists_agree_with_reported_ranks_under_near_ties() -> None:
    """Samples/TREC files list documents in the order the reported ranks imply (same tie rule)."""
    from pqb.harness.evaluation.ranking import target_ranks
    from pqb.harness.retrievers.base import topk_stable

    rng = np.random.default_rng(0)
    base = rng.integers(0, 6, size=(40, 30)).astype(np.float32)  # many exact ties
    jitter = rng.integers(0, 2, size=base.shape).astype(np.float32) * np.float32(1e-7)  # 1-ulp near-ties
    scores = base + jitter
    order = topk_stable(scores, 30).indices
    for q in range(scores.shape[0]):
        ranks, _ = target_ranks(np.repeat(scores[q : q + 1], 30, axis=0), np.arange(30))
        assert np.array_equal(np.argsort(ranks, kind="stable"), order[q])
