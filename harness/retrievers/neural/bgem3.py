"""BGE-M3: dense + sparse (lexical) + multi-vector scores from one encoder, fused (the paper's hybrid).

The three heads (Chen et al., 2024; FlagEmbedding ``BGEM3FlagModel``), all over the last hidden states
``H`` of the XLM-R encoder:

* **dense** — ``H[CLS]`` L2-normalised; score = dot product.
* **sparse** — token weight ``ReLU(sparse_linear(H_t))`` (``sparse_linear.pt``, H→1); per text, each
  vocabulary id keeps its max weight, special tokens excluded, weights ≤ 0 dropped; score = sum over
  shared ids of ``w_q · w_d`` (a scipy CSR product over the corpus).
* **multi-vector** — ``colbert_linear(H_t)`` (``colbert_linear.pt``) for every non-CLS, non-padding
  token, L2-normalised; score = mean over query vectors of the max dot with the document's vectors.

Fusion (``fusion``):

* ``zscore`` (default, the paper's, docs/design.md §13): each component z-scored per query over the
  whole corpus, combined as ``w_d·z_dense + w_s·z_sparse + w_c·z_colbert`` with weights 1.0/0.3/1.0.
* ``weighted_sum``: FlagEmbedding's ``compute_score`` rule, ``(w_d·dense + w_s·sparse + w_c·colbert)/Σw``.

The authors cut query and document multi-vectors to their first 16 tokens; we do not by default
(``colbert_max_tokens=16`` reproduces it). Backends: ``flagembedding`` (``BGEM3FlagModel``, when it
imports), ``transformers`` (this module's implementation of the same heads from the checkpoint files),
``auto`` = FlagEmbedding if importable, else transformers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.harness.errors import ModelArgsError, ModelNotAvailableError
from pqb.harness.retrievers.base import ArgRule, Corpus, positive_int, positive_int_or
from pqb.harness.retrievers.neural.encoding import (
    ArrayCache,
    NeuralRetriever,
    as_optional_int,
    length_sorted_batches,
    load_csr,
    load_or_explain,
    maxsim_scores,
    pack_token_vectors,
    progress,
    save_csr,
    zscore_rows,
)

COMPONENTS = ("dense", "sparse", "colbert")


def _flagembedding_available() -> bool:
    try:
        from FlagEmbedding import BGEM3FlagModel  # noqa: F401
    except Exception:  # FlagEmbedding 1.4 fails to import under transformers 5 (modeling_attn_mask_utils)
        return False
    return True


class BGEM3Retriever(NeuralRetriever):
    """BGE-M3 hybrid over the whole corpus.

    Args:
        pretrained: default ``BAAI/bge-m3``; a folder needs the encoder plus ``colbert_linear.pt`` and
            ``sparse_linear.pt`` (as in the Hub repository).
        components: ``+``-separated subset of dense, sparse, colbert.
        weights: ``+``-separated weights in the order dense+sparse+colbert (paper 1.0+0.3+1.0).
        fusion: ``zscore`` (paper) or ``weighted_sum`` (FlagEmbedding).
        max_length / query_max_length: document / query truncation in tokens (paper: 512 / 512).
        colbert_max_tokens: keep only the first N multi-vectors of queries and docs (paper's shortcut: 16).
        backend: ``auto`` | ``flagembedding`` | ``transformers``.
        Plus :class:`NeuralRetriever` arguments.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "max_length": positive_int,
        "query_max_length": positive_int,
        "colbert_max_tokens": positive_int_or(None),
    }

    name = "bge-m3"
    full_scoring = True
    default_components = "dense+sparse+colbert"

    def __init__(
        self,
        pretrained: str = "BAAI/bge-m3",
        components: str | None = None,
        weights: str = "1.0+0.3+1.0",
        fusion: str = "zscore",
        max_length: int | str = 512,
        query_max_length: int | str = 512,
        colbert_max_tokens: int | str | None = None,
        backend: str = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(pretrained=pretrained, **kwargs)
        self.components = [
            c.strip() for c in str(components or self.default_components).split("+") if c.strip()
        ]
        unknown = set(self.components) - set(COMPONENTS)
        if unknown or not self.components:
            raise ModelArgsError(
                f"bge-m3 components must be a '+' list of {', '.join(COMPONENTS)}; got {components!r}"
            )
        w = [float(x) for x in str(weights).split("+")]
        if len(w) != 3:
            raise ModelArgsError(f"bge-m3 weights are dense+sparse+colbert (3 numbers), got {weights!r}")
        self.weights_by_component = dict(zip(COMPONENTS, w, strict=True))
        if fusion not in {"zscore", "weighted_sum"}:
            raise ModelArgsError(f"fusion must be 'zscore' or 'weighted_sum', got {fusion!r}")
        self.fusion = fusion
        self.max_length = int(max_length)
        self.query_max_length = int(query_max_length)
        self.colbert_max_tokens = as_optional_int(colbert_max_tokens)
        if backend not in {"auto", "flagembedding", "transformers"}:
            raise ModelArgsError(f"backend must be auto, flagembedding or transformers, got {backend!r}")
        self.backend_requested = backend
        self.backend = ""
        self.model: Any = None
        self.tokenizer: Any = None
        self.colbert_linear: Any = None
        self.sparse_linear: Any = None
        self.flag_model: Any = None
        self.dense_docs: np.ndarray | None = None
        self.sparse_docs_t: Any = None
        self.colbert_tokens: np.ndarray | None = None
        self.colbert_offsets: np.ndarray | None = None

    # -- loading ------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.model is not None or self.flag_model is not None:
            return
        use_flag = self.backend_requested == "flagembedding" or (
            self.backend_requested == "auto" and _flagembedding_available()
        )
        if use_flag:
            self._load_flag()
        else:
            self._load_transformers()

    def _load_flag(self) -> None:
        from FlagEmbedding import BGEM3FlagModel

        self.flag_model = load_or_explain(
            BGEM3FlagModel,
            self.pretrained,
            "BGE-M3 checkpoint",
            use_fp16=self.device.startswith("cuda"),
            devices=self.device,
        )
        self.backend = "flagembedding"
        self._record_weights(None, backend=self.backend)

    def _load_transformers(self) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = load_or_explain(
            AutoTokenizer.from_pretrained, self.pretrained, "tokenizer", revision=self.revision
        )
        model = load_or_explain(
            AutoModel.from_pretrained,
            self.pretrained,
            "BGE-M3 encoder",
            revision=self.revision,
            dtype=self.dtype,
        )
        self.model = model.to(self.device).eval()
        hidden = model.config.hidden_size
        folder = self._checkpoint_folder()
        self.colbert_linear = torch.nn.Linear(hidden, hidden)
        self.sparse_linear = torch.nn.Linear(hidden, 1)
        for head, fname in (
            (self.colbert_linear, "colbert_linear.pt"),
            (self.sparse_linear, "sparse_linear.pt"),
        ):
            path = folder / fname
            if not path.exists():
                raise ModelNotAvailableError(
                    f"BGE-M3 head {fname} not found in {folder}; the checkpoint folder must hold the encoder "
                    f"plus colbert_linear.pt and sparse_linear.pt (as BAAI/bge-m3 on the Hub)."
                )
            head.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            head.to(self.device, self.dtype).eval()
        self.special_ids = {
            i for i in (self.tokenizer.cls_token_id, self.tokenizer.eos_token_id, self.tokenizer.sep_token_id,
                        self.tokenizer.pad_token_id, self.tokenizer.unk_token_id) if i is not None
        }  # fmt: skip
        self.backend = "transformers"
        self._record_weights(model, backend=self.backend, architecture=type(model).__name__)

    def _checkpoint_folder(self) -> Path:
        if Path(self.pretrained).exists():
            return Path(self.pretrained)
        from huggingface_hub import snapshot_download

        try:
            return Path(
                snapshot_download(self.pretrained, revision=self.revision, allow_patterns=["*.pt", "*.json"])
            )
        except Exception as exc:
            from pqb.harness.retrievers.neural.encoding import missing_model_error

            raise missing_model_error(self.pretrained, "BGE-M3 heads", exc) from exc

    # -- encoding -----------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str], *, max_length: int, desc: str) -> dict[str, Any]:
        """``{"dense": (n, H), "sparse": CSR (n, V), "colbert": list of (L_i, H)}`` for the requested parts."""
        self._load()
        if self.backend == "flagembedding":
            return self._encode_flag(texts, max_length)
        import scipy.sparse as sp
        import torch

        vocab = self.model.config.vocab_size
        bs = self._resolved_batch_size(max_length=max_length, hidden_size=self.model.config.hidden_size)
        n = len(texts)
        dense = np.zeros((n, self.model.config.hidden_size), np.float32)
        colbert: list[np.ndarray] = [np.zeros((0, self.model.config.hidden_size), np.float32)] * n
        rows, cols, vals = [], [], []
        special = torch.tensor(sorted(self.special_ids))
        with torch.inference_mode():
            for idx in progress(
                length_sorted_batches(texts, bs), desc=desc, disable=not self.show_progress or n <= bs
            ):
                enc = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt").to(self.device)  # fmt: skip
                h = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"]
                if "dense" in self.components:
                    dense[idx] = torch.nn.functional.normalize(h[:, 0].float(), dim=-1).cpu().numpy()
                if "sparse" in self.components:
                    w = torch.relu(self.sparse_linear(h)).squeeze(-1).float().cpu()
                    ids = enc["input_ids"].cpu()
                    keep = (mask.cpu() > 0) & ~torch.isin(ids, special) & (w > 0)
                    b, t = keep.nonzero(as_tuple=True)
                    rows.append(np.asarray(idx)[b.numpy()])
                    cols.append(ids[b, t].numpy())
                    vals.append(w[b, t].numpy())
                if "colbert" in self.components:
                    vecs = (
                        torch.nn.functional.normalize(self.colbert_linear(h[:, 1:]).float(), dim=-1)
                        .cpu()
                        .numpy()
                    )
                    lens = (mask[:, 1:].sum(dim=1)).cpu().numpy()
                    for j, i in enumerate(idx):
                        colbert[i] = vecs[j, : lens[j]]
        out: dict[str, Any] = {}
        if "dense" in self.components:
            out["dense"] = dense
        if "sparse" in self.components:
            out["sparse"] = _max_csr(rows, cols, vals, (n, vocab), sp)
        if "colbert" in self.components:
            out["colbert"] = [self._cut(v) for v in colbert]
        return out

    def _encode_flag(self, texts: Sequence[str], max_length: int) -> dict[str, Any]:
        """BGEM3FlagModel outputs converted to this module's representations."""
        import scipy.sparse as sp

        res = self.flag_model.encode(list(texts), batch_size=self._resolved_batch_size(max_length=max_length),
                                     max_length=max_length, return_dense="dense" in self.components,
                                     return_sparse="sparse" in self.components,
                                     return_colbert_vecs="colbert" in self.components)  # fmt: skip
        out: dict[str, Any] = {}
        if "dense" in self.components:
            out["dense"] = np.asarray(res["dense_vecs"], np.float32)
        if "sparse" in self.components:
            tok = self.flag_model.tokenizer
            rows = [np.full(len(d), i) for i, d in enumerate(res["lexical_weights"])]
            cols = [np.asarray([int(k) for k in d], np.int64) for d in res["lexical_weights"]]
            vals = [np.asarray(list(d.values()), np.float32) for d in res["lexical_weights"]]
            out["sparse"] = _max_csr(rows, cols, vals, (len(texts), len(tok)), sp)
        if "colbert" in self.components:
            vecs = [np.asarray(v, np.float32) for v in res["colbert_vecs"]]
            norms = [np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12) for v in vecs]
            out["colbert"] = [self._cut(v / n) for v, n in zip(vecs, norms, strict=True)]  # idempotent
        return out

    def _cut(self, vecs: np.ndarray) -> np.ndarray:
        return vecs[: self.colbert_max_tokens] if self.colbert_max_tokens else vecs

    # -- contract -----------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        self._load()
        self.corpus = corpus
        cache = self._cache_for(corpus, cache_dir, self._doc_settings())
        if cache.exists():
            self._load_cache(cache)
            self.stats["index_cache_hits"] += 1
            return
        texts = corpus.documents(self.field)
        enc = self.encode(texts, max_length=self.max_length, desc=f"BGE-M3 docs ({self.device})")
        self.stats["docs_encoded"] += len(texts)
        arrays: dict[str, np.ndarray] = {}
        if "dense" in enc:
            self.dense_docs = enc["dense"]
            arrays["dense"] = enc["dense"]
        if "sparse" in enc:
            self.sparse_docs_t = enc["sparse"].T.tocsr()
            arrays.update(save_csr(cache, "sparse", enc["sparse"]))
        if "colbert" in enc:
            dim = enc["colbert"][0].shape[1] if enc["colbert"] else 1
            self.colbert_tokens, self.colbert_offsets = pack_token_vectors(enc["colbert"], dim)
            arrays.update({"colbert_tokens": self.colbert_tokens, "colbert_offsets": self.colbert_offsets})
        cache.save(arrays, {"n_docs": len(texts)})

    def _load_cache(self, cache: ArrayCache) -> None:
        if "dense" in self.components:
            (self.dense_docs,) = cache.load("dense")
        if "sparse" in self.components:
            self.sparse_docs_t = load_csr(cache, "sparse").T.tocsr()
        if "colbert" in self.components:
            self.colbert_tokens, self.colbert_offsets = cache.load("colbert_tokens", "colbert_offsets")

    def component_scores(self, queries: Sequence[str]) -> dict[str, np.ndarray]:
        """Raw (n_queries, n_docs) scores of each requested component."""
        corpus = self._require_index()
        q = self.encode(list(queries), max_length=self.query_max_length, desc="BGE-M3 queries")
        self.stats["queries_encoded"] += len(queries)
        out: dict[str, np.ndarray] = {}
        if "dense" in q:
            out["dense"] = q["dense"] @ self.dense_docs.T
        if "sparse" in q:
            out["sparse"] = (q["sparse"] @ self.sparse_docs_t).toarray().reshape(len(queries), len(corpus))
        if "colbert" in q:
            out["colbert"] = maxsim_scores(q["colbert"], self.colbert_tokens, self.colbert_offsets,
                                           device=self.device, average=True, dtype=self.dtype)  # fmt: skip
        return {k: np.asarray(v, np.float32) for k, v in out.items()}

    def score(self, queries: Sequence[str]) -> np.ndarray:
        parts = self.component_scores(queries)
        if len(parts) == 1:
            return next(iter(parts.values()))
        if self.fusion == "zscore":
            fused = sum(self.weights_by_component[k] * zscore_rows(v) for k, v in parts.items())
        else:
            total = sum(self.weights_by_component[k] for k in parts)
            fused = sum(self.weights_by_component[k] * v.astype(np.float64) for k, v in parts.items()) / total
        return np.asarray(fused, np.float32)

    # -- metadata -----------------------------------------------------------------------------------
    def _doc_settings(self) -> dict[str, Any]:
        return {
            "components": self.components,
            "max_length": self.max_length,
            "colbert_max_tokens": self.colbert_max_tokens,
            "dtype": self._dtype_str(),
            "backend": self.backend or self.backend_requested,
        }

    def settings(self) -> dict[str, Any]:
        return {
            **self._doc_settings(),
            "query_max_length": self.query_max_length,
            "fusion": self.fusion if len(self.components) > 1 else None,
            "fusion_weights": {k: self.weights_by_component[k] for k in self.components},
        }

    def cache_settings(self) -> dict[str, Any]:
        settings = super().cache_settings()
        settings.pop("backend", None)  # both backends implement the same heads
        return settings


def _max_csr(
    rows: list[np.ndarray], cols: list[np.ndarray], vals: list[np.ndarray], shape: tuple[int, int], sp: Any
) -> Any:
    """CSR with the *max* value per (row, col) — a repeated token keeps its largest weight (BGE-M3 rule)."""
    if not rows or not sum(len(r) for r in rows):
        return sp.csr_matrix(shape, dtype=np.float32)
    r = np.concatenate(rows).astype(np.int64)
    c = np.concatenate(cols).astype(np.int64)
    v = np.concatenate(vals).astype(np.float32)
    keys = r * shape[1] + c
    order = np.argsort(keys, kind="stable")
    uniq, first = np.unique(keys[order], return_index=True)
    data = np.maximum.reduceat(v[order], first)
    return sp.csr_matrix((data, (uniq // shape[1], uniq % shape[1])), shape=shape, dtype=np.float32)


class BGEM3DenseRetriever(BGEM3Retriever):
    """BGE-M3 dense head only (the paper's "BGE-M3 dense" row): CLS, L2-normalised, dot product."""

    name = "bge-m3-dense"
    default_components = "dense"
