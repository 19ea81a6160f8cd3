"""SPLADE learned-sparse retrieval from any masked-LM checkpoint.

Representation (Formal et al., SPLADE v2; the paper's P/11 code): for each vocabulary term ``j``,
``w_j = max_t log(1 + ReLU(logit_{t,j}))`` over the non-padding tokens ``t`` of the text. Documents and
queries are truncated at 128 tokens by default — the paper's setting, which hides most of a long
product description (docs/design.md §13); raise ``doc_max_length`` to see more.

Scores are sparse dot products computed for a whole query batch at once as a scipy CSR product
``Q (n_q × V) · Dᵀ (V × n_d)``, so ``score`` returns exact full rows. The document matrix is cached as
CSR arrays, so a second run encodes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.harness.retrievers.base import ArgRule, Corpus, positive_int
from pqb.harness.retrievers.neural.encoding import (
    NeuralRetriever,
    length_sorted_batches,
    load_csr,
    load_or_explain,
    maybe_data_parallel,
    progress,
    save_csr,
)


def _splade_pool_module(mlm: Any) -> Any:
    """A module whose forward returns the pooled SPLADE vectors (so DataParallel can split batches)."""
    import torch

    class SpladePool(torch.nn.Module):
        def __init__(self, mlm: Any) -> None:
            super().__init__()
            self.mlm = mlm

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kw: torch.Tensor
        ) -> torch.Tensor:
            logits = self.mlm(input_ids=input_ids, attention_mask=attention_mask, **kw).logits
            act = torch.log1p(torch.relu(logits.float())) * attention_mask.unsqueeze(-1).to(torch.float32)
            return act.amax(dim=1)

    return SpladePool(mlm)


class SpladeRetriever(NeuralRetriever):
    """Masked-LM SPLADE: sparse term weights, scored by sparse dot product over the whole corpus.

    Args:
        pretrained: masked-LM SPLADE checkpoint (Hub id, folder or ``wheel:...``); default the paper's
            ``naver/splade-cocondenser-ensembledistil``.
        doc_max_length / query_max_length: tokenizer truncation (paper: 128 / 128).
        Plus the shared arguments of :class:`~pqb.harness.retrievers.neural.encoding.NeuralRetriever`.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "doc_max_length": positive_int,
        "query_max_length": positive_int,
    }

    name = "splade"
    full_scoring = True

    def __init__(
        self,
        pretrained: str = "naver/splade-cocondenser-ensembledistil",
        doc_max_length: int | str = 128,
        query_max_length: int | str = 128,
        **kwargs: Any,
    ) -> None:
        super().__init__(pretrained=pretrained, **kwargs)
        self.doc_max_length = int(doc_max_length)
        self.query_max_length = int(query_max_length)
        self.tokenizer: Any = None
        self.model: Any = None
        self.doc_matrix_t: Any = None  # (V, n_docs) CSR
        self.n_docs_nnz: int = 0

    def _load(self) -> None:
        if self.model is not None:
            return
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.tokenizer = load_or_explain(
            AutoTokenizer.from_pretrained, self.pretrained, "tokenizer", revision=self.revision
        )
        mlm = load_or_explain(
            AutoModelForMaskedLM.from_pretrained,
            self.pretrained,
            "masked-LM checkpoint",
            revision=self.revision,
            dtype=self.dtype,
        )
        self.model = _splade_pool_module(mlm).to(self.device).eval()
        self._record_weights(mlm, architecture=type(mlm).__name__)

    def encode(self, texts: Sequence[str], *, max_length: int, desc: str = "SPLADE") -> Any:
        """CSR matrix (len(texts) × vocab) of SPLADE weights, rows in input order."""
        import scipy.sparse as sp
        import torch

        self._load()
        vocab = self.model.mlm.config.vocab_size
        n = len(texts)
        bs = self._resolved_batch_size(max_length=max_length, hidden_size=max(768, vocab // 16))
        module = maybe_data_parallel(self.model, self.device, n, self.multi_gpu)
        if n == 0:
            return sp.csr_matrix((0, vocab), dtype=np.float32)
        blocks: list[Any] = []
        batches = length_sorted_batches(texts, bs)
        show = self.show_progress and n > bs
        with torch.inference_mode():
            for idx in progress(batches, desc=f"{desc} ({self.device})", disable=not show):
                enc = self.tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                ).to(self.device)
                blocks.append(sp.csr_matrix(module(**enc).float().cpu().numpy()))
        stacked = sp.vstack(blocks, format="csr", dtype=np.float32)
        return stacked[np.argsort(np.concatenate(batches), kind="stable")]

    # -- contract -----------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        self._load()
        self.corpus = corpus
        cache = self._cache_for(corpus, cache_dir, self._doc_settings())
        if cache.exists():
            docs = load_csr(cache, "docs")
            self.stats["index_cache_hits"] += 1
        else:
            texts = corpus.documents(self.field)
            docs = self.encode(texts, max_length=self.doc_max_length, desc="SPLADE docs")
            self.stats["docs_encoded"] += len(texts)
            cache.save(save_csr(cache, "docs", docs), {"n_docs": len(texts), "nnz": int(docs.nnz)})
        self.doc_matrix_t = docs.T.tocsr()
        self.n_docs_nnz = int(docs.nnz)

    def encode_queries(self, queries: Sequence[str]) -> Any:
        self.stats["queries_encoded"] += len(queries)
        return self.encode(list(queries), max_length=self.query_max_length, desc="SPLADE queries")

    def score(self, queries: Sequence[str]) -> np.ndarray:
        corpus = self._require_index()
        q = self.encode_queries(queries)
        out = (q @ self.doc_matrix_t).toarray().astype(np.float32, copy=False)
        return out.reshape(len(queries), len(corpus))

    # -- metadata -----------------------------------------------------------------------------------
    def _doc_settings(self) -> dict[str, Any]:
        return {
            "doc_max_length": self.doc_max_length,
            "dtype": self._dtype_str(),
            "pooling": "max-log1p-relu",
        }

    def settings(self) -> dict[str, Any]:
        return {**self._doc_settings(), "query_max_length": self.query_max_length}
