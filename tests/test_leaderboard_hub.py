"""Hub publishing with ``HfApi`` mocked at its boundary: paths, repo type, and no token anywhere."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from pqb.harness.cli import main
from pqb.harness.reporting import hub

TOKEN = "hf_TESTTOKEN_must_never_appear_0123456789"
DATA = Path(__file__).parent / "data" / "leaderboard" / "results"


class Recorder:
    """Replaces the three HfApi methods; records (method, kwargs, token the client was built with)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], Any]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        recorder = self

        def create_repo(self: HfApi, **kwargs: Any) -> str:
            recorder.calls.append(("create_repo", kwargs, self.token))
            return f"https://huggingface.co/datasets/{kwargs['repo_id']}"

        def upload_file(self: HfApi, **kwargs: Any) -> Any:
            recorder.calls.append(("upload_file", kwargs, self.token))
            return type(
                "CommitInfo",
                (),
                {"commit_url": f"https://huggingface.co/datasets/{kwargs['repo_id']}/commit/abc"},
            )()

        def upload_folder(self: HfApi, **kwargs: Any) -> Any:
            recorder.calls.append(("upload_folder", kwargs, self.token))
            return type(
                "CommitInfo",
                (),
                {"commit_url": f"https://huggingface.co/datasets/{kwargs['repo_id']}/commit/def"},
            )()

        monkeypatch.setattr(HfApi, "create_repo", create_repo)
        monkeypatch.setattr(HfApi, "upload_file", upload_file)
        monkeypatch.setattr(HfApi, "upload_folder", upload_folder)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    r = Recorder()
    r.install(monkeypatch)
    return r


@pytest.fixture
def run_dir(tmp_path: Path) -> tuple[Path, Path, Path]:
    model = tmp_path / "results" / "BAAI__bge-m3"
    model.mkdir(parents=True)
    result = model / "results_2026-01-12T10-00-00.000000.json"
    result.write_text("{}")
    details = (
        tmp_path / "results" / "details" / "BAAI__bge-m3"
    )  # the writer's layout: out of the model folder
    details.mkdir(parents=True)
    samples = details / "samples_pqb_error_video_games_2026-01-12T10-00-00.000000.jsonl"
    samples.write_text("{}\n")
    return tmp_path / "results", result, samples


def _assert_no_token(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], *paths: Path
) -> None:
    captured = capsys.readouterr()
    assert TOKEN not in caplog.text and TOKEN not in captured.out and TOKEN not in captured.err
    for path in paths:
        for f in [path] if path.is_file() else path.rglob("*"):
            if f.is_file():
                assert TOKEN.encode() not in f.read_bytes(), f


def test_push_results_uses_lm_eval_layout(
    recorder: Recorder,
    run_dir: tuple[Path, Path, Path],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    output, result, samples = run_dir
    url = hub.push_results(output, result, "org/pqb-results", samples=[samples], token=TOKEN)
    assert url == "https://huggingface.co/datasets/org/pqb-results/commit/abc"
    names = [c[0] for c in recorder.calls]
    assert names == ["create_repo", "upload_file", "upload_file"]
    create, up_results, up_samples = (c[1] for c in recorder.calls)
    assert (
        create["repo_type"] == "dataset"
        and create["exist_ok"] is True
        and create["repo_id"] == "org/pqb-results"
    )
    assert up_results["path_in_repo"] == "BAAI__bge-m3/results_2026-01-12T10-00-00.000000.json"
    assert (
        up_samples["path_in_repo"]
        == "details/BAAI__bge-m3/samples_pqb_error_video_games_2026-01-12T10-00-00.000000.jsonl"
    )
    assert {c[1]["repo_type"] for c in recorder.calls} == {"dataset"}
    assert {c[2] for c in recorder.calls} == {TOKEN}  # the token reaches the client, and only the client
    _assert_no_token(caplog, capsys, output)


def test_push_results_rejects_files_outside_the_output_folder(recorder: Recorder, tmp_path: Path) -> None:
    stray = tmp_path / "elsewhere" / "results_x.json"
    stray.parent.mkdir()
    stray.write_text("{}")
    (tmp_path / "out").mkdir()
    with pytest.raises(hub.HubPublishError, match="not inside the output folder"):
        hub.push_results(tmp_path / "out", stray, "org/pqb-results", token=TOKEN)
    assert recorder.calls == []


def test_push_results_rejects_bad_repo_id(recorder: Recorder, run_dir: tuple[Path, Path, Path]) -> None:
    output, result, _ = run_dir
    with pytest.raises(ValueError, match="namespace/name"):
        hub.push_results(output, result, "pqb-results", token=TOKEN)
    assert recorder.calls == []


def test_leaderboard_push_uploads_folder(
    recorder: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    out = tmp_path / "lb"
    assert main(["leaderboard", str(DATA), "--out", str(out), "--no-plots", "--push", "org/pqb-results"]) == 0
    names = [c[0] for c in recorder.calls]
    assert names == ["create_repo", "upload_folder"]
    folder = recorder.calls[1][1]
    assert folder["folder_path"] == str(out) and folder["path_in_repo"] == "leaderboard"
    assert folder["repo_type"] == "dataset" and folder["repo_id"] == "org/pqb-results"
    _assert_no_token(caplog, capsys, out)


def test_push_leaderboard_needs_a_written_folder(recorder: Recorder, tmp_path: Path) -> None:
    with pytest.raises(hub.HubPublishError, match=r"leaderboard\.parquet"):
        hub.push_leaderboard(tmp_path, "org/pqb-results", token=TOKEN)
