"""Saturation travels with the number (issue 44): compare, compare-paper, the page, the plot and the Space.

On a corpus small enough that BM25 finds every target (the embedded slice; here the synthetic tiny
dataset), Flip@K = 0 at K ≥ 5 says "no room to flip". Before: ``compare`` called it significantly more
robust (p = 0.001) without a mark, ``compare-paper`` printed its gap to the paper unmarked, the page made
it bold as most robust and the plot named it most robust, the Space showed no mark. And the "expected
flip below the CI width" clause called a 10-pair run saturated at Hit@5 = 60%.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from pqb_fixtures import make_tiny_dataset

import pqb.harness as ph
from pqb.dataset import settings
from pqb.dataset.rules import SATURATION_MIN_PAIRS
from pqb.harness.evaluation.compare import _metric_rows, compare_markdown, compare_results
from pqb.harness.evaluation.results import load_results, saturation, summary_table
from pqb.harness.reporting.leaderboard import write_leaderboard


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bm25 (saturated at K 5, 10, 20 on the tiny corpus) and random (not saturated at K 20: too few pairs)."""
    data = make_tiny_dataset(tmp_path_factory.mktemp("tiny"))
    out = tmp_path_factory.mktemp("results")
    for model in ("bm25", "random"):
        ph.evaluate(model=model, tasks="pqb", dataset_path=str(data), bootstrap_iters=100, output_path=out,
                    progress=False, notify=lambda line: None)  # fmt: skip
    return out


def _file(runs: Path, model: str) -> dict:
    (path,) = (runs / model).glob("results_*.json")
    return load_results(path)


# -- the rule ----------------------------------------------------------------------------------------------


def _entry(n_pairs: int) -> dict:
    """An error task at Hit@5 = 60% on both sides, whose Deg@5 CI (60 points wide) exceeds 2p(1−p) = 0.48."""
    return {"n_pairs": n_pairs, "hit@5_clean": 0.6, "hit@5_error": 0.6, "flip@5_expected": 0.48,
            "deg@5_ci_lower": -0.2, "deg@5_ci_upper": 0.4}  # fmt: skip


def test_a_wide_ci_on_few_pairs_is_too_few_pairs_not_saturation() -> None:
    assert saturation(_entry(10), "error") == {
        "saturated_at": [],
        "too_few_pairs_at": [5],
    }  # was saturated at 5
    assert saturation(_entry(SATURATION_MIN_PAIRS), "error") == {"saturated_at": [5], "too_few_pairs_at": []}
    ceiling = {**_entry(10), "hit@5_clean": 0.99, "hit@5_error": 0.97}
    assert saturation(ceiling, "error")["saturated_at"] == [5]  # the ceiling needs no minimum


def test_the_summary_says_too_few_pairs(runs: Path) -> None:
    table = summary_table(_file(runs, "random"))
    assert "too few pairs at 20" in table and f"fewer than {SATURATION_MIN_PAIRS} pairs" in table


# -- compare -------------------------------------------------------------------------------------------------


def test_compare_never_stars_a_saturated_cut_off(runs: Path) -> None:
    report = compare_results(_file(runs, "bm25"), _file(runs, "random"), n_boot=200, n_perm=200)
    task = report["tasks"]["pqb_syntactic_video_games"]
    assert task["saturated_at"]["a"] == [5, 10, 20]
    for k in (5, 10, 20):
        row = task["metrics"][f"flip@{k}"]
        assert row["saturated"] and not row["significant"]
    assert not task["metrics"]["hit@10"]["saturated"]  # effectiveness is no robustness claim
    text = compare_markdown(report)
    assert re.search(r"\| flip@10 \|.*ˢ", text) and "ˢ saturated: both sides' Hit@K" in text
    assert "saturated at K: A 5,10,20" in text


def test_compare_stars_only_where_the_test_and_the_ci_agree() -> None:
    """``flip@1_ratio 0.23 [-0.37, 0.75] p 0.0260 *``: the CI held 0 and the row was starred."""
    reps = {"m": np.linspace(-0.37, 0.75, 101)}  # CI includes 0
    perm = {"m": np.r_[np.full(25, 0.5), np.zeros(975)]}  # p = 26/1001 < 0.05
    (row,) = _metric_rows({"m": 0.61}, {"m": 0.38}, {"m": 0.23}, reps, perm, {"m": False}).values()
    assert row["p_value"] < 0.05 and row["diff_ci"][0] < 0 < row["diff_ci"][1]
    assert row["significant"] is False and row["evidence"] == "test only"
    text = compare_markdown({"a": {"model": "A"}, "b": {"model": "B"}, "settings": {"n_perm": 1000},
                             "tasks": {"t": {"metrics": {"m": row}}}, "groups": {}})  # fmt: skip
    assert "| m |" in text and "(test only)" in text and " *" not in text.split("| m |")[1]


# -- compare-paper, the page, the plot, the Space -----------------------------------------------------------


@pytest.fixture(scope="module")
def board(runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("board")
    write_leaderboard([runs], out)
    return out


def test_compare_paper_marks_saturated_cells(board: Path) -> None:
    text = (board / "paper_comparison.md").read_text(encoding="utf-8")
    bm25 = next(line for line in text.splitlines() if line.startswith("| bm25 |") and "Flip" not in line)
    assert re.search(r"\*\*0\.00\*\*ˢ / 28\.22", bm25), bm25  # was "**0.00** / 28.22 (-28.22)", unmarked
    assert "ˢ = our value is saturated at that K" in text


def test_the_page_never_bolds_a_saturated_cell(board: Path) -> None:
    page = (board / "index.html").read_text(encoding="utf-8")
    table = page.split('id="syntactic-average"', 1)[1].split("</table>", 1)[0]
    bm25 = table.split("<tr>", 3)[2]  # header row, then bm25 (sorted by name), then random
    cells = re.findall(r"<td[^>]*>.*?</td>", bm25)
    flip20 = cells[4]  # model, Flip@1, @5, @10, @20
    assert "ˢ" in flip20 and 'class="best"' not in flip20, flip20


def test_the_plot_never_names_a_saturated_system_most_robust(runs: Path) -> None:
    from pqb.harness.reporting.collect import load_runs, tidy_frame
    from pqb.harness.reporting.plots import scatter_figure

    fig = scatter_figure(tidy_frame(load_runs([runs])))
    texts = [t.get_text() for ax in fig.axes for t in ax.texts if "most robust" in t.get_text()]
    assert texts and all("most robust: bm25" not in t for t in texts), texts
    assert any("not ranked): bm25" in t or "not ranked): bm25, random" in t for t in texts), texts


def test_the_space_marks_saturation_in_one_number_format(app, board: Path) -> None:
    frame = app.load_leaderboard(board / "leaderboard.parquet")
    cell = r"-?\d+\.\d{2}ˢ?( \[-?\d+\.\d{2}, -?\d+\.\d{2}\])?"
    for pair_type in ("syntactic", "error"):
        table = app.summary_table(frame, pair_type).set_index("model")
        for metric in app.ROBUSTNESS[pair_type] + app.EFFECTIVENESS[pair_type]:
            assert all(re.fullmatch(cell, v) for v in table[metric]), table[metric]
    assert table.loc["bm25", "deg@10"].startswith("0.00ˢ") and "ˢ" not in table.loc["bm25", "mrr_clean"]
    # bm25's Deg@10 of 0 is saturated, random's is not: random first, though bm25's 0 is lower
    assert list(table.index) == ["random", "bm25"] and "ˢ" not in table.loc["random", "deg@10"]


def test_the_space_has_requirements_naming_the_distribution() -> None:
    name = tomllib.loads((settings.REPO_ROOT / "pyproject.toml").read_text())["project"]["name"]
    lines = [
        line.split("#")[0].strip()
        for line in (settings.REPO_ROOT / "leaderboard" / "requirements.txt").read_text().splitlines()
    ]
    assert any(line.startswith(f"{name}[space]") for line in lines), lines


# -- breakdowns -------------------------------------------------------------------------------------------------


def test_breakdown_cells_over_few_pairs_show_n_and_are_never_bold(board: Path) -> None:
    page = (board / "index.html").read_text(encoding="utf-8")
    part = page.split("Deg@K by", 1)[1].split("</table>", 1)[0]
    few = re.findall(r'<td data-value="[^"]*" class="few"[^>]*>.*?</td>', part)
    assert few and all("n = " in c and "best" not in c for c in few)
    text = (board / "error_breakdown.md").read_text(encoding="utf-8")
    assert re.search(r"\| \d+\.\d{2} \(n = \d\) \|", text)


@pytest.mark.slow
@pytest.mark.neural
def test_compare_bm25_minilm_on_the_embedded_build_has_no_unmarked_saturated_star(tmp_path: Path) -> None:
    """The issue's own case: BM25 is saturated at K ≥ 5 on the embedded slice; no starred row may sit at a
    saturated K, and every saturated row carries the mark."""
    data = str(settings.REPO_ROOT / "pqb_dataset")
    files = []
    for model in ("bm25", "minilm"):
        path = tmp_path / f"{model}.json"
        ph.evaluate(model=model, tasks="pqb", dataset_path=data, bootstrap_iters=200, output_path=path,
                    progress=False, notify=lambda line: None)  # fmt: skip
        files.append(load_results(path))
    report = compare_results(*files, n_boot=200, n_perm=200)
    saturated = report["tasks"]["pqb_syntactic_video_games"]["saturated_at"]["a"]
    assert {5, 10, 20} <= set(saturated)  # BM25 on the embedded build (K = 1 too before issue 43's rebuild)
    rows = [(t, m, r) for t, e in report["tasks"].items() for m, r in e["metrics"].items()]
    assert any(r["saturated"] for _, _, r in rows)
    assert not [(t, m) for t, m, r in rows if r["saturated"] and r["significant"]]
    text = compare_markdown(report)
    for task, entry in report["tasks"].items():  # each task's table: its saturated rows, and only those, marked
        table = text.split(f"### task {task}", 1)[1].split("\n### ", 1)[0]
        for metric, r in entry["metrics"].items():
            (line,) = [ln for ln in table.splitlines() if ln.startswith(f"| {metric} |")]
            assert ("ˢ" in line.split("|")[-2]) == bool(r["saturated"]), line  # the p cell: "0.1095 ˢ (CI only)"
            if r["saturated"]:
                assert " *" not in line, line
