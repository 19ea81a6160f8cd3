"""``llm-rerank`` and ``cross-encoder`` over a bm25 first stage (tiny random models; SmolLM2 plumbing)."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import tiny_causal_lm, tiny_cross_encoder

from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus

pytestmark = pytest.mark.neural

CORPUS = Corpus(
    ids=tuple(f"d{i}" for i in range(6)),
    titles=("red mouse", "blue keyboard", "racing wheel", "game pad", "red keyboard", "mouse pad"),
    texts=(  # the corpus view: the body only (retrievers read title + " " + text)
        "wireless",
        "",
        "pedals",
        "controller",
        "light",
        "long text " * 40,
    ),
    fingerprint="rerank-fp",
)
QUERIES = ["red mouse", "keyboard"]


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("lm"), extra_text=" ".join(CORPUS.documents()))


def test_qwen3_reranker_prompt_is_the_official_format(lm):
    r = create_retriever("qwen3-reranker-8b", {"pretrained": str(lm)})
    r._load()
    prompt = r.build_prompt("red mouse", "product: red mouse")
    assert prompt == (
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
        'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
        "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
        "<Query>: red mouse\n<Document>: product: red mouse<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert r.yes_variants == ["yes"] and r.no_variants == ["no"]


def test_score_is_p_yes_over_yes_plus_no_from_next_token_logits(lm):
    import torch

    r = create_retriever("llm-rerank", {"pretrained": str(lm), "prompt_format": "chat", "dtype": "fp32"})
    r._load()
    got = r.score_pairs(["red mouse", "keyboard"], ["product: red mouse", "product: blue keyboard light"])
    for i, (q, d) in enumerate(
        [("red mouse", "product: red mouse"), ("keyboard", "product: blue keyboard light")]
    ):
        enc = r.tokenizer([r.build_prompt(q, d)], add_special_tokens=False, return_tensors="pt").to(r.model.device)
        with torch.inference_mode():
            p = torch.softmax(r.model(**enc).logits[0, -1].float(), dim=-1)
        yes, no = p[r.yes_ids].sum().item(), p[r.no_ids].sum().item()
        assert got[i] == pytest.approx(
            yes / (yes + no), rel=1e-4
        )  # batching with left padding changes nothing
    assert len(r.yes_ids) == 4  # yes, " yes", Yes, " Yes" are single tokens here


def test_every_query_is_reranked_and_the_tail_keeps_first_stage_order(lm, tmp_path):
    r = create_retriever(
        "llm-rerank", {"pretrained": str(lm), "first_stage_k": 5, "rerank_k": 3, "doc_chars": 30}
    )
    r.index(CORPUS, cache_dir=tmp_path)
    first = r.first_stage.search(QUERIES, 5).indices
    res = r.search(QUERIES, 5)
    assert r.stats["docs_encoded"] == sum(int((row[:3] >= 0).sum()) for row in first)
    for qi in range(2):
        valid = first[qi][first[qi] >= 0]
        assert sorted(res.indices[qi][:3].tolist()) == sorted(valid[:3].tolist())
        assert res.indices[qi][3 : len(valid)].tolist() == valid[3:].tolist()
    assert r.describe()["doc_chars"] == 30 and r.full_scoring is False
    assert r._doc_for_prompt(5) == CORPUS.documents()[5][:30]


def test_cross_encoder_reranks_by_model_logits(tmp_path):
    ce = tiny_cross_encoder(tmp_path / "ce", extra_text=" ".join(CORPUS.documents()))
    r = create_retriever("cross-encoder", {"pretrained": str(ce), "first_stage_k": 6, "rerank_k": 4})
    r.index(CORPUS, cache_dir=tmp_path / "c")
    res = r.search(["red mouse"], 6)
    head = res.indices[0][:4]
    logits = r.score_pairs(["red mouse"] * 4, [CORPUS.documents()[i] for i in head])
    np.testing.assert_allclose(res.scores[0][:4], logits, rtol=1e-5)
    assert np.all(np.diff(res.scores[0][:4]) <= 0)
    assert r.describe()["weights"]["model"] == str(ce.resolve())
