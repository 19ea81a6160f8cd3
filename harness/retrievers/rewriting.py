"""A defense as a system of its own: any registered retriever behind a query rewriter.

``--model bm25 --model_args rewriter=symspell`` builds the BM25 retriever and wraps it here: every
query is rewritten (:mod:`pqb.harness.retrievers.rewriters`) before the inner retriever scores it, so Flip@K and
Deg@K *after* the defense are measured exactly like any model's, and ``compare`` tests the defense
against the bare retriever pair by pair. The system is named ``<model>+<rewriter>`` in results and on
the leaderboard; ``cache_settings`` adds the rewriter to the inner retriever's, so the run cache never
mixes rewritten and raw queries, while the inner index (which the rewriter does not change) is shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pqb.harness.retrievers.base import Corpus, Ranked, Retriever, SearchResult
from pqb.harness.retrievers.rewriters import Rewriter


class RewritingRetriever(Retriever):
    """``inner`` retrieval of ``rewriter.rewrite(queries)``."""

    def __init__(self, inner: Retriever, rewriter: Rewriter) -> None:
        super().__init__()
        self.inner, self.rewriter = inner, rewriter
        self.name = f"{inner.name}+{rewriter.name}"  # type: ignore[misc]  # instance name of the composed system
        self.full_scoring = inner.full_scoring  # type: ignore[misc]
        self.stats = inner.stats
        self._corpus: Corpus | None = None

    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        self.corpus = corpus
        self.rewriter.fit(corpus)
        self.inner.index(corpus, cache_dir=cache_dir)

    def rewrite(self, texts: Sequence[str], corpus: Corpus | None = None) -> list[str]:
        """The queries the inner retriever sees; ``corpus`` fits the rewriter's vocabulary first (when
        every rank came from the run cache, ``index`` was never called)."""
        if corpus is not None:
            self.rewriter.fit(corpus)
        return self.rewriter.rewrite(texts)

    def score(self, queries: Sequence[str]) -> np.ndarray:
        return self.inner.score(self.rewrite(queries))

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        return self.inner.search(self.rewrite(queries), k)

    def rank(self, queries: Sequence[str], query_of: np.ndarray, targets: np.ndarray, *, k: int,
             cutoff: int | None) -> Ranked | None:  # fmt: skip
        return self.inner.rank(self.rewrite(queries), query_of, targets, k=k, cutoff=cutoff)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "name": self.name, "rewriter": self.rewriter.describe()}

    def cache_settings(self) -> dict[str, Any]:
        return {"inner": self.inner.cache_settings(), "rewriter": self.rewriter.describe()}
