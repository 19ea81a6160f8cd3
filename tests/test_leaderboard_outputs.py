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


def test_html_and_csv_mark_saturated_cells_as_the_markdown_does(tmp_path: Path) -> None:
    """The markdown tables mark a robustness cell measured at a saturated K ``ˢ``; the page showed the same
    Deg@10 0.00 bold as "most robust" with no mark, and the CSV's ``marks`` said only ``best``."""
    import json

    src = DATA / "splade-tiny" / "results_2026-01-11T12-00-00.000000.json"
    data = json.loads(src.read_text(encoding="utf-8"))
    block = data["results"]["pqb_error_video_games"]
    block.update({"flip@10_expected": 0.01, "saturated_at": [10]})
    data["groups"]["error"].update({"flip@10_expected": 0.01, "saturated_at": [10]})
    (tmp_path / "res" / "splade-tiny").mkdir(parents=True)
    (tmp_path / "res" / "splade-tiny" / src.name).write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "lb"
    assert main(["leaderboard", str(tmp_path / "res"), "--out", str(out), "--no-plots", "--no-paper"]) == 0
    assert "ˢ" in (out / "error_robustness.md").read_text()
    page = (out / "index.html").read_text(encoding="utf-8")
    table = page.split('id="error-video_games"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td data-value=\"[^\"]*\"[^>]*>(.*?)</td>", table)
    assert "ˢ" in cells[3] and "ˢ" not in cells[2]  # model, Deg@1, Deg@5, Deg@10: only K = 10
    marks = (out / "error_robustness.csv").read_text().splitlines()[1:]
    assert all("saturated:deg@10" in line and "saturated:deg@5" not in line for line in marks)


def test_outputs_not_written_this_time_do_not_stay_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second call into the same folder without ``--compare`` (or with ``--no-html``, ``--no-paper``,
    ``--no-plots``) left the first call's significance.md, page, comparison and plots beside the new tables,
    listed them as written, and ``--push`` uploaded them. (Only what the earlier call's manifest lists goes:
    tests/test_faults_shared_harness.py keeps a user's files.)"""
    out = tmp_path / "lb"
    assert main(["leaderboard", str(DATA), "--out", str(out), "--compare", "--compare-iters", "20"]) == 0
    assert (out / "significance.md").is_file()
    capsys.readouterr()
    assert main(["leaderboard", str(DATA), "--out", str(out), "--no-html", "--no-paper", "--no-plots"]) == 0
    assert "significance.md" not in capsys.readouterr().out
    left = {p.name for p in out.rglob("*") if p.is_file()}
    assert not left & {"significance.md", "significance.csv", "index.html", "paper_comparison.md"}
    assert not [n for n in left if n.endswith((".png", ".svg"))]


def test_html_says_the_average_view_breakdown_is_pooled(out: Path) -> None:
    """The average view's breakdown pools the domains by pair count (bm25 deletion Deg@1 4.69, where the
    equal-weight mean of its domains is 4.65); the page showed it under "Equal-weight average" unsaid."""
    page = (out / "index.html").read_text(encoding="utf-8")
    average = page.split('data-domain="average"', 1)[1].split('<section class="domain-view"', 1)[0]
    assert "pooled by pair count" in average
    assert 'id="breakdown-mechanism-all"' in average


def test_scatter_names_every_system_tied_for_most_robust() -> None:
    """Three systems at Flip@10 0.00: the plot said "most robust: bm25" (the first name), where the tables
    bold all three."""
    from pqb.harness.reporting import collect, plots

    tidy = collect.tidy_frame(collect.load_runs([DATA]))
    tie = (tidy["domain"] == "video_games") & tidy["metric"].isin(["flip@10", "deg@10"])
    tidy.loc[tie, "value"] = 0.0
    fig = plots.scatter_figure(tidy, "video_games")
    boxes = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text().startswith("most effective")]
    assert boxes and all(b.endswith("most robust: bm25, minilm, splade-tiny") for b in boxes)
