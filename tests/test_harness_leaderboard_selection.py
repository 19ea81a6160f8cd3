"""Leaderboard run selection: a model is its name, weights *and* settings; ``--limit`` runs stay out unless
asked for; a model row never mixes dataset builds. (A smoke run with other ``--model_args`` on 20 rows
once replaced a full run's published numbers in the bm25 row, with no mark.)"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.errors import DataError
from pqb.harness.reporting.collect import load_runs, tidy_frame

TASKS = "pqb_syntactic_video_games,pqb_error_video_games"


@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> dict:
    """A full bm25 run's results file (the 'published' numbers) as a dict."""
    ds = make_tiny_dataset(tmp_path_factory.mktemp("ds"))
    out = tmp_path_factory.mktemp("res")
    assert main(["run", "--model", "bm25", "--tasks", TASKS, "--dataset_path", str(ds), "--output_path", str(out),
                 "--bootstrap_iters", "10", "--no-progress"]) == 0  # fmt: skip
    return json.loads(next((out / "bm25").glob("results_*.json")).read_text())


def _write(folder: Path, data: dict, stamp: str, **config) -> dict:
    """``data`` as ``folder/bm25/results_<stamp>.json``, one second newer per stamp, with ``config`` changes,
    sealed as the run that wrote it would have (its content digest: these stand for other runs' files)."""
    from pqb.harness.evaluation.integrity import seal

    data = json.loads(json.dumps(data))
    data["config"].update(config)
    data["date"] = data["date"] + int(stamp[-2:])
    data = seal(data)
    (folder / "bm25").mkdir(parents=True, exist_ok=True)
    (folder / "bm25" / f"results_2026-01-01T00-00-{stamp}.000000.json").write_text(json.dumps(data))
    return data


def _mrr(tidy, model: str) -> float:
    row = tidy[(tidy.model == model) & (tidy.task == "pqb_syntactic_video_games") & (tidy.metric == "mrr")]
    assert len(row) == 1, sorted(set(tidy.model))
    return float(row.value.iloc[0])


def _smoke(full: dict) -> dict:
    """A newer smoke run: other model settings, --limit 20, other numbers."""
    data = json.loads(json.dumps(full))
    data["results"]["pqb_syntactic_video_games"]["mrr"] = 0.123
    return data


def test_limited_run_with_other_settings_does_not_replace_the_full_run(full_run, tmp_path, caplog):
    _write(tmp_path, full_run, "01")
    _write(tmp_path, _smoke(full_run), "02", limit=20, model_kwargs={"k1": 0.3, "b": 0.1})
    with caplog.at_level(logging.WARNING, logger="pqb.harness.reporting.collect"):
        tidy = tidy_frame(load_runs([tmp_path]))
    assert set(tidy.model) == {"bm25"}
    assert _mrr(tidy, "bm25") == full_run["results"]["pqb_syntactic_video_games"]["mrr"]
    note = [r.getMessage() for r in caplog.records if r.getMessage().startswith("note:")]
    assert len(note) == 1 and "made with --limit" in note[0] and "--limit 20" in note[0]
    tidy = tidy_frame(load_runs([tmp_path], include_limited=True))  # on request: a row of its own
    assert set(tidy.model) == {"bm25", "bm25 [b=0.1,k1=0.3] [limit=20]"}
    assert _mrr(tidy, "bm25 [b=0.1,k1=0.3] [limit=20]") == 0.123
    assert _mrr(tidy, "bm25") == full_run["results"]["pqb_syntactic_video_games"]["mrr"]


def test_other_model_settings_are_another_row(full_run, tmp_path):
    _write(tmp_path, full_run, "01")
    _write(tmp_path, _smoke(full_run), "02", model_kwargs={"k1": 0.3, "b": 0.1})
    tidy = tidy_frame(load_runs([tmp_path]))
    assert _mrr(tidy, "bm25") == full_run["results"]["pqb_syntactic_video_games"]["mrr"]
    assert _mrr(tidy, "bm25 [b=0.1,k1=0.3]") == 0.123


def test_row_mixing_dataset_builds_is_refused(full_run, tmp_path, capsys):
    """The newest run holds only the syntactic task, of another build: the error task would come from the
    older build, averaged beside it without a mark."""
    _write(tmp_path, full_run, "01")
    newer = json.loads(json.dumps(full_run))
    for section in ("results", "configs", "versions", "higher_is_better", "n-samples", "breakdowns",
                    "task_hashes", "dataset", "resume", "ranks", "confidence_intervals", "task_info"):  # fmt: skip
        (newer.get(section) or {}).pop("pqb_error_video_games", None)
    newer["dataset"]["pqb_syntactic_video_games"]["corpus_fingerprint"] = "0123456789abcdef"
    for section in ("groups", "group_subtasks"):
        newer[section] = {}
    newer["results"] = {k: v for k, v in newer["results"].items() if k.startswith("pqb_")}
    newer["confidence_intervals"] = {
        k: v for k, v in newer["confidence_intervals"].items() if k.startswith("pqb_")
    }
    newer["task_info"] = {k: v for k, v in newer["task_info"].items() if k.startswith("pqb_")}
    _write(tmp_path, newer, "02")
    with pytest.raises(DataError, match="different dataset builds") as exc:
        tidy_frame(load_runs([tmp_path]))
    assert "corpus config 'video_games-corpus'" in exc.value.details[0]
    assert "0123456789abcdef in bm25: pqb_syntactic_video_games" in exc.value.details[0]
    assert main(["leaderboard", str(tmp_path), "--out", str(tmp_path / "lb"), "--no-plots", "--no-html"]) == 1
    assert "different dataset builds" in capsys.readouterr().err
    assert main(["compare-paper", str(tmp_path)]) == 1


def test_two_models_on_different_dataset_builds_are_refused(full_run, tmp_path, capsys):
    """Each model row is of one build, but bm25 ran on one corpus and 'other' on an edited copy: the
    table put them side by side (Deg@1 ranked across corpora) with exit 0."""
    _write(tmp_path, full_run, "01")
    other = json.loads(json.dumps(full_run))
    other["config"]["model"] = "other"
    for task in other["dataset"]:
        other["dataset"][task]["corpus_fingerprint"] = "0123456789abcdef"
    _write(tmp_path, other, "02")
    with pytest.raises(DataError, match="from different dataset builds") as exc:
        tidy_frame(load_runs([tmp_path]))
    assert "corpus config 'video_games-corpus'" in exc.value.details[0]
    assert "other: pqb_" in exc.value.details[0] and "bm25: pqb_" in exc.value.details[0]
    assert main(["leaderboard", str(tmp_path), "--out", str(tmp_path / "lb"), "--no-plots", "--no-html"]) == 1


def test_two_models_on_one_build_share_the_table(full_run, tmp_path):
    _write(tmp_path, full_run, "01")
    other = json.loads(json.dumps(full_run))
    other["config"]["model"] = "other"
    _write(tmp_path, other, "02")
    assert set(tidy_frame(load_runs([tmp_path])).model) == {"bm25", "other"}
