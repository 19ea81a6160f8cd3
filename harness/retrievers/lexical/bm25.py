"""BM25 through ``bm25s`` with the paper's setting: ``method="lucene"``, k1=1.5, b=0.75, English
stopwords, no stemmer (reference spec §2.2).

Unlike the authors' code (top-20,000 list, library tie order), this retriever scores *every*
document, so the evaluator computes exact ranks with PQB's pinned tie rule. Scoring is one sparse
product: bm25s stores its eager index as a CSC matrix of per-(token, document) BM25 weights, so the
scores of a batch of queries are ``Q @ S.T`` with ``Q`` the query-term count matrix — the same sum
``BM25.get_scores`` computes one query at a time (a test checks they agree).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from pqb.dataset.io import stable_hash
from pqb.harness.registry import register_model
from pqb.harness.retrievers.base import (
    DOCUMENT_FIELDS,
    ArgRule,
    Corpus,
    Retriever,
    one_of,
    positive,
    positive_int,
    unit_interval,
)

DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
"""bm25s's default (scikit-learn's): drops one-character tokens. MODELS.md gives the Lucene-like one."""


def _stemmer_rule(name: Any) -> str | None:
    """``--model_args stemmer=`` check: ``none`` or a PyStemmer algorithm."""
    import Stemmer

    names = sorted(Stemmer.algorithms())
    return None if name in (None, "", "none", *names) else f"must be none or one of {', '.join(names)}"


def _stemmer(name: str | None):
    if name in (None, "", "none"):
        return None
    import Stemmer  # PyStemmer, a base dependency

    try:
        return Stemmer.Stemmer(name)
    except KeyError as exc:
        raise ValueError(
            f"Unknown stemmer {name!r}; use 'none' or a PyStemmer algorithm such as 'english'"
        ) from exc


@register_model("bm25")
class BM25Retriever(Retriever):
    """Lexical BM25 over each document's ``title + " " + text`` (MTEB/BEIR's document string).

    Args:
        k1, b, method: bm25s scoring parameters (``method`` in robertson|lucene|atire|bm25l|bm25+).
        stopwords: ``"en"`` (bm25s's English list), ``"none"``, or a language code bm25s knows.
        stemmer: ``"none"`` (paper) or a PyStemmer algorithm, e.g. ``"english"``.
        token_pattern: regex for tokens; ``lower``: lower-case before tokenizing.
        field: the document string indexed: ``title+text`` (default, MTEB/BEIR's join), ``text`` or ``title``.
        chunk_size: queries scored per sparse product (bounds memory to chunk × n_docs floats).
    """

    name = "bm25"
    full_scoring = True
    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "k1": positive,
        "b": unit_interval,
        "method": one_of("robertson", "lucene", "atire", "bm25l", "bm25+"),
        "stemmer": _stemmer_rule,
        "field": one_of(*DOCUMENT_FIELDS),
        "chunk_size": positive_int,
    }

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
        stemmer: str | None = "none",
        token_pattern: str = DEFAULT_TOKEN_PATTERN,
        lower: bool = True,
        field: str = "title+text",
        chunk_size: int = 512,
    ) -> None:
        super().__init__()
        if field not in DOCUMENT_FIELDS:
            raise ValueError(f"field must be one of {', '.join(DOCUMENT_FIELDS)}, got {field!r}")
        self.k1, self.b, self.method = float(k1), float(b), str(method)
        self.stopwords = None if stopwords in (None, "none", "") else str(stopwords)
        self.stemmer_name = "none" if stemmer in (None, "", "none") else str(stemmer)
        self._stemmer = _stemmer(self.stemmer_name)
        self.token_pattern, self.lower, self.field = token_pattern, bool(lower), field
        self.chunk_size = int(chunk_size)
        self._model: Any = None
        self._doc_term: sp.csr_matrix | None = None  # (vocab, n_docs) BM25 weights

    # -- metadata ------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        import bm25s

        return {
            "name": self.name,
            "library": "bm25s",
            "library_version": bm25s.__version__,
            "method": self.method,
            "k1": self.k1,
            "b": self.b,
            "stopwords": self.stopwords or "none",
            "stemmer": self.stemmer_name,
            "token_pattern": self.token_pattern,
            "lower": self.lower,
            "field": self.field,
        }

    # -- tokenization ----------------------------------------------------------------------------------
    def _tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        import bm25s

        return bm25s.tokenize(
            list(texts),
            lower=self.lower,
            token_pattern=self.token_pattern,
            stopwords=self.stopwords or [],
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )

    def _doc_texts(self, corpus: Corpus) -> list[str]:
        return corpus.documents(self.field)

    # -- lifecycle -------------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        """Build (or load from ``cache_dir``) the bm25s index of ``corpus``."""
        import bm25s

        self.corpus = corpus
        folder = None
        if cache_dir is not None:
            key = stable_hash(
                self.cache_settings(), corpus.fingerprint or stable_hash(corpus.ids, corpus.texts)
            )
            folder = Path(cache_dir) / "bm25" / key
        if folder is not None and (folder / "params.index.json").exists():
            self._model = bm25s.BM25.load(str(folder), show_progress=False)
            self.stats["index_cache_hits"] += 1
        else:
            self._model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
            self._model.index(self._tokenize(self._doc_texts(corpus)), show_progress=False)
            self.stats["docs_encoded"] += len(corpus)
            if folder is not None:
                _save_atomically(self._model, folder)
        s = self._model.scores
        csc = sp.csc_matrix(
            (s["data"], s["indices"], s["indptr"]), shape=(s["num_docs"], len(s["indptr"]) - 1)
        )
        self._doc_term = csc.T.tocsr()

    def _query_matrix(self, queries: Sequence[str]) -> sp.csr_matrix:
        vocab = self._model.vocab_dict
        rows, cols = [], []
        for i, tokens in enumerate(self._tokenize(queries)):
            ids = [vocab[t] for t in tokens if t and t in vocab]
            rows.extend([i] * len(ids))
            cols.extend(ids)
        data = np.ones(len(rows), dtype=np.float32)  # duplicates sum: a repeated term counts twice
        return sp.csr_matrix((data, (rows, cols)), shape=(len(queries), self._doc_term.shape[0]))

    def score(self, queries: Sequence[str]) -> np.ndarray:
        """(n_queries, n_docs) float32 BM25 scores, computed ``chunk_size`` queries at a time."""
        corpus = self._require_index()
        out = np.empty((len(queries), len(corpus)), dtype=np.float32)
        for start in range(0, len(queries), self.chunk_size):
            chunk = queries[start : start + self.chunk_size]
            out[start : start + len(chunk)] = (self._query_matrix(chunk) @ self._doc_term).toarray()
        self.stats["queries_encoded"] += len(queries)
        return out


def _save_atomically(model: Any, folder: Path) -> None:
    """Save into a temporary sibling folder and rename it into place (a killed run leaves no half index)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        model.save(str(tmp), show_progress=False)
        os.replace(tmp, folder)
    except OSError:
        if not (folder / "params.index.json").exists():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
