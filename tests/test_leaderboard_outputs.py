"""End to end: `pqb-harness leaderboard` writes tables, plots (PNG+SVG) and an offline HTML page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pqb.harness.cli import main

DATA = Path(__file__).parent / "data" / "leaderboard" / "results"
PLOTS = ("flip_at_k", "deg_at_k", "robustness_vs_effectiveness")


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("leaderboard")
    assert main(["leaderboard", str(DATA), "--out", str(out)]) == 0
    return out


def test_writes_tables_for_several_models(out: Path) -> None:
    for name in ("syntactic_robustness", "error_robustness", "effectiveness", "error_breakdown"):
        assert (out / f"{name}.md").stat().st_size > 0
        assert (out / f"{name}.csv").stat().st_size > 0
    text = (out / "syntactic_robustness.md").read_text()
    assert "bm25" in text and "minilm (stand-in for thenlper/gte-base)" in text
    assert (out / "leaderboard.parquet").stat().st_size > 0
    assert (out / "paper_comparison.md").exists()


@pytest.mark.parametrize("name", PLOTS)
@pytest.mark.parametrize("domain", ["average", "video_games", "musical_instruments"])
def test_plots_written_as_png_and_svg(out: Path, name: str, domain: str) -> None:
    png, svg = out / "plots" / f"{name}_{domain}.png", out / "plots" / f"{name}_{domain}.svg"
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 5000
    assert "<svg" in svg.read_text()


def test_plots_are_deterministic(out: Path, tmp_path: Path) -> None:
    """Same inputs, same bytes: no dates in metadata, salted SVG ids."""
    assert main(["leaderboard", str(DATA), "--out", str(tmp_path), "--no-html", "--no-paper"]) == 0
    for name in PLOTS:
        for ext in ("png", "svg"):
            a = (out / "plots" / f"{name}_average.{ext}").read_bytes()
            assert a == (tmp_path / "plots" / f"{name}_average.{ext}").read_bytes(), (name, ext)
    assert (out / "leaderboard.csv").read_bytes() == (tmp_path / "leaderboard.csv").read_bytes()


def test_html_is_self_contained(out: Path) -> None:
    page = (out / "index.html").read_text()
    assert not re.search(r"https?://", page), "the page must not reference any network resource"
    assert not re.search(r"""(?:src|href)\s*=\s*["']?//""", page)
    assert "@import" not in page
    assert page.count('src="data:image/png;base64,') == 9  # 3 plots × (average + 2 domains)
    assert 'id="domain-select"' in page and 'class="sortable"' in page


def test_html_labels_stand_ins(out: Path) -> None:
    page = (out / "index.html").read_text()
    assert "stand-in for thenlper/gte-base" in page
    assert "stand-in for SPLADE" in page


def test_bad_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_estimate_outside_its_ci_still_plots(tmp_path: Path) -> None:
    """A CI that does not hold its estimate (fewer than 40 bootstrap replicates, or an edited file) once
    stopped the leaderboard with matplotlib's "'yerr' must not contain negative values" traceback."""
    import json
    import shutil

    shutil.copytree(DATA, tmp_path / "results")
    path = tmp_path / "results" / "bm25" / "results_2026-01-12T10-00-00.000000.json"
    data = json.loads(path.read_text())
    entry = data["results"]["pqb_error_video_games"]
    entry["deg@10_ci"] = [entry["deg@10"] / 4, entry["deg@10"] / 2]  # the estimate above its upper bound
    path.write_text(json.dumps(data))
    assert main(["leaderboard", str(tmp_path / "results"), "--out", str(tmp_path / "o"), "--no-html"]) == 0
    assert (tmp_path / "o" / "plots" / "robustness_vs_effectiveness_video_games.png").stat().st_size > 5000
