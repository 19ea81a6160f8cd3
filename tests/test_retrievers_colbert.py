"""``colbertv2`` on a tiny random BERT + ``linear.weight`` in ColBERTv2's checkpoint layout."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import tiny_colbert

from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus

pytestmark = pytest.mark.neural

CORPUS = Corpus(
    ids=("a", "b", "c", "d"),
    titles=("red mouse", "blue keyboard", "game", "pad"),
    texts=(  # the corpus view: the body only (retrievers read title + " " + text)
        "wireless!",
        "",
        "rpg",
        "controller",
    ),
    fingerprint="colbert-fp",
)
QUERIES = ["red mouse", "rpg game"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return tiny_colbert(tmp_path_factory.mktemp("colbert"), extra_text=" ".join(CORPUS.documents()))


@pytest.fixture(scope="module")
def exhaustive(ckpt, tmp_path_factory):
    r = create_retriever("colbertv2", {"pretrained": str(ckpt), "mode": "exhaustive"})
    r.index(CORPUS, cache_dir=tmp_path_factory.mktemp("index"))
    return r


def test_query_has_q_marker_and_mask_augmentation_to_32(exhaustive):
    tok = exhaustive.tokenizer
    ids = exhaustive._tensorize(["red mouse"], query=True)["input_ids"][0].tolist()
    assert len(ids) == 32
    assert ids[:2] == [tok.cls_token_id, tok.convert_tokens_to_ids("[unused0]")]
    assert ids[2:5] == tok.convert_tokens_to_ids(["red", "mouse", "[SEP]"])
    assert set(ids[5:]) == {tok.mask_token_id}
    assert exhaustive.encode(["red mouse"], query=True)[0].shape == (32, 16)


def test_doc_has_d_marker_and_punctuation_is_skipped(exhaustive):
    tok = exhaustive.tokenizer
    ids = exhaustive._tensorize(["red, mouse!"], query=False)["input_ids"][0].tolist()
    assert ids[1] == tok.convert_tokens_to_ids("[unused1]")
    vecs = exhaustive.encode(["red, mouse!"], query=False)[0]
    assert len(vecs) == len(ids) - 2  # "," and "!" dropped; [CLS], [D], words, [SEP] kept
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_exhaustive_scores_are_maxsim_sums(exhaustive):
    scores = exhaustive.score(QUERIES)
    q = exhaustive.encode(QUERIES, query=True)
    d = exhaustive.encode(CORPUS.documents(), query=False)
    want = np.array([[(qv @ dv.T).max(1).sum() for dv in d] for qv in q])
    np.testing.assert_allclose(scores, want, rtol=2e-3, atol=2e-3)  # doc vectors cached in float16
    assert scores.shape == (2, 4) and exhaustive.full_scoring


def test_rerank_mode_reorders_first_stage_candidates_by_maxsim(ckpt, exhaustive, tmp_path):
    r = create_retriever("colbertv2", {"pretrained": str(ckpt), "mode": "rerank", "first_stage_k": 4})
    r.index(CORPUS, cache_dir=tmp_path)
    assert r.full_scoring is False
    res = r.search(QUERIES, 4)
    full = exhaustive.score(QUERIES)
    got = np.take_along_axis(full, res.indices, axis=1)
    np.testing.assert_allclose(got, res.scores, rtol=2e-3, atol=2e-3)
    assert np.all(np.diff(res.scores, axis=1) <= 1e-6)


def test_second_index_hits_the_token_matrix_cache(ckpt, tmp_path):
    for expected_hits in (0, 1):
        r = create_retriever("colbertv2", {"pretrained": str(ckpt)})
        r.index(CORPUS, cache_dir=tmp_path)
        assert r.stats["index_cache_hits"] == expected_hits
    assert r.stats["docs_encoded"] == 0 and r.describe()["mode_used"] == "exhaustive"


def test_rerank_key_holds_the_first_stages_settings_not_only_its_name(ckpt, tmp_path, monkeypatch):
    """A first-stage preset whose checkpoint was replaced proposes other candidates: ColBERT's
    ``cache_settings`` (run cache and resume key) change with it, and stay put across ``index``."""
    import shutil

    from tiny_models import tiny_sentence_transformer

    from pqb.harness import model_presets

    first = tmp_path / "first"
    tiny_sentence_transformer(first, extra_text=" ".join(CORPUS.documents()), seed=0)
    monkeypatch.setitem(
        model_presets.PRESETS, "tiny-first", {"model": "dense", "args": {"pretrained": str(first)}}
    )
    args = {"pretrained": str(ckpt), "mode": "rerank", "first_stage": "tiny-first", "first_stage_k": 4}
    before = create_retriever("colbertv2", args)
    key = before.cache_settings()
    before.index(CORPUS, cache_dir=tmp_path / "index")
    assert before.cache_settings() == key
    assert key["first_stage_settings"]["weights"]["sha256"]
    assert (
        before.describe()["first_stage_info"]["weights"]["sha256"]
        == key["first_stage_settings"]["weights"]["sha256"]
    )
    shutil.rmtree(first)
    tiny_sentence_transformer(first, extra_text=" ".join(CORPUS.documents()), seed=1)  # other weights
    assert create_retriever("colbertv2", args).cache_settings() != key
    exhaustive = create_retriever("colbertv2", {**args, "mode": "exhaustive"}).cache_settings()
    assert "first_stage_settings" not in exhaustive  # no first stage, nothing to key
