"""``pqb-harness score``: harness-written TREC runs scored back give identical metrics; runs keep
rr_cutoff documents; qrels are written; a query missing from the run counts as a miss and is reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.evaluation.results import load_results

TASKS = ("pqb_syntactic_video_games", "pqb_error_video_games")


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    ds = make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games",))
    out = tmp_path_factory.mktemp("res")
    assert main(["run", "--model", "bm25", "--tasks", ",".join(TASKS), "--dataset_path", str(ds), "--output_path",
                 str(out), "--bootstrap_iters", "100", "--log_samples", "--no-progress"]) == 0  # fmt: skip
    return ds, next((out / "bm25").glob("results_*.json"))


def _score(ds: Path, out: Path, task: str, *runs: Path) -> dict:
    assert main(["score", "--run", ",".join(map(str, runs)), "--tasks", task, "--dataset_path", str(ds),
                 "--output_path", str(out), "--name", "bm25", "--bootstrap_iters", "100"]) == 0  # fmt: skip
    return load_results(sorted((out / "bm25").glob("results_*.json"))[-1])


@pytest.mark.parametrize("task", TASKS)
def test_round_trip_gives_identical_metrics(harness_run, tmp_path, task):
    ds, path = harness_run
    original = load_results(path)
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    run = (path.parent.parent / "details" / path.parent.name) / f"run_{task}_{stamp}.trec"
    scored = _score(ds, tmp_path, task, run)
    want = {k: v for k, v in original["results"][task].items() if k != "ties_touch_target"}
    got = {k: v for k, v in scored["results"][task].items() if k != "n_queries_missing_from_run"}
    assert got == want  # every metric and CI, bit for bit
    assert scored["results"][task]["n_queries_missing_from_run"] == 0
    assert scored["config"]["external_run"]["missing_query"].startswith("counted as a miss")
    qrels = (
        ((path.parent.parent / "details" / path.parent.name) / f"qrels_{task}_{stamp}.txt")
        .read_text()
        .splitlines()
    )
    assert len(qrels) == original["results"][task]["n_queries"]
    assert all(q.split()[1] == "0" and q.split()[3] == "1" and len(q.split()) == 4 for q in qrels)


def test_missing_query_counts_as_a_miss(harness_run, tmp_path):
    ds, path = harness_run
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    lines = (
        ((path.parent.parent / "details" / path.parent.name) / f"run_pqb_error_video_games_{stamp}.trec")
        .read_text()
        .splitlines()
    )
    clean = [line for line in lines if "_error " not in line]
    error = [line.replace("_error ", " ", 1) for line in lines if "_error " in line]  # plain row ids
    dropped = error[0].split()[0]
    (tmp_path / "clean.trec").write_text("\n".join(clean) + "\n")
    (tmp_path / "error.trec").write_text("\n".join(x for x in error if x.split()[0] != dropped) + "\n")
    scored = _score(
        ds, tmp_path / "out", "pqb_error_video_games", tmp_path / "clean.trec", tmp_path / "error.trec"
    )
    entry = scored["results"]["pqb_error_video_games"]
    assert entry["n_queries_missing_from_run"] == 1
    ranks = dict(zip(scored["ranks"]["pqb_error_video_games"]["query_id"],
                     scored["ranks"]["pqb_error_video_games"]["rank"], strict=True))  # fmt: skip
    assert ranks[f"{dropped}_error"] is None
    original = load_results(path)["results"]["pqb_error_video_games"]
    assert (
        entry["hit@20_error"] <= original["hit@20_error"]
        and entry["hit@20_clean"] == original["hit@20_clean"]
    )


def test_harness_runs_keep_rr_cutoff_documents(tmp_path):
    from pqb.harness.evaluation.evaluator import run_file_depth
    from pqb.harness.task_registry import task_from_dict

    cfg = task_from_dict({"task": "t", "dataset_name": "x", "pair_type": "error", "run_depth": 100})
    assert run_file_depth(cfg) == 200  # MRR counts ranks up to 200, so the run must hold them
    assert (
        run_file_depth(
            task_from_dict({"task": "t", "dataset_name": "x", "pair_type": "error", "rr_cutoff": None})
        )
        == 100
    )


def test_bad_run_line_is_one_error(harness_run, tmp_path, capsys):
    ds, _ = harness_run
    (tmp_path / "bad.trec").write_text("q1 Q0 D1 1\n")
    assert (
        main(["score", "--run", str(tmp_path / "bad.trec"), "--tasks", TASKS[0], "--dataset_path", str(ds)])
        == 1
    )
    assert "bad.trec:1: a TREC run line has 6 fields" in capsys.readouterr().err
