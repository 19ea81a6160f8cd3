"""A seeded random retriever: the sanity floor every real model must beat.

Scores for a query depend only on (seed, query text), never on batch order or chunking, so the
same query gets the same ranking in every run and every task. Expected Hit@K is K / n_docs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pqb.harness.registry import register_model
from pqb.harness.retrievers.base import Corpus, Retriever


@register_model("random")
class RandomRetriever(Retriever):
    """Uniform random scores in [0, 1), seeded per query text. ``seed`` changes every ranking."""

    name = "random"
    full_scoring = True

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = int(seed)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed}

    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        """Nothing to build; remembers the corpus size."""
        self.corpus = corpus

    def score(self, queries: Sequence[str]) -> np.ndarray:
        corpus = self._require_index()
        out = np.empty((len(queries), len(corpus)), dtype=np.float32)
        for i, q in enumerate(queries):
            digest = int.from_bytes(hashlib.sha256(q.encode("utf-8")).digest()[:8], "little")
            out[i] = np.random.default_rng([self.seed, digest]).random(len(corpus), dtype=np.float32)
        self.stats["queries_encoded"] += len(queries)
        return out
