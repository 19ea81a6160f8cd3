"""ColBERTv2 late interaction, encoded the way the official ``colbert-ir`` code does it.

Encoder (``colbert.modeling``): BERT → ``linear`` (768→128, ``linear.weight`` inside the checkpoint) →
L2-normalised per-token vectors. Score = ``Σ_{q ∈ Q} max_{d ∈ D} <q, d>`` (MaxSim).

Tokenisation, as ``QueryTokenizer`` / ``DocTokenizer`` in colbert-ir:

* text is prefixed with ``". "`` and the token after ``[CLS]`` is replaced by the marker: ``[Q]`` =
  ``[unused0]`` for queries, ``[D]`` = ``[unused1]`` for documents (the official checkpoint's ids);
* **query augmentation**: queries are padded to ``query_maxlen`` (32) and every pad becomes ``[MASK]``;
  the mask tokens are not attended to (``attend_to_mask_tokens=False``) but their output vectors are
  kept, so every query has exactly 32 vectors;
* documents are truncated at ``doc_maxlen`` (180 official; the authors used 64) and the vectors of
  punctuation tokens (``string.punctuation``, the **skiplist**) and padding are dropped.

The authors' variant (no markers, no augmentation, no skiplist, docs cut at 64) is described in docs/design.md §13; none of
it is copied here. Search modes (``mode``): ``exhaustive`` — MaxSim against every document in chunks
(the doc token matrix is cached as float16 ``.npy``), exact full rows; ``rerank`` — a first stage
(``bm25``) proposes ``first_stage_k`` candidates that MaxSim reorders (``full_scoring`` becomes
false); ``auto`` — exhaustive while the token matrix stays under ``max_index_gb``, else rerank.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.harness.errors import ModelArgsError, ModelNotAvailableError
from pqb.harness.retrievers.base import ArgRule, Corpus, SearchResult, positive, positive_int
from pqb.harness.retrievers.neural.encoding import (
    NeuralRetriever,
    length_sorted_batches,
    load_or_explain,
    maxsim_scores,
    pack_token_vectors,
    progress,
)

AVG_DOC_TOKENS_GUESS = 120
"""Used by ``mode=auto`` to predict the token matrix size before encoding."""


def _load_linear(folder: Path) -> np.ndarray:
    """``linear.weight`` from the checkpoint's safetensors or PyTorch state dict."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = folder / name
        if not path.exists():
            continue
        if name.endswith(".safetensors"):
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as f:
                if "linear.weight" in f.keys():  # noqa: SIM118 - safe_open has keys(), not __contains__
                    return f.get_tensor("linear.weight").float().numpy()
        else:
            import torch

            state = torch.load(path, map_location="cpu", weights_only=True)
            if "linear.weight" in state:
                return state["linear.weight"].float().numpy()
    raise ModelNotAvailableError(
        f"No 'linear.weight' in {folder} (model.safetensors / pytorch_model.bin): not a ColBERT checkpoint."
    )


class ColBERTRetriever(NeuralRetriever):
    """ColBERTv2 MaxSim retrieval.

    Args:
        pretrained: default ``colbert-ir/colbertv2.0``; any folder with a BERT encoder + ``linear.weight``.
        query_maxlen / doc_maxlen: 32 / 180 (official). ``query_marker`` / ``doc_marker``: ``[unused0]`` / ``[unused1]``.
        augment_queries: [MASK] padding of queries to ``query_maxlen`` (official: true).
        skip_punctuation: drop punctuation token vectors from documents (official: true).
        mode: ``exhaustive`` | ``rerank`` | ``auto``; ``first_stage`` / ``first_stage_k`` for rerank.
        max_index_gb: ``auto`` switches to rerank above this float16 token-matrix size.
        Plus :class:`NeuralRetriever` arguments.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "query_maxlen": positive_int,
        "doc_maxlen": positive_int,
        "first_stage_k": positive_int,
        "max_index_gb": positive,
    }

    name = "colbertv2"
    full_scoring = True

    def __init__(
        self,
        pretrained: str = "colbert-ir/colbertv2.0",
        query_maxlen: int | str = 32,
        doc_maxlen: int | str = 180,
        query_marker: str = "[unused0]",
        doc_marker: str = "[unused1]",
        augment_queries: bool | str = True,
        skip_punctuation: bool | str = True,
        mode: str = "auto",
        first_stage: str = "bm25",
        first_stage_k: int | str = 1000,
        max_index_gb: float | str = 16.0,
        **kwargs: Any,
    ) -> None:
        from pqb.harness.retrievers.neural.encoding import as_bool

        super().__init__(pretrained=pretrained, **kwargs)
        if mode not in {"exhaustive", "rerank", "auto"}:
            raise ModelArgsError(f"mode must be exhaustive, rerank or auto, got {mode!r}")
        self.query_maxlen, self.doc_maxlen = int(query_maxlen), int(doc_maxlen)
        self.query_marker, self.doc_marker = query_marker, doc_marker
        self.augment_queries = as_bool(augment_queries)
        self.skip_punctuation = as_bool(skip_punctuation)
        self.mode_requested = mode
        self.mode = mode
        self.first_stage_name, self.first_stage_k = first_stage, int(first_stage_k)
        self.max_index_gb = float(max_index_gb)
        self.model: Any = None
        self.tokenizer: Any = None
        self.linear: Any = None
        self.tokens: np.ndarray | None = None
        self.offsets: np.ndarray | None = None
        self.first_stage: Any = None
        self._doc_memo: dict[int, np.ndarray] = {}

    # -- loading ------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.model is not None:
            return
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = load_or_explain(
            AutoTokenizer.from_pretrained, self.pretrained, "tokenizer", revision=self.revision
        )
        model = load_or_explain(
            AutoModel.from_pretrained,
            self.pretrained,
            "ColBERT encoder",
            revision=self.revision,
            dtype=self.dtype,
        )
        self.model = model.to(self.device).eval()
        folder = Path(self.pretrained) if Path(self.pretrained).exists() else self._hub_folder()
        weight = torch.from_numpy(_load_linear(folder))
        self.linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        self.linear.weight.data.copy_(weight)
        self.linear.to(self.device, self.dtype).eval()
        vocab = self.tokenizer.get_vocab()
        for marker in (self.query_marker, self.doc_marker):
            if marker not in vocab:
                raise ModelArgsError(f"Marker token {marker!r} is not in the tokenizer of {self.pretrained}.")
        self.q_marker_id, self.d_marker_id = vocab[self.query_marker], vocab[self.doc_marker]
        self.skip_ids = sorted({
            ids[0] for s in string.punctuation if (ids := self.tokenizer.encode(s, add_special_tokens=False))
        })  # fmt: skip
        self._record_weights(model, architecture=type(model).__name__, projection_dim=int(weight.shape[0]))

    def _hub_folder(self) -> Path:
        from huggingface_hub import snapshot_download

        try:
            return Path(
                snapshot_download(
                    self.pretrained,
                    revision=self.revision,
                    allow_patterns=["*.safetensors", "*.bin", "*.json"],
                )
            )
        except Exception as exc:
            from pqb.harness.retrievers.neural.encoding import missing_model_error

            raise missing_model_error(self.pretrained, "ColBERT checkpoint", exc) from exc

    # -- encoding -----------------------------------------------------------------------------------
    def _tensorize(self, texts: Sequence[str], *, query: bool) -> Any:
        tok = self.tokenizer
        texts = [". " + t for t in texts]
        if query:
            pad = "max_length" if self.augment_queries else True
            enc = tok(texts, padding=pad, truncation=True, max_length=self.query_maxlen, return_tensors="pt")
            enc["input_ids"][:, 1] = self.q_marker_id
            if self.augment_queries:
                enc["input_ids"][enc["input_ids"] == tok.pad_token_id] = tok.mask_token_id
        else:
            enc = tok(texts, padding=True, truncation=True, max_length=self.doc_maxlen, return_tensors="pt")
            enc["input_ids"][:, 1] = self.d_marker_id
        return enc

    def encode(self, texts: Sequence[str], *, query: bool, desc: str = "ColBERT") -> list[np.ndarray]:
        """Per text, the (n_tokens, dim) float32 matrix of normalised token vectors that MaxSim uses."""
        import torch

        self._load()
        n = len(texts)
        maxlen = self.query_maxlen if query else self.doc_maxlen
        bs = self._resolved_batch_size(max_length=maxlen, hidden_size=self.model.config.hidden_size)
        out: list[np.ndarray] = [np.zeros((0, self.linear.out_features), np.float32)] * n
        skip = torch.tensor([*self.skip_ids, self.tokenizer.pad_token_id])
        with torch.inference_mode():
            for idx in progress(
                length_sorted_batches(texts, bs), desc=desc, disable=not self.show_progress or n <= bs
            ):
                enc = self._tensorize([texts[i] for i in idx], query=query)
                ids = enc["input_ids"]
                h = self.model(**enc.to(self.device)).last_hidden_state
                vecs = torch.nn.functional.normalize(self.linear(h).float(), p=2, dim=-1).cpu()
                if query:  # official: every position (incl. [MASK] augmentation) except real padding
                    keep = ids != self.tokenizer.pad_token_id
                else:  # official: drop padding and punctuation (skiplist)
                    keep = (
                        ~torch.isin(ids, skip) if self.skip_punctuation else enc["attention_mask"].cpu() > 0
                    )
                    keep &= enc["attention_mask"].cpu() > 0
                for j, i in enumerate(idx):
                    out[i] = vecs[j][keep[j]].numpy()
        return out

    def _first_stage(self) -> Any:
        """The rerank mode's first stage, built once (no index): ``index``, ``cache_settings`` and
        ``describe`` all see the same instance."""
        if self.first_stage is None:
            from pqb.harness.registry import create_retriever

            self.first_stage = create_retriever(self.first_stage_name)
        return self.first_stage

    # -- contract -----------------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        self._load()
        self.corpus = corpus
        dim = self.linear.out_features
        predicted_gb = len(corpus) * min(self.doc_maxlen, AVG_DOC_TOKENS_GUESS) * dim * 2 / 1e9
        self.mode = self.mode_requested
        if self.mode == "auto":
            self.mode = "exhaustive" if predicted_gb <= self.max_index_gb else "rerank"
        self.full_scoring = (
            self.mode == "exhaustive"
        )  # instance attribute: the evaluator reads it after index()
        if self.mode == "rerank":
            self._first_stage().index(corpus, cache_dir=cache_dir)
            self._doc_strings = corpus.documents(self.field)
            self.stats["index_cache_hits"] += int(self.first_stage.stats.get("index_cache_hits", 0))
            return
        cache = self._cache_for(corpus, cache_dir, self._doc_settings())
        if cache.exists():
            self.tokens, self.offsets = cache.load("tokens", "offsets")
            self.stats["index_cache_hits"] += 1
            return
        texts = corpus.documents(self.field)
        per_doc = self.encode(texts, query=False, desc=f"ColBERT docs ({self.device})")
        self.stats["docs_encoded"] += len(texts)
        self.tokens, self.offsets = pack_token_vectors(per_doc, dim)
        cache.save(
            {"tokens": self.tokens, "offsets": self.offsets},
            {"n_docs": len(texts), "n_tokens": int(self.offsets[-1])},
        )

    def score(self, queries: Sequence[str]) -> np.ndarray:
        self._require_index()
        if self.mode != "exhaustive":
            raise NotImplementedError(
                "ColBERT in rerank mode scores first-stage candidates only; use search()."
            )
        q = self.encode(list(queries), query=True, desc="ColBERT queries")
        self.stats["queries_encoded"] += len(queries)
        return maxsim_scores(q, self.tokens, self.offsets, device=self.device, dtype=self.dtype)

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        if self.mode == "exhaustive":
            return super().search(queries, k)
        self._require_index()
        first = self.first_stage.search(queries, self.first_stage_k)
        q = self.encode(list(queries), query=True, desc="ColBERT queries")
        self.stats["queries_encoded"] += len(queries)
        depth = min(k, first.indices.shape[1])
        out_idx = np.full((len(queries), depth), -1, np.int64)
        out_sc = np.full((len(queries), depth), -np.inf, np.float32)
        for qi in range(len(queries)):
            cand = first.indices[qi][first.indices[qi] >= 0]
            self._encode_missing(cand)
            vecs = [self._doc_memo[int(d)] for d in cand]
            tokens, offsets = pack_token_vectors(vecs, self.linear.out_features)
            s = maxsim_scores([q[qi]], tokens, offsets, device=self.device, dtype=self.dtype)[0]
            order = np.lexsort((np.arange(len(cand)), -s))[:depth]  # MaxSim desc, first-stage rank asc
            out_idx[qi, : len(order)] = cand[order]
            out_sc[qi, : len(order)] = s[order]
        return SearchResult(out_idx, out_sc)

    def _encode_missing(self, cand: np.ndarray) -> None:
        todo = [int(d) for d in cand if int(d) not in self._doc_memo]
        if todo:
            for d, v in zip(
                todo, self.encode([self._doc_strings[d] for d in todo], query=False), strict=True
            ):
                self._doc_memo[d] = v
            self.stats["docs_encoded"] += len(todo)

    # -- metadata -----------------------------------------------------------------------------------
    def _doc_settings(self) -> dict[str, Any]:
        return {
            "doc_maxlen": self.doc_maxlen,
            "doc_marker": self.doc_marker,
            "skip_punctuation": self.skip_punctuation,
            "dtype": self._dtype_str(),
        }

    def settings(self) -> dict[str, Any]:
        rerank_possible = self.mode_requested != "exhaustive"
        return {
            **self._doc_settings(),
            "query_maxlen": self.query_maxlen,
            "query_marker": self.query_marker,
            "augment_queries": self.augment_queries,
            "mode": self.mode_requested,
            "first_stage": self.first_stage_name if rerank_possible else None,
            "first_stage_k": self.first_stage_k if rerank_possible else None,
            "max_index_gb": self.max_index_gb if self.mode_requested == "auto" else None,
            "score": "sum over query vectors of max dot (MaxSim)",
        }

    def describe(self) -> dict[str, Any]:
        info = {**super().describe(), "mode_used": self.mode}
        if self.mode_requested != "exhaustive":
            info["first_stage_info"] = self._first_stage().describe()
        return info

    def cache_settings(self) -> dict[str, Any]:
        """Rerank mode's candidates come from the first stage: its own ``cache_settings()`` (weights
        identity, library version) are part of the key, not only its name, as in
        :class:`~pqb.harness.retrievers.neural.encoding.FirstStageReranker`. A preset whose checkpoint
        was replaced proposes other candidates, so the run cache and ``--overwrite only-missing``
        must not serve the old ranks. ``auto`` may rerank, so it is keyed the same way."""
        out = super().cache_settings()
        if self.mode_requested != "exhaustive":
            out["first_stage_settings"] = self._first_stage().cache_settings()
        return out
