"""The leaderboard on a task a user defines with --include_path: pair type, domain view and K columns
come from the task config the results recorded (it crashed with KeyError: "None of ['model'] ...")."""

from __future__ import annotations

import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.reporting.collect import load_runs, tidy_frame

TASK = """task: my_typos_vg
dataset_name: video_games
pair_type: error
k_values: [3, 10]
"""


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    ds = make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games",))
    tasks = tmp_path_factory.mktemp("tasks")
    (tasks / "my_typos.yaml").write_text(TASK)
    out = tmp_path_factory.mktemp("res")
    for model in ("bm25", "random"):
        assert main(["run", "--model", model, "--tasks", "my_typos_vg,pqb_error_video_games", "--include_path",
                     str(tasks), "--dataset_path", str(ds), "--output_path", str(out), "--bootstrap_iters", "30",
                     "--no-progress"]) == 0  # fmt: skip
    return out


def test_custom_task_is_rendered(results_dir, tmp_path):
    out = tmp_path / "lb"
    assert main(["leaderboard", str(results_dir), "--out", str(out), "--no-paper", "--compare",
                 "--compare-iters", "50"]) == 0  # fmt: skip
    md = (out / "error_robustness.md").read_text()
    assert "### Domain: my_typos_vg" in md and "deg@3 (%)" in md
    custom = md.split("### Domain: my_typos_vg")[1]
    assert "Deg@1 (%)" not in custom.split("###")[0]  # its own K, not the paper's
    html = (out / "index.html").read_text()
    assert 'data-domain="my_typos_vg"' in html
    sig = (out / "significance.md").read_text()
    assert "my_typos_vg" in sig
    tidy = tidy_frame(load_runs([results_dir]))
    rows = tidy[tidy["task"] == "my_typos_vg"]
    assert set(rows["pair_type"]) == {"error"} and set(rows["k_values"]) == {"3,10"}
    avg = tidy[(tidy["domain"] == "average") & (tidy["pair_type"] == "error")]
    assert not avg.empty and set(avg["run_file"].str.contains("my_typos").unique()) <= {False}


def test_page_marks_the_significant_cells_it_is_given(results_dir, tmp_path):
    from pqb.harness.reporting.collect import breakdown_frame
    from pqb.harness.reporting.page import render_html

    runs = load_runs([results_dir])
    tidy, breakdown = tidy_frame(runs), breakdown_frame(runs)
    plain = render_html(tidy, breakdown)
    assert 'class="sig"' not in plain and "† = differs" not in plain
    marked = render_html(tidy, breakdown, significant={("error", "video_games", "random", "deg@10")})
    assert marked.count('class="sig"') == 1 and "† = differs significantly" in marked
    assert "random" in marked.split('class="sig"')[0].rsplit("<tr>", 1)[1]  # on the random model's row

    out = tmp_path / "lb"
    assert main(["leaderboard", str(results_dir), "--out", str(out), "--no-paper", "--compare",
                 "--compare-iters", "50"]) == 0  # fmt: skip
    tables = (out / "error_robustness.md").read_text() + (out / "syntactic_robustness.md").read_text()
    cells = sum(line.count(" †") for line in tables.splitlines() if line.startswith("|"))  # not the legend
    assert (out / "index.html").read_text().count('class="sig"') == cells


def test_average_is_tested_only_between_averages_of_the_same_domains(monkeypatch):
    """The average table's † compared the shared domains only: splade-tiny (video_games) against bm25's
    mean of two domains was tested on video_games and the Δ printed as the averages' difference."""
    from pathlib import Path

    from pqb.harness.evaluation import compare
    from pqb.harness.reporting import significance

    runs = load_runs([Path(__file__).parent / "data" / "leaderboard" / "results"])
    for run in runs:
        run.data["ranks"] = {t: {} for t in run.data["results"]}
    seen = []

    def fake(ra, rb, *, tasks, **_):
        seen.append(tuple(tasks))
        row = {"diff": -0.01, "diff_ci": [-0.02, 0.0], "p_value": 0.01, "significant": True}
        metrics = {m: row for m in ("flip@1", "flip@5", "flip@10", "flip@20", "rrstd", "deg@1", "deg@5",
                                    "deg@10", "deg@20", "mrr_deg")}  # fmt: skip
        return {"groups": {p: {"metrics": metrics} for p in ("syntactic", "error")},
                "tasks": {t: {"metrics": metrics} for t in tasks}}  # fmt: skip

    monkeypatch.setattr(compare, "compare_results", fake)
    frame = significance.significance_frame(runs, tidy_frame(runs), n_boot=1, n_perm=1)
    average = frame[frame["domain"] == "average"]
    assert average.empty, average[["best", "model"]]  # splade-tiny is best, and ran 1 domain of 2
    assert not frame[frame["domain"] == "video_games"].empty
