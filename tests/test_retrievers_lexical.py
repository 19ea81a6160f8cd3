"""The fast BM25 path: Lucene's analysis and norms, bm25s-identical weights, and the ranking contract
(exact ranks with the pinned tie rule inside the cutoff, a miss outside), checked against the dense
reference (``topk_stable`` + ``target_ranks`` on full score rows)."""

from __future__ import annotations

import itertools
import tracemalloc

import bm25s
import numpy as np
import pytest

from pqb.harness.evaluation.data import build_corpus
from pqb.harness.evaluation.ranking import target_ranks
from pqb.harness.retrievers import base
from pqb.harness.retrievers.base import apply_cutoff, topk_stable
from pqb.harness.retrievers.lexical import inverted_index as ii
from pqb.harness.retrievers.lexical import kernels, scoring
from pqb.harness.retrievers.lexical.analysis import LuceneEnglishAnalyzer, RegexAnalyzer
from pqb.harness.retrievers.lexical.bm25 import BM25Retriever
from pqb.harness.retrievers.lexical.porter import porter_stem

# Recorded from Lucene 10 (pyserini 1.6.0's DefaultEnglishAnalyzer, porter) for these exact inputs.
LUCENE_STEMS = {
    "technology": "technolog",
    "incredibly": "incred",
    "terribly": "terribl",
    "generalization": "gener",
    "caresses": "caress",
    "ponies": "poni",
    "ties": "ti",
    "cats": "cat",
    "agreed": "agre",
    "plastered": "plaster",
    "motoring": "motor",
    "conflated": "conflat",
    "troubled": "troubl",
    "sized": "size",
    "hopping": "hop",
    "tanned": "tan",
    "falling": "fall",
    "hissing": "hiss",
    "fizzed": "fizz",
    "filing": "file",
    "happy": "happi",
    "sky": "sky",
    "relational": "relat",
    "conditional": "condit",
    "rational": "ration",
    "digitizer": "digit",
    "radically": "radic",
    "differently": "differ",
    "analogously": "analog",
    "vietnamization": "vietnam",
    "predication": "predic",
    "operator": "oper",
    "feudalism": "feudal",
    "decisiveness": "decis",
    "hopefulness": "hope",
    "callousness": "callous",
    "formality": "formal",
    "sensitivity": "sensit",
    "sensibility": "sensibl",
    "triplicate": "triplic",
    "formative": "form",
    "formalize": "formal",
    "electricity": "electr",
    "electrical": "electr",
    "hopeful": "hope",
    "goodness": "good",
    "revival": "reviv",
    "allowance": "allow",
    "inference": "infer",
    "airliner": "airlin",
    "gyroscopic": "gyroscop",
    "adjustable": "adjust",
    "defensible": "defens",
    "irritant": "irrit",
    "replacement": "replac",
    "adjustment": "adjust",
    "dependent": "depend",
    "adoption": "adopt",
    "communism": "commun",
    "activate": "activ",
    "angularity": "angular",
    "homologous": "homolog",
    "effective": "effect",
    "bowdlerize": "bowdler",
    "probate": "probat",
    "cease": "ceas",
    "controlling": "control",
    "rolling": "roll",
    "gaming": "game",
    "controllers": "control",
    "wireless": "wireless",
    "headsets": "headset",
    "batteries": "batteri",
    "ecology": "ecolog",
}
LUCENE_TOKENS = {
    "Nintendo's Switch™ controller — U.S.A. edition, 1,000.50 mAh; PS4/PS5 ready!": [
        "nintendo", "switch", "™", "control", "u.s.a", "edit", "1,000.50", "mah", "ps4", "ps5", "readi"],
    "I can't wait: it's the players' choice ☘️ 🎮 game": [
        "i", "can't", "wait", "player", "choic", "☘️", "🎮", "game"],
    "km² ➀wireless headset：complete 3.5mm jack e-mail foo_bar": [
        "km", "wireless", "headset：complet", "3.5mm", "jack", "e", "mail", "foo_bar"],
}  # fmt: skip
LUCENE_INT_TO_BYTE4 = {
    0: 0,
    1: 1,
    23: 23,
    24: 24,
    25: 25,
    30: 30,
    40: 40,
    100: 57,
    255: 70,
    1000: 87,
    123456: 143,
}


def test_porter_matches_lucene_not_snowball():
    assert {w: porter_stem(w) for w in LUCENE_STEMS} == LUCENE_STEMS
    import Stemmer

    assert Stemmer.Stemmer("porter").stemWord("technology") == "technologi"  # why PyStemmer is not used


@pytest.mark.parametrize("text", sorted(LUCENE_TOKENS))
def test_lucene_analyzer_tokens(text):
    vocab: dict[str, int] = {}
    tok = LuceneEnglishAnalyzer().tokenize([text], vocab, grow=True)
    names = sorted(vocab, key=vocab.__getitem__)
    assert [names[i] for i in tok.row(0)] == LUCENE_TOKENS[text]


def test_smallfloat_length_bytes():
    assert {n: ii.int_to_byte4(n) for n in LUCENE_INT_TO_BYTE4} == LUCENE_INT_TO_BYTE4
    decoded = [ii.byte4_to_int(ii.int_to_byte4(n)) for n in range(5000)]
    assert decoded[:24] == list(range(24)) and all(d <= n for n, d in enumerate(decoded))
    assert all(a <= b for a, b in itertools.pairwise(decoded))


def test_regex_analyzer_is_bm25s_tokenize():
    texts = ["Wireless controller for the Switch, long battery!", "", "a the of", "Racing wheel wheel"]
    vocab: dict[str, int] = {}
    tok = RegexAnalyzer(r"(?u)\b\w\w+\b", stopwords=bm25s.stopwords.STOPWORDS_EN).tokenize(
        texts, vocab, grow=True
    )
    names = sorted(vocab, key=vocab.__getitem__)
    ref = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
    assert [[names[i] for i in tok.row(k)] for k in range(len(texts))] == ref


@pytest.mark.parametrize("blocks", ["one block", "tiny blocks"])
@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_weights_bit_identical_to_bm25s(method, blocks, monkeypatch):
    """Also with many tokenizer batches, index blocks and weight blocks: blocks change no bit."""
    if blocks == "tiny blocks":
        from pqb.harness.retrievers.lexical import analysis

        monkeypatch.setattr(analysis._BulkAnalyzer, "BATCH", 50)
        monkeypatch.setattr(ii.Postings, "BLOCK_TOKENS", 37)
        monkeypatch.setattr(ii, "BLOCK_POSTINGS", 13)
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words, rng.integers(1, 30))) for _ in range(300)]
    vocab: dict[str, int] = {}
    tokens = RegexAnalyzer(r"(?u)\b\w\w+\b").tokenize(texts, vocab, grow=True)
    postings = ii.Postings.build(tokens, len(vocab))
    ours = ii.Bm25sWeights(postings, k1=1.2, b=0.7, method=method).w
    ref = bm25s.BM25(k1=1.2, b=0.7, method=method)
    ref.index(
        bm25s.tokenize(texts, stopwords=None, return_ids=False, show_progress=False), show_progress=False
    )
    s = ref.scores
    for term, t in vocab.items():
        col = ref.vocab_dict[term]
        a, z = s["indptr"][col], s["indptr"][col + 1]
        np.testing.assert_array_equal(
            s["indices"][a:z], postings.docs[postings.indptr[t] : postings.indptr[t + 1]]
        )
        np.testing.assert_array_equal(s["data"][a:z], ours[postings.indptr[t] : postings.indptr[t + 1]])


def _tie_heavy_corpus(n_docs=600, seed=3):
    """Documents from a tiny vocabulary with many exact duplicates: ties everywhere."""
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    base = [" ".join(rng.choice(words, rng.integers(1, 6))) for _ in range(n_docs // 3)]
    texts = [
        base[i % len(base)] if i % 2 else " ".join(rng.choice(words, rng.integers(1, 8)))
        for i in range(n_docs)
    ]
    ids = [f"d{i:04d}" for i in rng.permutation(n_docs)]
    queries = [" ".join(rng.choice(words, rng.integers(1, 4))) for _ in range(120)] + ["", "zzz unknown"]
    return build_corpus(ids, ids, texts), queries


KERNEL_PARAMS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(not kernels.available(), reason="numba (the fast extra) is not installed"))]  # fmt: skip


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("variant", ["bm25s", "lucene"])
@pytest.mark.parametrize(("k", "cutoff"), [(10, 20), (50, 200), (7, None)])
def test_rank_contract_equals_dense_reference(variant, k, cutoff, kernel):
    corpus, queries = _tie_heavy_corpus()
    queries = [*queries, "alpha alpha beta", "gamma gamma gamma"]  # terms named more than once
    r = BM25Retriever(variant=variant, kernel=kernel)
    r.index(corpus)
    rng = np.random.default_rng(1)
    query_of = np.repeat(np.arange(len(queries)), 2)
    targets = rng.integers(-1, len(corpus), len(query_of))
    got = r.rank(queries, query_of, targets, k=k, cutoff=cutoff)
    scores = r.score(queries)
    ranks, ties = apply_cutoff(*target_ranks(scores[query_of], targets), cutoff)
    np.testing.assert_array_equal(got.ranks, ranks)
    np.testing.assert_array_equal(got.ties, ties)
    top = topk_stable(scores, k)
    np.testing.assert_array_equal(got.top.indices, top.indices)
    np.testing.assert_array_equal(got.top.scores, top.scores)
    assert ties.any() and (np.isinf(ranks).any() if cutoff else True)  # the fixture exercises both rules
    finite = np.isfinite(got.ranks)
    assert cutoff is None or (got.ranks[finite] <= cutoff).all()
    compiled = r._scorer.stats["compiled_band"]
    assert compiled > 0 if kernel == "numba" and cutoff is not None else compiled == 0


def test_threads_change_nothing():
    corpus, queries = _tie_heavy_corpus()
    one, two = BM25Retriever(threads=1), BM25Retriever(threads=3)
    one.index(corpus)
    two.index(corpus)
    targets = np.arange(len(queries)) % len(corpus)
    a = one.rank(queries, np.arange(len(queries)), targets, k=20, cutoff=50)
    b = two.rank(queries, np.arange(len(queries)), targets, k=20, cutoff=50)
    for x, y in (
        (a.ranks, b.ranks),
        (a.ties, b.ties),
        (a.top.indices, b.top.indices),
        (a.top.scores, b.top.scores),
    ):
        np.testing.assert_array_equal(x, y)
    assert one.describe() == two.describe()


needs_numba = pytest.mark.skipif(not kernels.available(), reason="numba (the fast extra) is not installed")


@needs_numba
def test_compiled_band_overflow_takes_the_numpy_path(monkeypatch):
    """A band wider than the kernel's buffer (a huge tie) is flagged and ranked by the numpy path."""
    corpus, queries = _tie_heavy_corpus()
    targets = np.arange(len(queries)) % len(corpus)
    ref = BM25Retriever(kernel="numpy")
    ref.index(corpus)
    want = ref.rank(queries, np.arange(len(queries)), targets, k=20, cutoff=50)
    monkeypatch.setattr(scoring, "BAND_CAPACITY", 60)
    r = BM25Retriever(kernel="numba")
    r.index(corpus)
    got = r.rank(queries, np.arange(len(queries)), targets, k=20, cutoff=50)
    assert 0 < r._scorer.stats["compiled_band"] < len(queries) and r._scorer.stats["pruned_band"] > 0
    for x, y in ((got.ranks, want.ranks), (got.ties, want.ties), (got.top.indices, want.top.indices),
                 (got.top.scores, want.top.scores)):  # fmt: skip
        np.testing.assert_array_equal(x, y)


def _band_reference(row, K):
    """Every document whose float32 score is within two tie tolerances of the float32 K-th best."""
    s32 = row.astype(np.float32)
    kth = float(np.sort(s32)[-K])
    floor = kth - 2 * base.tie_tolerance(kth)
    return np.flatnonzero(s32 >= floor), floor


@needs_numba
@pytest.mark.parametrize("case", ["random", "sampled_docs_high", "ties", "negative"])
def test_kernel_bands_are_the_exact_band(case):
    """The sampled guess and the exact heap pass both give the band of the K-th best (or decline)."""
    rng = np.random.default_rng(7)
    n, K = 5000, 200
    row = rng.random(n) * 10
    if case == "sampled_docs_high":  # only sampled documents score: the guess finds < K above it
        row[:] = 0.0
        row[:: kernels.SAMPLE_STRIDE] = rng.random(len(row[:: kernels.SAMPLE_STRIDE])) + 1
    elif case == "ties":
        row = np.round(row, 0)
    elif case == "negative":
        row -= 9.5
    out_d, out_s, heap = np.empty(n, np.int64), np.empty(n, np.float32), np.empty(K)
    want, floor = _band_reference(row, K)
    nb, got_floor = kernels._exact_band(row, K, heap, out_d, out_s)
    assert got_floor == floor
    np.testing.assert_array_equal(out_d[:nb], want)
    np.testing.assert_array_equal(out_s[:nb], row[want].astype(np.float32))
    nb, got_floor = kernels._sampled_band(row, K, heap, out_d, out_s)
    if case in ("sampled_docs_high", "negative"):
        assert nb == kernels.FALLBACK
    else:
        assert got_floor == floor
        np.testing.assert_array_equal(out_d[:nb], want)
    assert kernels._collect(row, -np.inf, -np.inf, out_d[:10], out_s[:10]) == kernels.FALLBACK


def test_kernel_argument_checks():
    with pytest.raises(ValueError, match="kernel must be one of"):
        BM25Retriever(kernel="cuda")
    if not kernels.available():
        with pytest.raises(ImportError, match="pip install 'pqb\\[fast\\]'"):
            BM25Retriever(kernel="numba")


def test_tie_rule_is_corpus_order():
    corpus = build_corpus(["c", "a", "b"], ["x"] * 3, ["same words here"] * 3)
    r = BM25Retriever()
    r.index(corpus)
    got = r.rank(["same words"], np.zeros(3, np.int64), np.arange(3), k=3, cutoff=200)
    assert got.ranks.tolist() == [1.0, 2.0, 3.0] and got.ties.all()  # a, b, c: corpus (id) order
    assert got.top.indices[0].tolist() == [0, 1, 2]


def test_score_never_allocates_queries_by_corpus(monkeypatch):
    corpus, queries = _tie_heavy_corpus(n_docs=3000)
    r = BM25Retriever(chunk_size=16)
    r.index(corpus)
    many = queries * 25  # 3,050 queries x 3,000 docs = 9.2M cells (37 MB as float32)
    monkeypatch.setattr("pqb.harness.retrievers.lexical.bm25.MAX_SCORE_CELLS", 1_000_000)
    with pytest.raises(ValueError, match="score_blocks"):
        r.score(many)
    sizes = {block.shape for _, block in r.score_blocks(many)}
    assert max(rows for rows, _ in sizes) <= 16
    targets = np.zeros(len(many), np.int64)
    r.rank(many[:2], np.arange(2), targets[:2], k=200, cutoff=200)  # numba compiles (or loads) its kernel
    tracemalloc.start()
    r.rank(many, np.arange(len(many)), targets, k=200, cutoff=200)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # the top-200 lists (4.9 MB) + each worker's row and compiled-band buffers (3.2 MB); never queries x
    # corpus (37 MB)
    assert peak < 4_900_000 + r.threads * 3_300_000 + 1_000_000


def test_index_cache_round_trip(tmp_path):
    corpus, queries = _tie_heavy_corpus()
    first = BM25Retriever(variant="lucene")
    first.index(corpus, cache_dir=tmp_path)
    again = BM25Retriever(variant="lucene")
    again.index(corpus, cache_dir=tmp_path)
    assert again.stats["index_cache_hits"] == 1 and again.stats["docs_encoded"] == 0
    np.testing.assert_array_equal(first.score(queries), again.score(queries))


def test_variant_argument_checks():
    with pytest.raises(ValueError, match="porter"):
        BM25Retriever(variant="lucene", stemmer="english")
    assert BM25Retriever(variant="lucene").stemmer_name == "porter"
    assert BM25Retriever().stemmer_name == "none"
    assert np.inf == base.UNRANKED
