"""The authors' variant tasks (macro over ASINs, cosine >= 0.9 pair gate) through the CLI."""

from __future__ import annotations

import numpy as np
import pytest
from pqb_fixtures import make_tiny_dataset

from harness.cli import main
from harness.results import load_results


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
