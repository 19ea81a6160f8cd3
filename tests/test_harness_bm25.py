"""BM25 retriever: scores equal bm25s's own get_scores; the index is cached on disk by content."""

from __future__ import annotations

import bm25s
import numpy as np

from pqb.harness.evaluation.data import build_corpus
from pqb.harness.retrievers.lexical.bm25 import BM25Retriever
from pqb.harness.retrievers.lexical.random import RandomRetriever

DOCS = [  # the corpus view: the body in text, the title apart (BM25 reads title + " " + text)
    ("d3", "Racing wheel", "with pedals and force feedback"),
    ("d1", "Controller", "Wireless controller for the switch, long battery"),
    ("d2", "Headset", "Gaming headset with microphone and surround sound"),
    ("d4", "Controller", "Wireless controller for the switch, long battery"),
]
QUERIES = ["wireless controller battery", "racing wheel wheel pedals", "a the of", "headset microphone xyz"]


def corpus():
    ids, titles, texts = zip(*DOCS, strict=True)
    return build_corpus(ids, titles, texts)


def test_corpus_sorted_by_id_with_fingerprint():
    c = corpus()
    assert c.ids == ("d1", "d2", "d3", "d4") and len(c.fingerprint) == 16


def test_scores_match_bm25s_get_scores(tmp_path):
    c = corpus()
    r = BM25Retriever()
    r.index(c, cache_dir=tmp_path)
    ours = r.score(QUERIES)
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    docs = [f"{t} {x}" for t, x in zip(c.titles, c.texts, strict=True)]  # MTEB/BEIR's document string
    ref.index(
        bm25s.tokenize(docs, stopwords="en", return_ids=False, show_progress=False), show_progress=False
    )
    for i, q in enumerate(QUERIES):
        toks = [
            t
            for t in bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)[0]
            if t in ref.vocab_dict
        ]
        expected = ref.get_scores(toks) if toks else np.zeros(len(c))
        np.testing.assert_allclose(ours[i], expected, rtol=1e-6)
    assert ours.shape == (4, 4) and ours.dtype == np.float32
    assert ours[0, 0] == ours[0, 3] > 0  # identical docs tie exactly
    assert (ours[2] == 0).all()  # only stopwords


def test_index_cache_hit_and_settings_in_key(tmp_path):
    c = corpus()
    first = BM25Retriever()
    first.index(c, cache_dir=tmp_path)
    assert first.stats["index_cache_hits"] == 0 and first.stats["docs_encoded"] == 4
    second = BM25Retriever()
    second.index(c, cache_dir=tmp_path)
    assert second.stats["index_cache_hits"] == 1 and second.stats["docs_encoded"] == 0
    np.testing.assert_array_equal(first.score(QUERIES), second.score(QUERIES))
    other = BM25Retriever(k1=0.9, stemmer="english")
    other.index(c, cache_dir=tmp_path)
    assert other.stats["index_cache_hits"] == 0
    assert (
        other.describe()["stemmer"] == "english" and other.describe()["library_version"] == bm25s.__version__
    )


def test_random_is_seeded_per_text_and_chunk_independent():
    c = corpus()
    r = RandomRetriever(seed=1)
    r.index(c)
    both = r.score(["a", "b"])
    np.testing.assert_array_equal(both[1], r.score(["b"])[0])
    r2 = RandomRetriever(seed=2)
    r2.index(c)
    assert not np.array_equal(r2.score(["a"])[0], both[0])
