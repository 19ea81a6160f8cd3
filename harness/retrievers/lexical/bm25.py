"""BM25 with the paper's setting (bm25s ``method="lucene"``, k1=1.5, b=0.75, English stopwords, no stemmer;
docs/design.md §13), or Lucene-exact (``variant=lucene``).

Unlike the authors' code (top-20,000 list, library tie order), every document is scored and ranks follow
PQB's pinned tie rule under the ranking contract (exact up to ``rr_cutoff``, a miss beyond). The path is
PQB's own and built for corpus scale (:mod:`.analysis`, :mod:`.word_runs`, :mod:`.inverted_index`,
:mod:`.scoring`): bulk tokenization (whole batches with numpy for bm25s's default pattern), a term-major
index built from the tokenizer's blocks as they come (never every token id at once), exact per-query
scores in one reused row, ranks counted in a band instead of sorted. Memory is the index plus one row;
``score`` is for chunks only.

Variants:

* ``bm25s`` (default): bm25s's tokenizer and bm25s's weight formulas, weights bit-identical to
  ``bm25s.BM25.index``; scores are the exact sum of those weights rounded once to float32 (bm25s and the
  earlier sparse product summed in float32, in an order set by a Python ``set`` of tokens, so the last bit
  could change between processes).
* ``lucene``: Anserini's BM25 — Lucene's English analyzer (:class:`.analysis.LuceneEnglishAnalyzer`), its
  one-byte document lengths and ``BM25Similarity`` in float32 (:class:`.inverted_index.LuceneWeights`);
  target ranks identical to ``bm25-pyserini`` (bench/bench_bm25.py, tests/test_retrievers_pyserini.py).
  Stems with Lucene's Porter unless ``stemmer=none``; ``method`` and ``token_pattern`` do not apply. With
  the default field it indexes the string ``bm25-pyserini`` indexes (:meth:`Corpus.documents`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.dataset.io import stable_hash
from pqb.dataset.progress import bar
from pqb.harness.registry import register_model
from pqb.harness.retrievers.base import (
    BM25_K1,
    DOCUMENT_FIELDS,
    MAX_SCORE_CELLS,
    ArgRule,
    Corpus,
    Ranked,
    Retriever,
    SearchResult,
    one_of,
    positive_int,
    unit_interval,
)
from pqb.harness.retrievers.lexical import inverted_index
from pqb.harness.retrievers.lexical.analysis import LuceneEnglishAnalyzer, RegexAnalyzer, Tokenized
from pqb.harness.retrievers.lexical.scoring import KERNELS, SparseScorer, check_kernel

DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
"""bm25s's default (scikit-learn's): drops one-character tokens; the
Lucene-like ``(?u)\\d+(?:\\.\\d+)+|\\b\\w+\\b`` (matched with pyserini in its tests) keeps them."""

VARIANTS = ("bm25s", "lucene")


def _stemmer_rule(name: Any) -> str | None:
    """``--model_args stemmer=`` check: ``none``, ``porter`` or a PyStemmer algorithm."""
    import Stemmer

    names = sorted(Stemmer.algorithms())
    return None if name in (None, "", "none", *names) else f"must be none or one of {', '.join(names)}"


def _stemmer(name: str):
    if name == "none":
        return None
    import Stemmer  # PyStemmer, a base dependency

    try:
        return Stemmer.Stemmer(name).stemWords
    except KeyError as exc:
        raise ValueError(
            f"Unknown stemmer {name!r}; use 'none' or a PyStemmer algorithm such as 'english'"
        ) from exc


@register_model("bm25")
class BM25Retriever(Retriever):
    """Lexical BM25 over each document's ``title + " " + text`` (MTEB/BEIR's document string).

    Args:
        variant: ``bm25s`` (default, the paper's library) or ``lucene`` (Anserini-exact).
        k1, b, method: scoring parameters (``method`` in robertson|lucene|atire|bm25l|bm25+, bm25s only).
        stopwords: ``"en"`` (the 33-word English list both libraries use), ``"none"``, or a language code
            bm25s knows.
        stemmer: ``"none"`` (paper; the default of ``bm25s``) or a PyStemmer algorithm, e.g. ``"english"``;
            with ``variant=lucene``: ``porter`` (default, Lucene's) or ``none``.
        token_pattern: regex for tokens; ``lower``: lower-case before tokenizing (bm25s only).
        field: the document string indexed: ``title+text`` (default, MTEB/BEIR's join), ``text`` or ``title``.
        chunk_size: queries per ``score_blocks`` block at most (the block also stays under
            ``MAX_SCORE_CELLS`` cells).
        threads: ranking threads (default 2); results are identical for any number (each query is
            computed alone, exactly), so it is not part of the cache key.
        kernel: ``auto`` (default: compiled with numba when the ``fast`` extra is installed, else numpy),
            ``numba`` or ``numpy``; both give the same bits (:mod:`.kernels`), so it is not in the cache key.
    """

    name = "bm25"
    full_scoring = True
    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "variant": one_of(*VARIANTS),
        "k1": BM25_K1,
        "b": unit_interval,
        "method": one_of("robertson", "lucene", "atire", "bm25l", "bm25+"),
        "stemmer": _stemmer_rule,
        "field": one_of(*DOCUMENT_FIELDS),
        "chunk_size": positive_int,
        "threads": positive_int,
        "kernel": one_of(*KERNELS),
    }

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
        stemmer: str | None = None,
        token_pattern: str = DEFAULT_TOKEN_PATTERN,
        lower: bool = True,
        field: str = "title+text",
        chunk_size: int = 512,
        variant: str = "bm25s",
        threads: int = 2,
        kernel: str = "auto",
    ) -> None:
        super().__init__()
        if field not in DOCUMENT_FIELDS:
            raise ValueError(f"field must be one of {', '.join(DOCUMENT_FIELDS)}, got {field!r}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        self.variant = variant
        self.k1, self.b, self.method = float(k1), float(b), str(method)
        self.stopwords = None if stopwords in (None, "none", "") else str(stopwords)
        default_stem = "porter" if variant == "lucene" else "none"
        self.stemmer_name = default_stem if stemmer in (None, "") else str(stemmer)
        if variant == "lucene" and self.stemmer_name not in {"porter", "none"}:
            raise ValueError(
                f"variant=lucene stems with porter (Lucene's) or none, got {self.stemmer_name!r}"
            )
        if variant == "lucene" and self.stopwords not in (None, "en"):
            raise ValueError(
                f"variant=lucene uses Lucene's English stopwords (en) or none, got {self.stopwords!r}"
            )
        self.token_pattern, self.lower, self.field = token_pattern, bool(lower), field
        self.chunk_size = int(chunk_size)
        self.threads = int(threads)
        check_kernel(kernel)
        self.kernel = str(kernel)
        self._analyzer = self._make_analyzer()
        self._vocab: dict[str, int] = {}
        self._scorer: SparseScorer | None = None

    def _make_analyzer(self) -> RegexAnalyzer | LuceneEnglishAnalyzer:
        if self.variant == "lucene":
            return LuceneEnglishAnalyzer(stopwords=self.stopwords is not None, stemmer=self.stemmer_name)
        from bm25s.tokenization import _infer_stopwords  # bm25s's own language-code -> list table

        stop = _infer_stopwords(self.stopwords) if self.stopwords else []
        stem = None if self.stemmer_name == "none" else _stemmer(self.stemmer_name)
        return RegexAnalyzer(self.token_pattern, lower=self.lower, stopwords=stop, stemmer=stem)

    # -- metadata ------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        import bm25s

        info: dict[str, Any] = {
            "name": self.name,
            "variant": self.variant,
            "k1": self.k1,
            "b": self.b,
            "stopwords": self.stopwords or "none",
            "stemmer": self.stemmer_name,
            "field": self.field,
        }
        if self.variant == "lucene":
            return {**info, "library": "pqb (Lucene BM25Similarity, EnglishAnalyzer)", "engine_format": inverted_index.FORMAT}  # fmt: skip
        return {**info, "library": "bm25s", "library_version": bm25s.__version__, "method": self.method,
                "token_pattern": self.token_pattern, "lower": self.lower,
                "engine_format": inverted_index.FORMAT}  # fmt: skip

    def _doc_texts(self, corpus: Corpus) -> Iterable[str]:
        """The document strings indexed, streamed; with the default field, exactly what ``bm25-pyserini`` indexes."""
        return corpus.iter_documents(self.field)

    # -- lifecycle -------------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        """Build (or load from ``cache_dir``) the postings of ``corpus``; weights are computed on load."""
        self.corpus = corpus
        folder = None
        if cache_dir is not None:
            key = stable_hash(self.cache_settings(), corpus.fingerprint)
            folder = Path(cache_dir) / "bm25" / key
        loaded = inverted_index.load(folder) if folder is not None else None
        if loaded is not None:
            postings, self._vocab = loaded
            self.stats["index_cache_hits"] += 1
        else:
            self._vocab = {}
            texts = bar(self._doc_texts(corpus), desc=f"BM25 indexing ({len(corpus)} docs)", total=len(corpus),
                        unit="doc", leave=False, dynamic_ncols=True)  # fmt: skip
            builder = inverted_index.PostingsBuilder()  # streamed: the corpus's token ids are never all held
            for block in self._analyzer.tokenize_blocks(texts, self._vocab, grow=True):
                builder.add(block)
            postings = builder.finish(len(self._vocab))
            self.stats["docs_encoded"] += len(corpus)
            if folder is not None:
                inverted_index.save(folder, postings, self._vocab)
        if self.variant == "lucene":
            weights: Any = inverted_index.LuceneWeights(postings, k1=self.k1, b=self.b)
        else:
            weights = inverted_index.Bm25sWeights(postings, k1=self.k1, b=self.b, method=self.method)
        self._scorer = SparseScorer(postings, weights, kernel=self.kernel)

    def _query_terms(self, queries: Sequence[str]) -> list[list[int]]:
        tokens: Tokenized = self._analyzer.tokenize(queries, self._vocab, grow=False)
        self.stats["queries_encoded"] += len(queries)
        return [tokens.row(i) for i in range(len(tokens))]

    def _require_scorer(self) -> SparseScorer:
        self._require_index()
        assert self._scorer is not None
        return self._scorer

    def score_blocks(self, queries: Sequence[str]) -> Iterator[tuple[int, np.ndarray]]:
        """``(first query, float32 scores)`` block by block; one buffer of at most ``chunk_size`` queries
        and ``MAX_SCORE_CELLS`` cells is reused (copy a block to keep it)."""
        scorer = self._require_scorer()
        cells = min(MAX_SCORE_CELLS, self.chunk_size * max(1, scorer.postings.n_docs))
        yield from scorer.score_blocks(self._query_terms(queries), cells=cells)

    def score(self, queries: Sequence[str]) -> np.ndarray:
        """(n_queries, n_docs) float32 scores for a *chunk*: refused beyond ``MAX_SCORE_CELLS`` cells (use
        :meth:`score_blocks` or :meth:`rank`), so nothing allocates queries × corpus."""
        n_docs = len(self._require_index())
        if len(queries) * n_docs > MAX_SCORE_CELLS:
            raise ValueError(
                f"bm25.score: {len(queries)} queries x {n_docs} documents exceeds {MAX_SCORE_CELLS:,} cells; "
                "score in chunks, iterate score_blocks(), or use rank()/search()"
            )
        out = np.empty((len(queries), n_docs), np.float32)
        for start, block in self.score_blocks(queries):
            out[start : start + len(block)] = block
        return out

    def rank(self, queries: Sequence[str], query_of: np.ndarray, targets: np.ndarray, *, k: int,
             cutoff: int | None) -> Ranked:  # fmt: skip
        """The ranking contract without sorting the corpus (:mod:`.scoring`)."""
        scorer = self._require_scorer()
        return scorer.rank(self._query_terms(queries), query_of, np.asarray(targets, np.int64), k=k, cutoff=cutoff,
                           threads=self.threads)  # fmt: skip

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        scorer = self._require_scorer()
        none = np.empty(0, np.int64)
        return scorer.rank(self._query_terms(queries), none, none, k=k, cutoff=k, threads=self.threads).top
