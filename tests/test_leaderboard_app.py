"""The Gradio Space's data functions (gradio itself is an optional extra and not needed here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pqb.harness.reporting.leaderboard import write_leaderboard

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "leaderboard" / "results"


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("space")
    write_leaderboard([DATA], out, plots=False, html=False, paper=False)
    return out / "leaderboard.parquet"


def test_summary_table_reads_the_parquet(app, parquet: Path) -> None:
    frame = app.load_leaderboard(parquet)
    assert app.domains(frame) == ["average", "musical_instruments", "video_games"]
    table = app.summary_table(frame, "error", "video_games").set_index("model")
    raw = json.loads((DATA / "bm25" / "results_2026-01-12T10-00-00.000000.json").read_text())
    assert (
        table.loc["bm25", "deg@10"].split(" ")[0]
        == f"{100 * raw['results']['pqb_error_video_games']['deg@10']:.2f}"
    )
    assert table.loc["minilm", "stand_in_for"] == "thenlper/gte-base"


def test_env_var_selects_the_parquet(app, parquet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQB_LEADERBOARD_PARQUET", str(parquet))
    assert app.parquet_path() == parquet


def test_build_demo_with_gradio(app, parquet: Path) -> None:
    pytest.importorskip("gradio", reason="gradio is the optional `space` extra")
    assert app.build_demo(app.load_leaderboard(parquet)) is not None
