"""Defenses as systems: ``--model_args rewriter=symspell`` wraps BM25 in the offline symspell rewriter
(domain corpus vocabulary); results name the system bm25+symspell, report the correction rate, and keep
their run cache apart from the bare model's."""

from __future__ import annotations

import pytest
from pqb_fixtures import make_tiny_dataset, tiny_tables

from pqb.harness.cli import main
from pqb.harness.errors import ModelArgsError
from pqb.harness.evaluation.results import load_results
from pqb.harness.registry import create_retriever, system_name
from pqb.harness.retrievers.base import Corpus
from pqb.harness.retrievers.rewriters import PySpellCheckerRewriter, SymSpellRewriter


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games",))


def _corpus() -> Corpus:
    docs = sorted(tiny_tables("video_games")["corpus"].to_pylist(), key=lambda d: d["id"])
    return Corpus(
        tuple(d["id"] for d in docs), tuple(d["title"] for d in docs), tuple(d["text"] for d in docs)
    )


def test_symspell_uses_the_corpus_vocabulary():
    r = SymSpellRewriter()
    r.fit(_corpus())
    assert r.rewrite(["wireles controler with batery"]) == ["wireless controller with battery"]
    assert r.rewrite(["Racing Wheel"]) == ["Racing Wheel"]  # known words keep their casing


def test_pyspellchecker_corrects_english():
    assert PySpellCheckerRewriter().rewrite(["the controler is grate"])[0].startswith("the controller")


def test_defense_run_on_the_tiny_dataset(dataset, tmp_path):
    base = ["run", "--tasks", "pqb_error_video_games", "--dataset_path", str(dataset), "--output_path",
            str(tmp_path), "--bootstrap_iters", "50", "--no-progress"]  # fmt: skip
    assert main([*base, "--model", "bm25"]) == 0
    assert main([*base, "--model", "bm25", "--model_args", "rewriter=symspell"]) == 0
    bare = load_results(next((tmp_path / "bm25").glob("results_*.json")))
    defended = load_results(next((tmp_path / "bm25__symspell").glob("results_*.json")))
    assert defended["config"]["model"] == "bm25+symspell"
    assert defended["config"]["model_info"]["rewriter"]["name"] == "symspell"
    e = defended["results"]["pqb_error_video_games"]
    assert 0 < e["rewrite_corrected"] <= 1 and e["rewrite_corrected_ci_lower"] is not None
    assert e["rewrite_clean_kept"] == 1.0  # clean queries are made of corpus words
    assert "rewrite_corrected" not in bare["results"]["pqb_error_video_games"]
    assert e["hit@10_error"] >= bare["results"]["pqb_error_video_games"]["hit@10_error"]
    assert defended["resume"]["pqb_error_video_games"]["model_settings"]["rewriter"]["name"] == "symspell"
    assert main(["compare", str(next((tmp_path / "bm25__symspell").glob("results_*.json"))),
                 str(next((tmp_path / "bm25").glob("results_*.json"))), "--bootstrap_iters", "20",
                 "--permutations", "20"]) == 0  # fmt: skip


def test_names_and_unknown_rewriter():
    assert system_name("bm25", {"rewriter": "symspell"}) == "bm25+symspell"
    assert system_name("bm25", {}) == "bm25"
    with pytest.raises(ModelArgsError, match="known: symspell, pyspellchecker"):
        create_retriever("bm25", "rewriter=hunspell")
    wrapped = create_retriever("bm25", "rewriter=symspell,k1=1.2")
    assert wrapped.inner.k1 == 1.2 and wrapped.name == "bm25+symspell"
