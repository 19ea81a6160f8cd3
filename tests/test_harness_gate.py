"""The authors' variant tasks (macro over ASINs, cosine >= 0.9 pair gate) through the CLI."""

from __future__ import annotations

import numpy as np
import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.evaluation.results import load_results


def test_gate_without_a_model_is_a_one_line_error(tmp_path, capsys) -> None:
    ds = make_tiny_dataset(tmp_path / "ds")
    code = main(["--model", "bm25", "--tasks", "pqb_authors_syntactic_video_games", "--dataset_path", str(ds),
                 "--output_path", str(tmp_path / "out"), "--gate_model", "bm25"])  # fmt: skip
    assert code == 2
    assert "cannot embed queries" in capsys.readouterr().err


@pytest.mark.neural
def test_gate_keeps_only_similar_pairs_and_records_the_gate_model(tmp_path) -> None:
    ds = make_tiny_dataset(tmp_path / "ds")
    out = tmp_path / "out"
    code = main(["--model", "bm25", "--tasks", "pqb_authors_syntactic_video_games,pqb_syntactic_video_games",
                 "--dataset_path", str(ds), "--output_path", str(out), "--gate_model", "minilm",
                 "--bootstrap_iters", "50", "--verbosity", "WARNING"])  # fmt: skip
    assert code == 0
    res = load_results(sorted((out / "bm25").glob("results_*.json"))[-1])
    gated = res["results"]["pqb_authors_syntactic_video_games"]
    plain = res["results"]["pqb_syntactic_video_games"]
    assert gated["n_pairs"] == plain["n_pairs"]
    assert 0 <= gated["n_pairs_gated"] <= gated["n_pairs"]
    assert "n_pairs_gated" not in plain
    assert res["configs"]["pqb_authors_syntactic_video_games"]["gate_model"] == "minilm"
    assert res["n-samples"]["pqb_authors_syntactic_video_games"]["effective"] == gated["n_pairs_gated"]
    if gated["n_pairs_gated"] == 0:
        assert np.isnan(gated["flip@10"]) or gated["flip@10"] is None


def test_macro_variant_rrstd_is_the_std_over_all_queries_of_each_asin(tmp_path) -> None:
    """Without the gate, the macro variant's RRstd = mean over ASINs of the population std of *all*
    that ASIN's RRs (3-user ASINs differ from the pairwise |ΔRR|/2 mean) — recomputed from samples."""
    import json
    from collections import defaultdict

    ds = make_tiny_dataset(tmp_path / "ds")
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "macro.yaml").write_text(
        "task: macro_syntactic_video_games\ndataset_name: video_games\npair_type: syntactic\nmacro_average: true\n"
    )
    out = tmp_path / "out"
    code = main(["--model", "bm25", "--tasks", "macro_syntactic_video_games", "--include_path", str(inc),
                 "--dataset_path", str(ds), "--output_path", str(out), "--log_samples",
                 "--bootstrap_iters", "50", "--verbosity", "WARNING"])  # fmt: skip
    assert code == 0
    res = load_results(sorted((out / "bm25").glob("results_*.json"))[-1])["results"][
        "macro_syntactic_video_games"
    ]
    rrs = defaultdict(list)
    for line in (
        next((out / "details" / "bm25").glob("samples_macro_syntactic_video_games_*.jsonl"))
        .read_text()
        .splitlines()
    ):
        rec = json.loads(line)
        rrs[rec["target"]].append(rec["rr"])
    per_asin = [float(np.std(v)) for v in rrs.values() if len(v) >= 2]
    assert any(len(v) >= 3 for v in rrs.values())  # the fixture has a 3-user ASIN
    assert res["rrstd"] == pytest.approx(float(np.mean(per_asin)), abs=1e-12)
    lo, hi = res["rrstd_ci_lower"], res["rrstd_ci_upper"]
    assert lo <= res["rrstd"] <= hi


@pytest.mark.neural
def test_resume_recomputes_a_gated_task_when_the_gate_models_weights_change(
    tmp_path, monkeypatch, capsys
) -> None:
    """The resume key names the gate model's weights, not just its name: a preset whose checkpoint was
    replaced (a local folder rewritten, a wheel upgraded) gates other pairs, so its results are recomputed."""
    import shutil

    from tiny_models import tiny_sentence_transformer

    from pqb.harness import model_presets

    ckpt = tmp_path / "gate"
    tiny_sentence_transformer(ckpt, seed=0)
    monkeypatch.setitem(
        model_presets.PRESETS, "tiny-gate", {"model": "dense", "args": {"pretrained": str(ckpt)}}
    )
    ds = make_tiny_dataset(tmp_path / "ds")
    out = tmp_path / "out"
    args = ["--model", "bm25", "--tasks", "pqb_authors_syntactic_video_games,pqb_syntactic_video_games",
            "--dataset_path", str(ds), "--output_path", str(out), "--gate_model", "tiny-gate",
            "--bootstrap_iters", "20", "--verbosity", "WARNING", "--overwrite", "only-missing"]  # fmt: skip
    assert main(args) == 0
    first = load_results(sorted((out / "bm25").glob("results_*.json"))[-1])
    assert first["config"]["gate_model_info"]["weights"]["sha256"]
    capsys.readouterr()
    shutil.rmtree(ckpt)
    tiny_sentence_transformer(ckpt, seed=1)  # same name, same folder, other weights
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "resume: pqb_syntactic_video_games: reused from" in err  # ungated: the gate is not its input
    assert "resume: pqb_authors_syntactic_video_games: recomputing" in err
    second = load_results(sorted((out / "bm25").glob("results_*.json"))[-1])
    assert (second["config"]["gate_model_info"]["weights"]["sha256"]
            != first["config"]["gate_model_info"]["weights"]["sha256"])  # fmt: skip
