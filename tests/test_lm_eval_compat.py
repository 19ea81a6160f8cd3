"""Our results folders read as lm-eval results: lm-eval's own ``make_table`` and the Hugging Face Demo
Leaderboard's reader logic (reimplemented below from its documented behaviour) on a real run.

The Demo Leaderboard template reads a results folder so: walk it; skip every folder that holds any
file not ending in ``.json``; read each ``.json`` of the other folders as one run: precision from
``config.model_dtype``, org/model from ``config.model_name`` (else ``config.model_args``) split once
on "/", revision from ``config.model_sha``; each leaderboard column (benchmark, metric) is the mean of
``results[benchmark][metric]`` x 100, left out when absent or null; files of one (model, precision)
merge. A dict ``model_args`` made it raise AttributeError and the samples beside the JSON made it
skip every model folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pqb.builders.publish.tables import config_path
from pqb.dataset import settings
from pqb.harness.cli import main

DS = settings.REPO_ROOT / "pqb_dataset"
pytestmark = pytest.mark.skipif(
    not config_path(DS, "video_games").exists(), reason="pqb_dataset/ has not been built (run pqb-build)"
)
PRECISIONS = {"torch.float16": "float16", "float16": "float16", "torch.bfloat16": "bfloat16",
              "bfloat16": "bfloat16", "torch.float32": "float32", "float32": "float32"}  # fmt: skip
COLUMNS = [("pqb_error_video_games", "deg@10"), ("pqb_syntactic_video_games", "flip@10"),
           ("syntactic", "flip@10"), ("error", "deg@10")]
"""A leaderboard's (benchmark, metric) columns; its results are keyed by benchmark, one metric each."""


def demo_leaderboard_read(results_path: Path) -> dict[str, dict]:
    """The Demo Leaderboard's reading logic (see the module docstring), returning its merged entries."""
    paths = []
    for root, _, files in os.walk(results_path):
        if not files or any(not f.endswith(".json") for f in files):
            continue
        files.sort(key=lambda f: f.removesuffix(".json").removeprefix("results_")[:-7])
        paths += [Path(root) / f for f in files]
    merged: dict[str, dict] = {}
    for path in paths:
        data = json.loads(path.read_text())
        config = data.get("config")
        precision = PRECISIONS.get(config.get("model_dtype"), "Unknown")
        org_and_model = config.get("model_name", config.get("model_args", None)).split("/", 1)
        results = {}
        for benchmark, metric in COLUMNS:
            values = np.array([v.get(metric, None) for k, v in data["results"].items() if k == benchmark])
            if values.size == 0 or any(v is None for v in values):
                continue
            results[benchmark] = float(np.mean(values) * 100.0)
        key = "_".join([*org_and_model, precision])
        entry = merged.setdefault(key, {"model": "/".join(org_and_model), "precision": precision,
                                        "revision": config.get("model_sha", ""), "results": {}, "files": []})  # fmt: skip
        entry["results"].update(results)
        entry["files"].append(path.name)
    return merged


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("lm_eval") / "results"
    code = main(["run", "--model", "bm25", "--model_args", "k1=1.2,b=0.75", "--tasks", "pqb", "--dataset_path",
                 str(DS), "--output_path", str(out), "--log_samples", "--bootstrap_iters", "50", "--no-progress"])  # fmt: skip
    assert code == 0
    (path,) = (out / "bm25").glob("results_*.json")
    return out, json.loads(path.read_text())


def test_lm_eval_model_fields(run) -> None:
    _, res = run
    cfg = res["config"]
    assert (res["model_name"], res["model_name_sanitized"]) == ("bm25", "bm25")
    assert (cfg["model_name"], cfg["model_name_sanitized"]) == ("bm25", "bm25")
    assert cfg["model_args"] == "k1=1.2,b=0.75" and cfg["model_kwargs"] == {"k1": 1.2, "b": 0.75}
    assert cfg["model_sha"] == "" and cfg["model_revision"] == "main" and cfg["model_dtype"] == "none"


def test_model_dtype_of_a_hybrid_names_its_components_dtypes() -> None:
    from pqb.harness.evaluation.results import lm_eval_model_fields

    info = {"name": "hybrid", "components": [{"name": "dense", "dtype": "bfloat16"}, {"name": "bm25"},
                                             {"name": "splade", "dtype": "float32"}]}  # fmt: skip
    assert lm_eval_model_fields("h", {}, info)["model_dtype"] == "torch.bfloat16+torch.float32"
    assert lm_eval_model_fields("d", {}, {"dtype": "float32"})["model_dtype"] == "torch.float32"
    assert lm_eval_model_fields("b", {}, {"components": [{"name": "bm25"}]})["model_dtype"] == "none"


def test_results_entries_hold_metrics_and_stderrs_only(run) -> None:
    _, res = run
    assert set(res["groups"]) <= set(res["results"])  # groups in results too, as lm-eval writes them
    for section in ("results", "groups"):
        for name, entry in res[section].items():
            loose = {k for k, v in entry.items() if not isinstance(v, int | float) and v is not None}
            assert loose == {"alias"}, (name, loose)
            assert not any(k.endswith(("_ci_lower", "_ci_upper")) or k in {"n_pairs", "bootstrap_unit",
                                                                          "pair_type"} for k in entry), name  # fmt: skip
    e = res["results"]["pqb_error_video_games"]
    lo, hi = res["confidence_intervals"]["pqb_error_video_games"]["mrr_deg"]
    assert lo <= e["mrr_deg"] <= hi and 0 < e["mrr_deg_stderr,"] < hi - lo  # a 95% CI spans about 4 SE
    assert res["task_info"]["pqb_error_video_games"]["n_pairs"] > 0
    assert res["task_info"]["pqb/error"]["pair_type"] == "error"


def test_lm_eval_make_table_prints_one_row_per_metric_with_its_stderr(run) -> None:
    make_table = pytest.importorskip("lm_eval.utils", reason="lm_eval is in the dev extra").make_table
    _, res = run
    for column in ("results", "groups"):
        table = make_table(json.loads(json.dumps(res)), column)
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
        metrics = [r[4] for r in rows]
        assert metrics and all(
            re.fullmatch(r"(flip|deg|hit|ndcg)@\d+(_expected|_ratio|_clean|_error)?|rrstd|mrr(_deg|_clean|_error)?"
                         r"|(hit@\d+|ndcg@10)(_clean|_error)|ndcg_at_10", m) for m in metrics
        ), table  # fmt: skip
        with_value = [r for r in rows if r[6]]
        assert with_value and all(r[7] == "±" and re.fullmatch(r"\d+\.\d{4}", r[8]) for r in with_value), table
    names = {r.split("|")[1].strip().lstrip("- ") for r in make_table(res, "results").splitlines()[2:]}
    assert {"syntactic", "error", "pqb/syntactic", "pqb/error"} & names  # group rows in the results table


def test_demo_leaderboard_reader_reads_our_folder(run) -> None:
    out, res = run
    assert (out / "details" / "bm25").is_dir()  # samples and runs exist, out of the model folder
    entries = demo_leaderboard_read(out)
    assert list(entries) == ["bm25_Unknown"] and entries["bm25_Unknown"]["files"] == [
        next((out / "bm25").glob("results_*.json")).name
    ]
    got = entries["bm25_Unknown"]["results"]
    for benchmark, metric in COLUMNS:
        assert got[benchmark] == pytest.approx(100 * res["results"][benchmark][metric])
    assert got["syntactic"] == pytest.approx(100 * res["groups"]["syntactic"]["flip@10"])  # domain averages


def test_samples_beside_the_json_would_hide_the_model(run, tmp_path: Path) -> None:
    """What the details folder avoids, reproduced: one non-JSON file and the reader skips the model."""
    out, _ = run
    copy = tmp_path / "results"
    shutil.copytree(out / "bm25", copy / "bm25")
    next((out / "details" / "bm25").glob("samples_*.jsonl")).replace(copy / "bm25" / "samples_x.jsonl")
    assert demo_leaderboard_read(copy) == {}
