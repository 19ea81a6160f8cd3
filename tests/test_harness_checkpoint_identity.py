"""A local checkpoint's identity covers its configs and tokenizer, not only its weight files: changing
``max_seq_length`` in ``sentence_bert_config.json`` once reused the embeddings (and ranks) encoded with
the old length. A tiny sentence-transformers model built here, offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny_models import tiny_sentence_transformer

from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus

pytestmark = pytest.mark.neural

CORPUS = Corpus(
    ids=("g1", "g2", "g3"),
    titles=("Wireless Controller", "Racing Wheel", "Gaming Headset"),
    texts=(
        "features: long battery life with a textured grip and motion",
        "with pedals and a long cable",
        "surround sound microphone for the console",
    ),
    fingerprint="identity-fp",
)


def _indexed(model, cache):
    r = create_retriever("dense", {"pretrained": str(model), "dtype": "fp32", "device": "cpu"})
    r.index(CORPUS, cache_dir=cache)
    return r


def test_changed_max_seq_length_is_another_checkpoint(tmp_path):
    pytest.importorskip("sentence_transformers")
    model = tiny_sentence_transformer(tmp_path / "st", extra_text=" ".join(CORPUS.texts + CORPUS.titles))
    cache = tmp_path / "index"
    first = _indexed(model, cache)
    assert _indexed(model, cache).stats["index_cache_hits"] == 1  # same checkpoint: the cache serves it

    config = model / "sentence_bert_config.json"
    settings = json.loads(config.read_text())
    config.write_text(json.dumps({**settings, "max_seq_length": 4}))
    second = _indexed(model, cache)
    assert second.stats["index_cache_hits"] == 0  # re-encoded, not the stale embeddings
    assert second.describe()["weights"]["sha256"] != first.describe()["weights"]["sha256"]
    fresh = _indexed(model, tmp_path / "fresh")
    np.testing.assert_array_equal(second.doc_embeddings, fresh.doc_embeddings)
    assert not np.allclose(second.doc_embeddings, first.doc_embeddings)  # the length did change them


def test_docs_and_hidden_files_are_not_identity(tmp_path):
    from pqb.harness.retrievers.neural.encoding import weights_sha256

    (tmp_path / "model.safetensors").write_bytes(b"w")
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": true}')
    h = weights_sha256(tmp_path)
    (tmp_path / "README.md").write_text("a model card")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x.metadata").write_text("downloaded at 12:00")
    assert weights_sha256(tmp_path) == h
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    assert weights_sha256(tmp_path) != h
