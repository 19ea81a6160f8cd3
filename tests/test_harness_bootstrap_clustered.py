"""Clustered bootstrap (pqb.harness.evaluation.bootstrap, pqb.harness.evaluation.design) against a slow reference loop on a hand-built
clustered example: whole units are resampled, a syntactic pair under the user unit weighs the product
of its users' draws, replicates are chunk-, process- and seed-deterministic, and clustering widens CIs."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from pqb.harness.evaluation.bootstrap import Design, Level, bootstrap_design, draw_counts, percentile_ci
from pqb.harness.evaluation.design import derive, task_design
from pqb.harness.evaluation.pairs import PairSet
from pqb.harness.evaluation.task_registry import task_from_dict

SYN = task_from_dict({"task": "t_syn", "dataset_name": "x", "pair_type": "syntactic", "k_values": [1, 10]})
ERR = task_from_dict({"task": "t_err", "dataset_name": "x", "pair_type": "error", "k_values": [1, 10]})


def error_pairs_example() -> tuple[PairSet, np.ndarray]:
    """12 error pairs: 4 targets (3 pairs each, strongly correlated inside), 3 users crossing targets."""
    n = 12
    targets = tuple(f"T{i // 3}" for i in range(n))
    users = tuple(f"U{i % 3}" for i in range(n))
    clean = np.asarray([1, 1, 2, 30, 40, 50, 1, 2, 1, 300, 250, 400], dtype=np.float64)
    error = np.asarray([1, 2, 1, 60, 80, 90, 2, 1, 3, np.inf, np.inf, 500], dtype=np.float64)
    ids = tuple(f"r{i}" for i in range(n))
    pairs = PairSet(queries=tuple(f"q{i}" for i in range(2 * n)), targets=targets + targets,
                    query_ids=ids + tuple(f"{i}_error" for i in ids), row_index=np.arange(2 * n) % n,
                    pair_a=np.arange(n), pair_b=np.arange(n, 2 * n), pair_ids=ids, groups=targets,
                    users=users + users, query_pair_ids=ids + ids)  # fmt: skip
    return pairs, np.concatenate([clean, error])


def syntactic_example() -> tuple[PairSet, np.ndarray]:
    """6 syntactic pairs, each between two of 4 users (so the user unit needs product weights)."""
    users_of = [("A", "B"), ("A", "C"), ("B", "C"), ("C", "D"), ("A", "D"), ("B", "D")]
    users = tuple(u for pair in users_of for u in pair)
    targets = tuple(f"T{i // 2}" for i in range(6) for _ in range(2))
    ranks = np.asarray([1, 15, 2, 3, 40, 1, 7, 9, 1, 1, 250, 3], dtype=np.float64)
    pids = tuple(f"p{i}" for i in range(6))
    pairs = PairSet(queries=tuple(f"q{i}" for i in range(12)), targets=targets,
                    query_ids=tuple(f"id{i}" for i in range(12)), row_index=np.arange(12),
                    pair_a=np.arange(0, 12, 2), pair_b=np.arange(1, 12, 2), pair_ids=pids,
                    groups=targets[::2], users=users, query_pair_ids=tuple(p for p in pids for _ in range(2)))  # fmt: skip
    return pairs, ranks


def reference_replicates(obs_units: list[tuple[str, ...]], values: np.ndarray, unit_labels: list[str],
                         n_boot: int, seed: int) -> np.ndarray:  # fmt: skip
    """The slow definition: draw ``U`` units with replacement; every observation of a drawn unit is
    copied in (a two-unit observation once per ordered pair of draws hitting its two units); mean."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        drawn = [unit_labels[i] for i in rng.integers(0, len(unit_labels), len(unit_labels))]
        sample = []
        for i, units in enumerate(obs_units):
            if len(units) == 1:
                sample += [values[i]] * sum(d == units[0] for d in drawn)
            else:
                sample += [values[i]] * sum(1 for x, y in itertools.product(drawn, drawn) if (x, y) == units)
        out.append(np.mean(sample) if sample else np.nan)
    return np.asarray(out)


@pytest.mark.parametrize("unit", ["pair", "target", "user"])
def test_error_task_replicates_equal_the_reference_loop(unit):
    pairs, ranks = error_pairs_example()
    design = task_design(ERR, pairs, ranks, unit=unit)
    reps = bootstrap_design(design, n_boot=300, seed=7)
    labels = {"pair": pairs.pair_ids, "target": pairs.groups, "user": pairs.users[:12]}[unit]
    units = sorted(set(labels))
    values = design.levels["pairs"].values["deg@10"]
    ref = reference_replicates([(x,) for x in labels], values, units, 300, 7)
    np.testing.assert_allclose(reps["deg@10"], ref, rtol=1e-12)
    assert design.n_units == len(units)


def test_syntactic_user_unit_uses_product_weights():
    pairs, ranks = syntactic_example()
    design = task_design(SYN, pairs, ranks, unit="user")
    assert design.levels["pairs"].units.shape == (6, 2)
    reps = bootstrap_design(design, n_boot=200, seed=3)
    users = np.asarray(pairs.users)
    obs = [(users[a], users[b]) for a, b in zip(pairs.pair_a, pairs.pair_b, strict=True)]
    ref = reference_replicates(obs, design.levels["pairs"].values["rrstd"], sorted(set(users)), 200, 3)
    np.testing.assert_allclose(reps["rrstd"], ref, rtol=1e-12, equal_nan=True)
    # per-query metrics have one user each and share the same draws
    ref_q = reference_replicates(
        [(u,) for u in users], design.levels["queries"].values["mrr"], sorted(set(users)), 200, 3
    )
    np.testing.assert_allclose(reps["mrr"], ref_q, rtol=1e-12, equal_nan=True)


def test_clustering_widens_the_ci_of_clustered_data():
    pairs, ranks = error_pairs_example()
    width = {}
    for unit in ("pair", "target"):
        reps = derive(
            bootstrap_design(task_design(ERR, pairs, ranks, unit=unit), n_boot=2000, seed=0), (1, 10)
        )
        lo, hi = percentile_ci(reps["mrr_clean"])
        width[unit] = hi - lo
    assert width["target"] > 1.2 * width["pair"]


def test_chunking_and_processes_do_not_change_replicates(monkeypatch):
    pairs, ranks = error_pairs_example()
    design = task_design(ERR, pairs, ranks, unit="target")
    whole = bootstrap_design(design, n_boot=500, seed=11)
    import pqb.harness.evaluation.bootstrap as B

    monkeypatch.setattr(B, "MAX_CELLS", 37)  # a few replicates per chunk
    chunked = bootstrap_design(design, n_boot=500, seed=11)
    for k in whole:
        np.testing.assert_array_equal(whole[k], chunked[k])
    code = ("import numpy as np, sys; sys.path.insert(0, 'tests');"
            "from test_harness_bootstrap_clustered import *;"
            "p, r = error_pairs_example(); d = task_design(ERR, p, r, unit='target');"
            "print(repr(bootstrap_design(d, n_boot=500, seed=11)['mrr_deg'].tolist()))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == whole["mrr_deg"].tolist()  # another process, bit for bit


def test_draw_counts_is_one_draw_per_replicate():
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    counts = draw_counts(rng_a, 9, 4)
    for row in counts:
        np.testing.assert_array_equal(row, np.bincount(rng_b.integers(0, 9, 9), minlength=9))
    assert (counts.sum(axis=1) == 9).all()


def test_ceiling_aware_flip():
    pairs, ranks = syntactic_example()
    design = task_design(SYN, pairs, ranks, unit="target")
    point = derive(design.point(), (1, 10))
    hit_a, hit_b = ranks[pairs.pair_a] <= 10, ranks[pairs.pair_b] <= 10
    p = (hit_a.sum() + hit_b.sum()) / 12
    assert point["flip@10_expected"] == pytest.approx(2 * p * (1 - p))
    assert point["flip@10_ratio"] == pytest.approx(np.mean(hit_a != hit_b) / (2 * p * (1 - p)))
    assert not any(k.startswith("_pool") for k in point)


def test_empty_level_and_no_replicates():
    d = Design(0, {"pairs": Level(np.empty((0, 1), np.int64), {"x": np.empty(0)})})
    assert bootstrap_design(d, n_boot=10)["x"].size == 0


def single_unit_example() -> tuple[Level, np.ndarray]:
    rng = np.random.default_rng(5)
    units = rng.integers(0, 300, 5000)
    level = Level(units, {"a": rng.random(5000), "b": rng.geometric(0.2, 5000).astype(float)})
    return level, draw_counts(np.random.default_rng(0), 300, 64)


def test_single_unit_replicates_are_the_exact_integer_products():
    """The BLAS product equals the same product in exact integer arithmetic (numpy's integer matmul
    never calls BLAS), and differs from the plain float products by less than the documented bound."""
    from pqb.harness.evaluation.bootstrap import exact_product, fixed_point, level_replicates

    level, counts = single_unit_example()
    per_unit, totals = level.unit_sums(300)
    columns = np.column_stack([totals, *per_unit.values()])
    ints, scale = fixed_point(columns, 300)
    assert (np.abs(ints).max(axis=0) * 300 < 2.0**52).all() and (ints == np.rint(ints)).all()
    integer = (counts.astype(np.int64) @ ints.astype(np.int64)).astype(np.float64) * scale
    np.testing.assert_array_equal(exact_product(counts, ints, scale), integer)
    got = level_replicates(level, counts, 300)
    denom = (counts * totals[None, :]).sum(axis=1)
    for k, v in per_unit.items():
        bound = 300 * np.abs(v).max() * 2.0**-51  # the module docstring's bound
        np.testing.assert_allclose(got[k], (counts * v).sum(axis=1) / denom, rtol=0, atol=bound)


def test_non_finite_columns_are_summed_elementwise():
    from pqb.harness.evaluation.bootstrap import exact_product, fixed_point

    counts = draw_counts(np.random.default_rng(1), 4, 6)
    columns = np.asarray([[1.0, np.inf], [2.0, 1.0], [0.5, 0.0], [1.0, 2.0]])
    got = exact_product(counts, *fixed_point(columns, 4))
    with np.errstate(invalid="ignore"):  # the plain reference sum
        np.testing.assert_array_equal(got[:, 0], (counts * columns[:, 0]).sum(axis=1))
        np.testing.assert_array_equal(got[:, 1], (counts * columns[:, 1]).sum(axis=1))


KERNEL_SCRIPT = """
import hashlib, sys
sys.path.insert(0, "tests")
import numpy as np
from test_harness_bootstrap_clustered import single_unit_example
from pqb.harness.evaluation.bootstrap import draw_counts, level_replicates
level, _ = single_unit_example()
counts = draw_counts(np.random.default_rng(0), 300, 400)
reps = level_replicates(level, counts, 300)
print(hashlib.sha256(b"".join(v.tobytes() for v in reps.values())).hexdigest())
"""


def test_replicates_identical_under_every_blas_kernel_and_thread_count():
    from numeric_kernels import run_under, runnable_kernels

    kernels = runnable_kernels(("Prescott", "Haswell", "Zen", "SkylakeX"))
    digests = {(k, t): run_under(k, t, ["-c", KERNEL_SCRIPT]).stdout.strip() for k in kernels for t in (1, 2)}
    assert len(kernels) >= 2 and len(set(digests.values())) == 1, digests
