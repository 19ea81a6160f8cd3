"""Clustered bootstrap and ``compare`` at scale: 100K error pairs, 1,000 resamples, against a plain
per-replicate loop measured in the same run (ratios, not absolute targets).

Usage::

    python bench/bench_stats.py [--pairs 100000] [--reps 1000] [--loop-reps 1000]

Synthetic ranks (seeded) for 100K error pairs over 50K target ASINs (two pairs each, as in the built
benchmark) and 5K users. Two checks, each printing one JSON line with both timings and the ratio
(reference / ours: > 1 means the harness is faster):

1. ``clustered_bootstrap``: every metric of the task (Deg@K, MRRdeg, Flip@K, RRstd, the clean/error
   effectiveness, the ceiling-aware Flip), 1,000 target-clustered replicates
   (:func:`pqb.harness.evaluation.bootstrap.bootstrap_design`) against a loop that, per replicate, draws the targets,
   concatenates their pairs and takes every metric's mean.
2. ``compare``: paired bootstrap (1,000) + randomization test (1,000 permutations) of two systems
   (:func:`pqb.harness.evaluation.compare.paired_task`) against the same loop for both systems plus a per-permutation
   loop that swaps the systems' per-pair values of each swapped target.

The reference loops draw the same units from the same seed, and the check asserts the replicates agree.
``--loop-reps`` < ``--reps`` times the loops on fewer replicates and scales their time linearly (said so
in the output).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def synthetic(n_pairs: int, seed: int = 0) -> tuple[Any, np.ndarray, np.ndarray]:
    """(TaskData, ranks of system A, ranks of system B) for ``n_pairs`` error pairs."""
    from pqb.harness.evaluation.evaluator import TaskData
    from pqb.harness.evaluation.pairs import PairSet
    from pqb.harness.evaluation.task_registry import task_from_dict
    from pqb.harness.retrievers.base import Corpus

    rng = np.random.default_rng(seed)
    ids = tuple(f"r{i}" for i in range(n_pairs))
    targets = tuple(f"T{i // 2:06d}" for i in range(n_pairs))
    users = tuple(f"u{i % 5000}" for i in range(n_pairs))
    pairs = PairSet(queries=tuple(f"q{i}" for i in range(2 * n_pairs)), targets=targets + targets,
                    query_ids=ids + tuple(f"{i}_error" for i in ids), row_index=np.arange(2 * n_pairs) % n_pairs,
                    pair_a=np.arange(n_pairs), pair_b=np.arange(n_pairs, 2 * n_pairs), pair_ids=ids,
                    groups=targets, users=users + users, query_pair_ids=ids + ids)  # fmt: skip
    cfg = task_from_dict({"task": "bench_error", "dataset_name": "bench", "pair_type": "error"})
    data = TaskData(cfg, [], pairs, "synthetic", "bench", Corpus(("d",), ("d",), ("d",)))
    ra = np.minimum(rng.geometric(0.15, 2 * n_pairs), 10_000).astype(np.float64)
    rb = np.maximum(1, ra + rng.integers(-3, 6, 2 * n_pairs)).astype(np.float64)
    return data, ra, rb


def loop_bootstrap(values: dict[str, np.ndarray], unit_of: np.ndarray, n_units: int, reps: int, seed: int,
                   other: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """The plain way: per replicate, draw units, gather their pairs, take each metric's mean (A − B with ``other``)."""
    members = np.split(
        np.argsort(unit_of, kind="stable"), np.cumsum(np.bincount(unit_of, minlength=n_units))[:-1]
    )
    rng = np.random.default_rng(seed)
    out = {k: np.empty(reps) for k in values}
    for r in range(reps):
        idx = np.concatenate([members[u] for u in rng.integers(0, n_units, n_units)])
        for k, v in values.items():
            out[k][r] = v[idx].mean() - (other[k][idx].mean() if other is not None else 0.0)
    return out


def loop_permutations(va: dict[str, np.ndarray], vb: dict[str, np.ndarray], unit_of: np.ndarray, n_units: int,
                      reps: int, seed: int) -> dict[str, np.ndarray]:  # fmt: skip
    """Per permutation: each unit swaps its pairs' A and B values with probability ½; mean(A') − mean(B')."""
    rng = np.random.default_rng(seed)
    out = {k: np.empty(reps) for k in va}
    for r in range(reps):
        swap = rng.integers(0, 2, n_units).astype(bool)[unit_of]
        for k in va:
            a, b = np.where(swap, vb[k], va[k]), np.where(swap, va[k], vb[k])
            out[k][r] = a.mean() - b.mean()
    return out


def report(name: str, ours: float, ref: float, **extra: Any) -> None:
    print(json.dumps({"check": name, "ours_s": round(ours, 3), "reference_s": round(ref, 3),
                      "speedup": round(ref / ours, 2), **extra}))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=100_000)
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--loop-reps", type=int, default=1000, help="replicates the reference loops run")
    args = p.parse_args(argv)

    from pqb.harness.evaluation.bootstrap import bootstrap_design
    from pqb.harness.evaluation.compare import paired_task
    from pqb.harness.evaluation.design import POOL_PREFIX, task_design

    data, ra, rb = synthetic(args.pairs)
    t0 = time.perf_counter()
    design = task_design(data.cfg, data.pairs, ra, unit="target")
    reps = bootstrap_design(design, n_boot=args.reps, seed=0)
    ours = time.perf_counter() - t0
    level = design.levels["pairs"]
    values = {k: v for k, v in level.values.items() if not k.startswith(POOL_PREFIX)}
    t0 = time.perf_counter()
    ref = loop_bootstrap(values, level.units[:, 0], design.n_units, args.loop_reps, 0)
    loop = (time.perf_counter() - t0) * args.reps / args.loop_reps
    same = all(np.allclose(reps[k][: args.loop_reps], ref[k], rtol=1e-9, atol=1e-12) for k in ref)
    report("clustered_bootstrap", ours, loop, n_pairs=args.pairs, n_units=design.n_units, n_boot=args.reps,
           n_metrics=len(values), replicates_agree=same, loop_reps_timed=args.loop_reps)  # fmt: skip

    t0 = time.perf_counter()
    paired = paired_task(data.cfg, data, ra, rb, unit="target", n_boot=args.reps, n_perm=args.reps, seed=0)
    ours = time.perf_counter() - t0
    vb = {k: v for k, v in task_design(data.cfg, data.pairs, rb, unit="target").levels["pairs"].values.items()
          if k in values}  # fmt: skip
    t0 = time.perf_counter()
    ref_d = loop_bootstrap(values, level.units[:, 0], design.n_units, args.loop_reps, 0, other=vb)
    loop_permutations(values, vb, level.units[:, 0], design.n_units, args.loop_reps, 1)
    loop = (time.perf_counter() - t0) * args.reps / args.loop_reps
    same = all(np.allclose(paired.reps[k][: args.loop_reps], ref_d[k], rtol=1e-9, atol=1e-12) for k in ref_d)
    report("compare", ours, loop, n_pairs=args.pairs, n_boot=args.reps, n_perm=args.reps,
           bootstrap_replicates_agree=same, loop_reps_timed=args.loop_reps)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
