"""``bge-m3`` / ``bge-m3-dense`` on a tiny random checkpoint in BGE-M3's layout (tests/tiny_models.py)."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import tiny_bgem3

from pqb.harness.errors import ModelNotAvailableError
from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus
from pqb.harness.retrievers.neural.encoding import zscore_rows

pytestmark = pytest.mark.neural

CORPUS = Corpus(
    ids=("a", "b", "c", "d"),
    titles=("red mouse", "blue keyboard", "game", "pad"),
    texts=(  # the corpus view: the body only (retrievers read title + " " + text)
        "wireless",
        "",
        "rpg rpg",
        "controller",
    ),
    fingerprint="m3-fp",
)
QUERIES = ["red mouse", "rpg game"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return tiny_bgem3(tmp_path_factory.mktemp("bgem3"), extra_text=" ".join(CORPUS.documents()))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("index")


def _manual(ckpt, text, max_length=512):
    """The three heads written out directly from the checkpoint files."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(ckpt), AutoModel.from_pretrained(ckpt).eval()
    colbert, sparse = torch.nn.Linear(32, 32), torch.nn.Linear(32, 1)
    colbert.load_state_dict(torch.load(ckpt / "colbert_linear.pt"))
    sparse.load_state_dict(torch.load(ckpt / "sparse_linear.pt"))
    enc = tok([text], truncation=True, max_length=max_length, return_tensors="pt")
    with torch.inference_mode():
        h = model(**enc).last_hidden_state[0]
        dense = torch.nn.functional.normalize(h[0], dim=-1).numpy()
        w = torch.relu(sparse(h)).squeeze(-1).numpy()
        vecs = torch.nn.functional.normalize(colbert(h[1:]), dim=-1).numpy()
    lex: dict[int, float] = {}
    for i, tid in enumerate(enc["input_ids"][0].tolist()):
        if tid not in {tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.unk_token_id} and w[i] > 0:
            lex[tid] = max(lex.get(tid, 0.0), float(w[i]))
    return dense, lex, vecs


def test_components_equal_the_heads_written_out(ckpt, cache):
    r = create_retriever("bge-m3", {"pretrained": str(ckpt), "dtype": "fp32"})
    r.index(CORPUS, cache_dir=cache)
    parts = r.component_scores(QUERIES)
    for qi, q in enumerate(QUERIES):
        qd, ql, qv = _manual(ckpt, q)
        for di, d in enumerate(CORPUS.documents()):
            dd, dl, dv = _manual(ckpt, d)
            assert parts["dense"][qi, di] == pytest.approx(float(qd @ dd), abs=1e-5)
            assert parts["sparse"][qi, di] == pytest.approx(
                sum(w * dl.get(t, 0.0) for t, w in ql.items()), abs=1e-4
            )
            assert parts["colbert"][qi, di] == pytest.approx(float((qv @ dv.T).max(1).mean()), abs=1e-3)
    assert r.describe()["weights"]["backend"] in {"transformers", "flagembedding"}


def test_paper_fusion_is_zscored_1_0_3_1_and_weighted_sum_is_flagembeddings(ckpt, cache):
    create_retriever("bge-m3", {"pretrained": str(ckpt), "dtype": "fp32"}).index(CORPUS, cache_dir=cache)
    r = create_retriever("bge-m3", {"pretrained": str(ckpt), "dtype": "fp32"})  # same cache, also when run alone
    r.index(CORPUS, cache_dir=cache)
    assert r.stats["index_cache_hits"] == 1 and r.stats["docs_encoded"] == 0
    p = r.component_scores(QUERIES)
    want = zscore_rows(p["dense"]) + 0.3 * zscore_rows(p["sparse"]) + zscore_rows(p["colbert"])
    np.testing.assert_allclose(r.score(QUERIES), want, rtol=1e-4, atol=1e-5)
    ws = create_retriever(
        "bge-m3", {"pretrained": str(ckpt), "fusion": "weighted_sum", "weights": "0.4+0.2+0.4", "dtype": "fp32"}
    )
    ws.index(CORPUS, cache_dir=cache)
    np.testing.assert_allclose(
        ws.score(QUERIES), (0.4 * p["dense"] + 0.2 * p["sparse"] + 0.4 * p["colbert"]) / 1.0, rtol=1e-4
    )


def test_no_multivector_truncation_by_default_and_the_papers_cut_as_an_option(ckpt, cache):
    full = create_retriever("bge-m3", {"pretrained": str(ckpt), "dtype": "fp32"})
    cut = create_retriever("bge-m3", {"pretrained": str(ckpt), "colbert_max_tokens": 2, "dtype": "fp32"})
    full.index(CORPUS, cache_dir=cache)
    cut.index(CORPUS, cache_dir=cache)
    assert cut.stats["docs_encoded"] == 4  # a different setting is a different index
    assert int(np.diff(full.colbert_offsets).max()) > 2
    assert int(np.diff(cut.colbert_offsets).max()) == 2
    assert full.describe()["colbert_max_tokens"] is None


def test_dense_only_variant(ckpt, cache):
    r = create_retriever("bge-m3-dense", {"pretrained": str(ckpt), "dtype": "fp32"})
    r.index(CORPUS, cache_dir=cache)
    full = create_retriever("bge-m3", {"pretrained": str(ckpt), "dtype": "fp32"})
    full.index(CORPUS, cache_dir=cache)
    np.testing.assert_allclose(r.score(QUERIES), full.component_scores(QUERIES)["dense"], atol=1e-6)
    assert r.describe()["components"] == ["dense"]


def test_missing_heads_are_named(tmp_path, ckpt):
    import shutil

    broken = tmp_path / "m3"
    shutil.copytree(ckpt, broken)
    (broken / "sparse_linear.pt").unlink()
    r = create_retriever("bge-m3", {"pretrained": str(broken), "backend": "transformers"})
    with pytest.raises(ModelNotAvailableError, match=r"sparse_linear\.pt"):
        r.index(CORPUS, cache_dir=tmp_path / "c")
