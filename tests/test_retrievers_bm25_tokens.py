"""BM25's compiled word-run tokenizer (:mod:`pqb.harness.retrievers.lexical.word_runs`) gives the same
token ids, lengths and vocabulary (in the same order) as one ``re.findall`` per text, on the real corpus,
the raw real product records, edge cases and fuzzed Unicode text; and the index built from it is the index
of the per-text path."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from bm25s.stopwords import STOPWORDS_EN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pqb.builders.publish.tables import config_path
from pqb.dataset import settings as pqb_settings
from pqb.dataset.schema import document_string
from pqb.harness.retrievers.lexical import analysis
from pqb.harness.retrievers.lexical import inverted_index as ii
from pqb.harness.retrievers.lexical.analysis import RegexAnalyzer, Tokenized
from pqb.harness.retrievers.lexical.word_runs import WORD_RUN_PATTERNS

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
DS = pqb_settings.REPO_ROOT / "pqb_dataset"
META = pqb_settings.PQB_AMAZON_DIR / "meta_Video_Games.jsonl"

EDGE_CASES = [
    "",
    "a",
    "ab",
    "I",
    "Wireless controller for the Switch, long battery!",
    "1.5 v2.0 3.14.15 1,000,000 ver.2 2.5mm 3.5-mm",
    "don't it's O'Reilly rock’n’roll l'été",
    "x_y __init__ _ __ a_b_c_d_e_f_g_h_i snake_case_name",
    "abcdefg abcdefgh abcdefghi abcdefghijklmnop abcdefghijklmnopq abcdefghijklmnopqrstuvwx "
    "abcdefghijklmnopqrstuvwxy " + "z" * 300,
    "Ünïcödé wörds naïve café CAFÉ Café",
    "ß straße STRASSE ǅ ǆ ﬁne ﬃ",
    "ΟΔΥΣΣΕΥΣ ΣΑΣ σας Σ",  # final sigma: lower() depends on the neighbours
    "İstanbul İ KELVIN K Å",  # lower() longer than the text, or ASCII from non-ASCII
    "日本語 テキスト 한국어 中文abc",
    "²³ ½ ① ④⑤ ٣٤ x² 10³",
    "e\u0301 combining a\u0308b",
    "\x00null\x00byte\x00 ab\x00cd",
    "TAB\tand\nnew\r\nlines\x0bvt\x0cff",
    "emoji 🎮 game🎮pad 👍🏽 ok",
    "\u200bzero\u200bwidth\u00a0nbsp\u2009thin",
    "ÀÉÎ UPPER àéî",
    "a" * 24 + " " + "b" * 25 + " " + "é" * 9 + "x" * 20,
    "mixed ASCII then é then ASCII again: game game GAME gáme",
]


def _both(texts: list[str], pattern: str, lower: bool, stop: frozenset[str] | list[str] = ()) -> tuple:
    """(Tokenized, vocab) of the per-text path, then of the word-run path."""
    out = []
    for enabled in (False, True):
        vocab: dict[str, int] = {}
        tok = RegexAnalyzer(pattern, lower=lower, stopwords=stop, word_runs_enabled=enabled).tokenize(
            iter(texts), vocab, grow=True
        )
        out.append((tok, vocab))
    return out


def _assert_same(
    texts: list[str], pattern: str, lower: bool, stop: frozenset[str] | list[str] = ()
) -> Tokenized:
    (a, va), (b, vb) = _both(texts, pattern, lower, stop)
    assert list(va.items()) == list(vb.items())  # same terms, same ids, same order
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.ids, b.ids)
    return b


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("pattern", sorted(WORD_RUN_PATTERNS))
def test_word_runs_equal_findall_on_edge_cases(pattern, lower):
    tok = _assert_same(EDGE_CASES, pattern, lower, STOPWORDS_EN)
    assert len(tok) == len(EDGE_CASES)


@pytest.mark.parametrize("pattern", sorted(WORD_RUN_PATTERNS))
def test_word_run_patterns_are_maximal_runs(pattern):
    """The premise: each pattern matches exactly the maximal ``\\w`` runs of at least its minimum length."""
    runs = re.compile(r"\w+")
    for text in EDGE_CASES:
        expected = [m for m in runs.findall(text) if len(m) >= WORD_RUN_PATTERNS[pattern]]
        assert re.findall(pattern, text) == expected


def test_word_runs_equal_findall_across_batches(monkeypatch):
    """Tiny batches: a token first seen in a later batch, or in both ASCII and non-ASCII texts."""
    monkeypatch.setattr(analysis._BulkAnalyzer, "BATCH", 40)
    texts = EDGE_CASES * 3 + [f"w{i % 7} gáme game{i % 5} x{i}" for i in range(60)]
    _assert_same(texts, r"(?u)\b\w\w+\b", True, STOPWORDS_EN)
    _assert_same(texts, r"(?u)\b\w+\b", False)


@FUZZ
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=60), max_size=12))
def test_word_runs_equal_findall_on_fuzzed_unicode(texts):
    _assert_same(texts, r"(?u)\b\w\w+\b", True, STOPWORDS_EN)
    _assert_same(texts, r"(?u)\b\w+\b", False)


@FUZZ
@given(st.lists(st.text(alphabet="ab_9 .'’é\u0301Σİ\n", max_size=40), max_size=12))
def test_word_runs_equal_findall_on_dense_edge_alphabet(texts):
    _assert_same(texts, r"(?u)\b\w\w+\b", True)


@pytest.mark.skipif(
    not config_path(DS, "video_games-corpus").exists(), reason="pqb_dataset/ has not been built"
)
def test_word_runs_equal_findall_on_the_real_corpus():
    t = pq.read_table(config_path(DS, "video_games-corpus")).to_pydict()
    docs = [document_string(a, b) for a, b in zip(t["title"], t["text"], strict=True)]
    tok = _assert_same(docs, r"(?u)\b\w\w+\b", True, STOPWORDS_EN)
    assert len(tok) == len(docs) and len(tok.ids) > 100_000


@pytest.mark.skipif(not META.is_file(), reason="needs the real Video_Games slice")
def test_word_runs_equal_findall_on_raw_product_records():
    """The raw records, before the builders' cleaning: CJK, emoji, HTML, every script the slice has."""
    texts = []
    with META.open(encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            texts += [rec.get("title") or "", *(rec.get("features") or []), *(rec.get("description") or [])]
            texts.append(json.dumps(rec.get("details") or {}, ensure_ascii=False))
    assert any(not t.isascii() for t in texts)
    for pattern in (r"(?u)\b\w\w+\b", r"(?u)\b\w+\b"):
        _assert_same(texts, pattern, True, STOPWORDS_EN)


def test_other_patterns_keep_the_per_text_path():
    assert RegexAnalyzer(r"(?u)\d+(?:\.\d+)+|\b\w+\b").min_run is None
    assert RegexAnalyzer(r"(?u)\b\w\w+\b").min_run == 2
    assert RegexAnalyzer(r"(?u)\b\w\w+\b", word_runs_enabled=False).min_run is None


def test_index_of_word_runs_equals_index_of_findall():
    rng = np.random.default_rng(0)
    words = [*(w for t in EDGE_CASES for w in t.split()), *(f"w{i}" for i in range(50))]
    texts = [" ".join(rng.choice(words, rng.integers(0, 40))) for _ in range(500)]
    (a, va), (b, vb) = _both(texts, r"(?u)\b\w\w+\b", True, STOPWORDS_EN)
    pa, pb = ii.Postings.build(a, len(va)), ii.Postings.build(b, len(vb))
    for name in ("indptr", "docs", "tf", "doc_len"):
        np.testing.assert_array_equal(getattr(pa, name), getattr(pb, name))


def _reference_postings(tokens: Tokenized, n_terms: int) -> ii.Postings:
    """The index as built before issue 32: every (term, document) key of the corpus in one argsort."""
    n_docs = len(tokens)
    doc_len = tokens.lengths().astype(np.int64)
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), doc_len)
    keys = np.unique(doc * max(n_terms, 1) + tokens.ids)
    tf = np.unique(doc * max(n_terms, 1) + tokens.ids, return_counts=True)[1].astype(np.float32)
    d, t = (keys // max(n_terms, 1)).astype(np.int32), (keys % max(n_terms, 1)).astype(np.int32)
    order = np.argsort(t.astype(np.int64) * n_docs + d)
    indptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(np.bincount(t, minlength=n_terms), out=indptr[1:])
    return ii.Postings(indptr, d[order], tf[order], doc_len)


def _assert_postings_equal(a: ii.Postings, b: ii.Postings) -> None:
    for name in ("indptr", "docs", "tf", "doc_len"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("batch", [40, 1_000, 4_000_000])
def test_streamed_index_equals_one_sort(batch, monkeypatch):
    """PostingsBuilder fed the tokenizer's blocks (any size, empty documents and blocks included) equals
    the single global sort, and Postings.build."""
    monkeypatch.setattr(analysis._BulkAnalyzer, "BATCH", batch)
    rng = np.random.default_rng(1)
    words = [*(w for t in EDGE_CASES for w in t.split()), *(f"w{i}" for i in range(300))]
    texts = [" ".join(rng.choice(words, rng.integers(0, 60))) for _ in range(2_000)]
    texts[100:180] = [""] * 80  # a whole block of empty documents
    an = RegexAnalyzer(r"(?u)\b\w\w+\b", stopwords=STOPWORDS_EN)
    vocab: dict[str, int] = {}
    builder = ii.PostingsBuilder()
    for block in an.tokenize_blocks(texts, vocab, grow=True):
        builder.add(block)
    streamed = builder.finish(len(vocab))
    again: dict[str, int] = {}
    tokens = an.tokenize(texts, again, grow=True)
    assert again == vocab
    _assert_postings_equal(streamed, _reference_postings(tokens, len(vocab)))
    _assert_postings_equal(streamed, ii.Postings.build(tokens, len(vocab)))


def test_streamed_index_holds_wide_blocks_and_large_counts():
    """A block of more than 65,536 documents and a word repeated 70,000 times in one document take
    the 4-byte block types, and still equal the one-sort postings (float32 counts, int32 documents)."""
    an = RegexAnalyzer(r"(?u)\b\w\w+\b", stopwords=STOPWORDS_EN)
    texts = ["spam " * 70_000, *(f"w{i % 7} w{i % 5}" for i in range(70_000)), "spam eggs"]
    vocab: dict[str, int] = {}
    tokens = an.tokenize(texts, vocab, grow=True)
    builder = ii.PostingsBuilder()
    builder.add(tokens)  # one block of 70,002 documents
    streamed = builder.finish(len(vocab))
    assert streamed.tf.max() == 70_000 and streamed.docs.max() == 70_001
    _assert_postings_equal(streamed, _reference_postings(tokens, len(vocab)))


def test_empty_corpus_index():
    builder = ii.PostingsBuilder()
    p = builder.finish(0)
    assert p.n_docs == 0 and p.n_terms == 0 and len(p.docs) == 0


@pytest.mark.skipif(
    not config_path(DS, "video_games-corpus").exists(), reason="pqb_dataset/ has not been built"
)
def test_streamed_index_equals_one_sort_on_the_real_corpus(tmp_path):
    """The index a BM25 retriever builds, and the one it caches, equal the one-sort postings."""
    from pqb.harness.evaluation.data import build_corpus
    from pqb.harness.retrievers.lexical.bm25 import BM25Retriever

    t = pq.read_table(config_path(DS, "video_games-corpus")).to_pydict()
    for args in ({}, {"variant": "lucene"}):
        r = BM25Retriever(**args)
        r.index(build_corpus(t["id"], t["title"], t["text"]), cache_dir=tmp_path / str(args))
        vocab: dict[str, int] = {}
        tokens = r._make_analyzer().tokenize(r._doc_texts(r.corpus), vocab, grow=True)
        assert vocab == r._vocab
        reference = _reference_postings(tokens, len(vocab))
        (folder,) = (tmp_path / str(args) / "bm25").iterdir()
        saved, saved_vocab = ii.load(folder)
        assert saved_vocab == vocab
        _assert_postings_equal(saved, reference)
        _assert_postings_equal(r._scorer.postings, reference)
