"""Dense bi-encoder retrieval with any sentence-transformers model (GTE-base in the paper).

Documents are encoded once (and cached as ``.npy``); a query batch is scored against the whole corpus
with one matrix product, so ``score`` returns exact full rows and ranks are exact. With
``normalize=true`` (the default, the paper's GTE setting) the inner product is the cosine.

Query/document prefixes cover e5/bge-style models: ``query_prompt="query: "``, ``doc_prompt="passage: "``
(or ``query_prompt_name=query`` for models that ship named prompts). ``use_faiss=true`` answers
``search`` through a faiss ``IndexFlatIP`` (exact) when faiss is installed; candidates are re-sorted
under PQB's pinned tie rule.

Multi-GPU: for large corpora on a machine with several GPUs, documents are encoded with
sentence-transformers' multi-process pool (one process per GPU), see ``multi_gpu``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.harness.retrievers.base import ArgRule, Corpus, SearchResult, positive_int_or
from pqb.harness.retrievers.neural.encoding import (
    MIN_CORPUS_FOR_MULTI_GPU,
    NeuralRetriever,
    as_bool,
    as_optional_int,
    load_or_explain,
)


class DenseRetriever(NeuralRetriever):
    """Bi-encoder: ``score(q, d) = <E(q), E(d)>`` over the whole corpus.

    Args:
        pretrained: sentence-transformers model (Hub id, local folder, or ``wheel:...``). Default: the
            paper's ``thenlper/gte-base``.
        normalize: L2-normalise embeddings (cosine similarity).
        query_prompt / doc_prompt: literal prefixes prepended to queries / documents (e5: ``query: ``).
        query_prompt_name / doc_prompt_name: names of prompts stored in the model's config instead.
        max_seq_length: override the model's truncation length (``None`` = the model's default).
        use_faiss: answer ``search`` with a faiss flat inner-product index (exact) when installed.
        trust_remote_code: forwarded to sentence-transformers for custom architectures.
        Plus the shared arguments of :class:`~pqb.harness.retrievers.neural.encoding.NeuralRetriever`.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "max_seq_length": positive_int_or(None),
    }

    name = "dense"
    full_scoring = True

    def __init__(
        self,
        pretrained: str = "thenlper/gte-base",
        normalize: bool | str = True,
        query_prompt: str = "",
        doc_prompt: str = "",
        query_prompt_name: str | None = None,
        doc_prompt_name: str | None = None,
        max_seq_length: int | str | None = None,
        use_faiss: bool | str = False,
        trust_remote_code: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(pretrained=pretrained, **kwargs)
        self.normalize = as_bool(normalize)
        self.query_prompt = query_prompt or ""
        self.doc_prompt = doc_prompt or ""
        self.query_prompt_name = query_prompt_name or None
        self.doc_prompt_name = doc_prompt_name or None
        self.max_seq_length = as_optional_int(max_seq_length)
        self.use_faiss = as_bool(use_faiss)
        self.trust_remote_code = as_bool(trust_remote_code)
        self.model: Any = None
        self.doc_embeddings: np.ndarray | None = None
        self._faiss_index: Any = None

    # -- loading ------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.model is not None:
            return
        from sentence_transformers import SentenceTransformer

        model = load_or_explain(
            SentenceTransformer,
            self.pretrained,
            "sentence-transformers model",
            device=self.device,
            revision=self.revision,
            trust_remote_code=self.trust_remote_code,
        )
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        model.to(self.dtype)
        model.eval()
        self.model = model
        first = model[0]
        hf_model = getattr(first, "auto_model", None) or getattr(first, "model", None)
        self._record_weights(hf_model, max_seq_length=model.max_seq_length)

    def _encode(
        self, texts: Sequence[str], *, prompt: str, prompt_name: str | None, docs: bool
    ) -> np.ndarray:
        assert self.model is not None
        bs = self._resolved_batch_size(
            max_length=self.model.max_seq_length or 512,
            hidden_size=self._embedding_dim(),
        )
        kwargs: dict[str, Any] = {"prompt_name": prompt_name} if prompt_name else {"prompt": prompt or None}
        devices = self._multi_gpu_devices(len(texts)) if docs else None
        emb = self.model.encode(
            list(texts),
            batch_size=bs,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=self.show_progress and docs,
            device=devices,
            **kwargs,
        )
        return np.asarray(emb, dtype=np.float32)

    def _embedding_dim(self) -> int:
        """Embedding width across sentence-transformers versions (the method was renamed in v6)."""
        getter = (
            getattr(self.model, "get_embedding_dimension", None)
            or self.model.get_sentence_embedding_dimension
        )
        return int(getter() or 768)

    def _multi_gpu_devices(self, n_texts: int) -> list[str] | None:
        if not self.device.startswith("cuda") or self.multi_gpu is False:
            return None
        import torch

        n = torch.cuda.device_count()
        if n > 1 and (self.multi_gpu is True or n_texts >= MIN_CORPUS_FOR_MULTI_GPU):
            return [f"cuda:{i}" for i in range(n)]
        return None

    # -- contract -----------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        self._load()
        self.corpus = corpus
        cache = self._cache_for(corpus, cache_dir, self._doc_settings())
        if cache.exists():
            (self.doc_embeddings,) = cache.load("doc_embeddings")
            self.stats["index_cache_hits"] += 1
        else:
            docs = corpus.documents(self.field)
            self.doc_embeddings = self._encode(
                docs, prompt=self.doc_prompt, prompt_name=self.doc_prompt_name, docs=True
            )
            self.stats["docs_encoded"] += len(docs)
            cache.save({"doc_embeddings": self.doc_embeddings}, {"n_docs": len(docs)})
        self._faiss_index = None

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        self._load()
        self.stats["queries_encoded"] += len(queries)
        return self._encode(queries, prompt=self.query_prompt, prompt_name=self.query_prompt_name, docs=False)

    def score(self, queries: Sequence[str]) -> np.ndarray:
        self._require_index()
        assert self.doc_embeddings is not None
        q = self.encode_queries(queries)
        return (q @ self.doc_embeddings.T).astype(np.float32, copy=False)

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        if not self.use_faiss:
            return super().search(queries, k)
        return self._faiss_search(queries, k)

    def _faiss_search(self, queries: Sequence[str], k: int) -> SearchResult:
        """Exact flat-IP search; the k candidates are re-sorted by (score desc, corpus index asc)."""
        try:
            import faiss
        except ImportError as exc:
            raise ImportError("use_faiss=true needs faiss: pip install faiss-cpu (or faiss-gpu).") from exc
        self._require_index()
        assert self.doc_embeddings is not None
        if self._faiss_index is None:
            self._faiss_index = faiss.IndexFlatIP(self.doc_embeddings.shape[1])
            self._faiss_index.add(np.ascontiguousarray(self.doc_embeddings))
        q = np.ascontiguousarray(self.encode_queries(queries))
        if len(q) == 0:
            return SearchResult(np.empty((0, k), np.int64), np.empty((0, k), np.float32))
        k = min(k, self.doc_embeddings.shape[0])
        scores, idx = self._faiss_index.search(q, k)
        order = np.stack([np.lexsort((row_idx, -row_s)) for row_idx, row_s in zip(idx, scores, strict=True)])
        idx = np.take_along_axis(idx, order, axis=1).astype(np.int64)
        return SearchResult(idx, np.take_along_axis(scores, order, axis=1).astype(np.float32))

    # -- metadata -----------------------------------------------------------------------------------
    def _doc_settings(self) -> dict[str, Any]:
        return {
            "normalize": self.normalize,
            "doc_prompt": self.doc_prompt,
            "doc_prompt_name": self.doc_prompt_name,
            "max_seq_length": self.max_seq_length,
            "dtype": self._dtype_str(),
        }

    def settings(self) -> dict[str, Any]:
        return {
            **self._doc_settings(),
            "query_prompt": self.query_prompt,
            "query_prompt_name": self.query_prompt_name,
            "similarity": "cosine" if self.normalize else "dot",
        }

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "search": "faiss-flat-ip" if self.use_faiss else "exact-matmul"}
