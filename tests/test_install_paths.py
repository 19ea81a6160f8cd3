"""Offline and install paths: every missing dataset, model extra or env var is one line naming the fix;
the ``evaluate`` module loads by folder path; the Space shows CIs and n."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pqb.harness.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_no_local_dataset_and_no_hub_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    from pqb.dataset import settings

    monkeypatch.setattr(settings, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    code = main(["run", "--model", "bm25", "--tasks", "pqb", "--dataset_path", "pqb-benchmark/pqb",
                 "--output_path", str(tmp_path), "--no-progress"])  # fmt: skip
    line = _one_error_line(capsys)
    assert (
        code == 1 and "not found in" not in line
    )  # was: config 'video_games' not found in 'pqb-benchmark/pqb'
    assert "'pqb-benchmark/pqb' is not a local folder" in line and "the Hub is offline" in line
    assert "pqb-build" in line and "--dataset_path" in line


def test_a_missing_extra_is_one_line_before_any_work(tmp_path: Path, monkeypatch, capsys) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    code = main(
        ["run", "--model", "minilm", "--tasks", "pqb", "--output_path", str(tmp_path), "--no-progress"]
    )
    line = _one_error_line(capsys)
    assert code != 0 and "model 'minilm' needs the Python package 'torch'" in line
    assert 'pip install "pqb-benchmark[neural]"' in line


def test_evaluate_module_loads_by_folder_and_by_file() -> None:
    import evaluate

    from pqb.harness.integrations.evaluate_metric import PQB_ROBUSTNESS_PATH

    by_file = evaluate.load(PQB_ROBUSTNESS_PATH).compute(predictions=[1, 5], references=[2, 30])
    by_folder = evaluate.load(str(Path(PQB_ROBUSTNESS_PATH).parent)).compute(
        predictions=[1, 5], references=[2, 30]
    )
    assert by_folder == by_file and by_file["flip@10"] == 0.5 and by_file["n_pairs"] == 2


def test_space_without_its_env_vars_is_one_line(app, monkeypatch) -> None:
    monkeypatch.delenv("PQB_LEADERBOARD_PARQUET", raising=False)
    monkeypatch.delenv("PQB_RESULTS_REPO", raising=False)
    monkeypatch.setattr(app, "__file__", str(ROOT / "no_such_folder" / "app.py"))
    with pytest.raises(app.LeaderboardNotFoundError) as exc:
        app.load_leaderboard()
    msg = str(exc.value)
    assert "\n" not in msg and "PQB_LEADERBOARD_PARQUET" in msg and "pqb-harness leaderboard" in msg


def test_space_table_shows_cis_and_n(app, tmp_path: Path) -> None:
    from pqb.harness.reporting.leaderboard import write_leaderboard

    write_leaderboard([Path(__file__).parent / "data" / "leaderboard" / "results"], tmp_path, plots=False,
                      html=False, paper=False)  # fmt: skip
    frame = app.load_leaderboard(tmp_path / "leaderboard.parquet")
    table = app.summary_table(frame, "error", "video_games").set_index("model")
    row = frame[
        (frame.model == "bm25") & (frame.task == "pqb_error_video_games") & (frame.metric == "deg@10")
    ].iloc[0]
    assert (
        table.loc["bm25", "deg@10"]
        == f"{100 * row.value:.2f} [{100 * row.ci_low:.2f}, {100 * row.ci_high:.2f}]"
    )
    assert table.loc["bm25", "n"] == row.n and row.n > 0
    assert list(table.columns[:4]) == ["stand_in_for", "n", "deg@1", "deg@5"]


def _online_mode(monkeypatch) -> None:
    """As on a laptop without network where nobody set HF_HUB_OFFLINE (the tests' default is offline)."""
    import datasets
    import huggingface_hub.constants

    from pqb.dataset import hub, settings

    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(settings, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "_answers", {})


def test_no_network_and_no_offline_flag_fails_at_once(tmp_path: Path, monkeypatch, capsys) -> None:
    """Issue 44: 23-28 s and 11 Hub retry lines before the one-line error. The socket guard plays the
    missing network: the probe's lookup is refused at once, so is every retry of huggingface_hub's."""
    import time

    _online_mode(monkeypatch)
    t0 = time.monotonic()
    code = main(["run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games", "--dataset_path",
                 "pqb-benchmark/pqb", "--output_path", str(tmp_path), "--no-progress"])  # fmt: skip
    elapsed = time.monotonic() - t0
    line = _one_error_line(capsys)  # no "Retrying in 1s [Retry 1/5]" lines before it
    assert code == 1 and elapsed < 5, elapsed
    assert "the Hub is unreachable (huggingface.co:443" in line and "HF_HUB_OFFLINE=1" in line


def test_a_hub_checkpoint_without_network_fails_at_once(monkeypatch) -> None:
    """A model by Hub id: a cached copy is tried offline (local_files_only), then one line, no retries."""
    from pqb.harness.errors import ModelNotAvailableError
    from pqb.harness.retrievers.neural.encoding import load_or_explain

    _online_mode(monkeypatch)
    calls = []

    def loader(name, **kwargs):
        calls.append(kwargs)
        raise OSError("not in the cache")

    with pytest.raises(ModelNotAvailableError, match=r"the Hub is unreachable \(huggingface.co:443"):
        load_or_explain(loader, "thenlper/gte-base", "model")
    assert calls == [{"local_files_only": True}]
