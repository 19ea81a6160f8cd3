"""``compare``: paired randomization p-values against ranx.compare(stat_test="fisher") on the same runs,
the paired bootstrap against a reference loop, refusal of different fingerprints, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.errors import DataError
from pqb.harness.evaluation.bootstrap import percentile_ci
from pqb.harness.evaluation.compare import common_tasks, p_value, paired_task
from pqb.harness.evaluation.evaluator import TaskData
from pqb.harness.evaluation.pairs import PairSet
from pqb.harness.evaluation.results import load_results
from pqb.harness.evaluation.task_registry import task_from_dict
from pqb.harness.retrievers.base import Corpus

ERR = task_from_dict({"task": "t_err", "dataset_name": "x", "pair_type": "error"})


def synthetic_task(n: int = 150, seed: int = 1) -> tuple[TaskData, np.ndarray, np.ndarray]:
    """An error task of ``n`` pairs (each its own target) and two systems' ranks (B noisier, a bit worse)."""
    rng = np.random.default_rng(seed)
    ids = tuple(f"r{i}" for i in range(n))
    targets = tuple(f"D{i:04d}" for i in range(n))
    pairs = PairSet(queries=tuple(f"q{i}" for i in range(2 * n)), targets=targets + targets,
                    query_ids=ids + tuple(f"{i}_error" for i in ids), row_index=np.arange(2 * n) % n,
                    pair_a=np.arange(n), pair_b=np.arange(n, 2 * n), pair_ids=ids, groups=targets,
                    users=tuple(f"u{i % 17}" for i in range(n)) * 2, query_pair_ids=ids + ids)  # fmt: skip
    corpus = Corpus(targets, targets, targets)
    ra = rng.integers(1, 40, 2 * n).astype(np.float64)
    rb = np.maximum(1, ra + rng.integers(-5, 12, 2 * n)).astype(np.float64)
    return TaskData(ERR, [], pairs, "synthetic", "fp", corpus), ra, rb


def ranx_p(task: TaskData, ra: np.ndarray, rb: np.ndarray, metric: str, n_perm: int) -> float:
    """ranx's Fisher randomization test on the clean queries, runs built so each target sits at its rank."""
    from ranx import Qrels, Run, compare

    n = len(task.pairs.pair_a)
    qids = [f"q{i}" for i in range(n)]
    qrels = Qrels({q: {task.pairs.targets[i]: 1} for i, q in enumerate(qids)})

    def run(ranks: np.ndarray, name: str) -> Run:
        out = {}
        for i, q in enumerate(qids):
            r = int(ranks[i])
            docs = {f"filler{j}": 1000.0 - j for j in range(1, r)}
            docs[task.pairs.targets[i]] = 1000.0 - r
            out[q] = docs
        return Run(out, name=name)

    report = compare(qrels, [run(ra, "a"), run(rb, "b")], metrics=[metric], stat_test="fisher",
                     n_permutations=n_perm, random_seed=3)  # fmt: skip
    return float(report.to_dict()["a"]["comparisons"]["b"][metric])


@pytest.mark.parametrize(("ours", "theirs"), [("mrr_clean", "mrr"), ("hit@10_clean", "hit_rate@10")])
def test_p_values_match_ranx_fisher_test(ours, theirs):
    task, ra, rb = synthetic_task()
    paired = paired_task(ERR, task, ra, rb, unit="pair", n_boot=0, n_perm=20_000, seed=0)
    mine = p_value(paired.diff[ours], paired.perm[ours])
    theirs_p = ranx_p(task, ra, rb, theirs, 20_000)
    assert 0.001 < theirs_p < 0.9  # a test case where the p-value says something
    assert mine == pytest.approx(theirs_p, abs=0.02)  # Monte-Carlo error of two 20k-permutation runs


def test_paired_bootstrap_equals_reference_loop():
    task, ra, rb = synthetic_task(60)
    paired = paired_task(ERR, task, ra, rb, unit="user", n_boot=200, n_perm=0, seed=4)
    rng = np.random.default_rng(4)
    users = np.asarray(task.pairs.users[:60])
    labels = sorted(set(users))
    rr = lambda r: np.where(r <= 200, 1 / r, 0.0)  # noqa: E731
    d = (rr(ra[:60]) - rr(ra[60:])) - (rr(rb[:60]) - rr(rb[60:]))  # MRRdeg(A) − MRRdeg(B) per pair
    ref = []
    for _ in range(200):
        drawn = [labels[i] for i in rng.integers(0, len(labels), len(labels))]
        sample = np.concatenate([d[users == u] for u in drawn])
        ref.append(sample.mean())
    np.testing.assert_allclose(paired.reps["mrr_deg"], ref, rtol=1e-10)
    lo, hi = percentile_ci(paired.reps["mrr_deg"])
    assert lo <= paired.diff["mrr_deg"] <= hi


def test_identical_systems_are_never_significant():
    task, ra, _ = synthetic_task(80)
    paired = paired_task(ERR, task, ra, ra.copy(), unit="target", n_boot=100, n_perm=200, seed=0)
    assert all(p_value(paired.diff[k], paired.perm[k]) == 1.0 for k in ("mrr_clean", "deg@10"))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    ds = make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games",))
    out = tmp_path_factory.mktemp("res")
    for model in ("bm25", "random"):
        args = ["run", "--model", model, "--tasks", "pqb_syntactic_video_games,pqb_error_video_games",
                "--dataset_path", str(ds), "--output_path", str(out), "--bootstrap_iters", "50", "--no-progress",
                "--verbosity", "WARNING"]  # fmt: skip
        assert main(args) == 0
    return [next((out / m).glob("results_*.json")) for m in ("bm25", "random")]


def test_compare_cli_writes_every_metric(two_runs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare", *map(str, two_runs), "--bootstrap_iters", "100", "--permutations", "100",
                 "--output", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    task = report["tasks"]["pqb_error_video_games"]
    assert {"deg@10", "mrr_deg", "flip@10", "flip@10_ratio", "mrr_clean", "hit@10_error"} <= set(
        task["metrics"]
    )
    assert task["unit"] == "target" and set(report["groups"]) == {"syntactic", "error"}
    assert "bm25 (A) vs random (B)" in capsys.readouterr().out


def test_compare_prints_the_flip_ratio_as_a_ratio():
    """``flip@K_ratio`` is no percentage (docs/results.md): `compare` printed B's 1.0024 as "100.24" under "in %"
    where `run`'s summary prints 1.00."""
    from pqb.harness.evaluation.compare import compare_markdown

    row = {"a": 0.5198, "b": 1.0024, "diff": -0.4826, "diff_ci": [-0.61, -0.35], "p_value": 0.01,
           "significant": True}  # fmt: skip
    metrics = {"flip@10_ratio": row, "flip@10": row}
    report = {"a": {"model": "x"}, "b": {"model": "y"}, "settings": {"n_perm": 10}, "groups": {},
              "tasks": {"t": {"unit": "target", "n_units": 3, "metrics": metrics}}}  # fmt: skip
    lines = {line.split(" | ")[0]: line for line in compare_markdown(report).splitlines()}
    assert lines["| flip@10_ratio"] == "| flip@10_ratio | 0.52 | 1.00 | -0.48 [-0.61, -0.35] | 0.0100 * |"
    assert lines["| flip@10"] == "| flip@10 | 51.98 | 100.24 | -48.26 [-61.00, -35.00] | 0.0100 * |"


def test_compare_refuses_different_fingerprints(two_runs):
    a, b = (load_results(p) for p in two_runs)
    b["dataset"]["pqb_error_video_games"]["fingerprint"] = "something-else"
    with pytest.raises(DataError, match="different data"):
        common_tasks(a, b)
    assert main(["compare", str(two_runs[0]), str(two_runs[0]), "--bootstrap_iters", "10",
                 "--permutations", "10"]) == 0  # a file against itself is fine  # fmt: skip


def test_compare_refuses_different_task_settings(two_runs, tmp_path, capsys):
    """Same task name, other YAML (k_values [1, 10, 1000], rr_cutoff 1000 in A): compare scored both runs with
    A's config, so B's ranks past its own depth of 200 were misses (Hit@1000 64.29 vs 12.38, p = 0.001, for
    two identical rankings)."""
    a, b = (load_results(p) for p in two_runs)
    b["configs"]["pqb_error_video_games"]["k_values"] = [1, 10, 1000]
    b["configs"]["pqb_error_video_games"]["rr_cutoff"] = 1000
    with pytest.raises(DataError, match="different task settings") as exc:
        common_tasks(a, b)
    assert "k_values [1, 5, 10, 20] vs [1, 10, 1000]" in str(exc.value) and "rr_cutoff 200 vs 1000" in str(exc.value)
    raw = json.loads(two_runs[1].read_text())
    raw["configs"]["pqb_error_video_games"]["k_values"] = [1, 10, 1000]
    edited = tmp_path / "b.json"
    edited.write_text(json.dumps(raw))
    argv = ["compare", str(two_runs[0]), str(edited), "--bootstrap_iters", "5", "--permutations", "5"]
    assert main(argv) == 1 and "refusing an edited results file" in capsys.readouterr().err  # its digest
    assert main([*argv, "--allow-edited"]) == 1  # read anyway (as a run made with that YAML would be)
    assert "different task settings" in capsys.readouterr().err


def test_compare_refuses_a_changed_dataset(two_runs, tmp_path):
    other = make_tiny_dataset(tmp_path / "ds2", ("video_games",))
    rows = next(Path(other).rglob("video_games/*.parquet"))
    import pyarrow.parquet as pq

    t = pq.read_table(rows)
    pq.write_table(t.slice(0, t.num_rows - 1), rows)
    assert main(["compare", *map(str, two_runs), "--dataset_path", str(other), "--bootstrap_iters", "5",
                 "--permutations", "5"]) == 1  # fmt: skip
