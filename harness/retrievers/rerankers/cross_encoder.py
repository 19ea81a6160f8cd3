"""Cross-encoder reranking with sentence-transformers ``CrossEncoder`` over a first stage.

A cross-encoder reads query and document together, so it cannot score a whole corpus cheaply; like the
LLM reranker it reranks the first stage's top ``rerank_k`` (every query, never conditioned on the
target) and keeps the rest of the first-stage list after them (:class:`FirstStageReranker`).
Scores are the model's raw outputs (logits; ``activation=sigmoid`` maps them to [0, 1], which does not
change the order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from pqb.harness.errors import ModelArgsError
from pqb.harness.retrievers.base import ArgRule, positive_int, positive_int_or
from pqb.harness.retrievers.neural.encoding import FirstStageReranker, as_optional_int, load_or_explain


class CrossEncoderRetriever(FirstStageReranker):
    """sentence-transformers CrossEncoder over a first stage (default ``bm25`` top 100, rerank 25).

    Args:
        pretrained: CrossEncoder checkpoint (Hub id or folder); default
            ``cross-encoder/ms-marco-MiniLM-L6-v2``.
        max_length: tokenizer truncation of the (query, document) pair (``None`` = the model's).
        activation: ``none`` (raw logits) or ``sigmoid``.
        doc_chars: default 0 here (whole document; the model truncates by tokens).
        Plus :class:`FirstStageReranker` and :class:`NeuralRetriever` arguments.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "max_length": positive_int_or(None),
        "doc_chars": positive_int,
    }

    name = "cross-encoder"

    def __init__(
        self,
        pretrained: str = "cross-encoder/ms-marco-MiniLM-L6-v2",
        max_length: int | str | None = None,
        activation: str = "none",
        doc_chars: int | str = 0,
        trust_remote_code: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(pretrained=pretrained, doc_chars=doc_chars, **kwargs)
        if activation not in {"none", "sigmoid"}:
            raise ModelArgsError(f"activation must be 'none' or 'sigmoid', got {activation!r}")
        self.max_length = as_optional_int(max_length)
        self.activation = activation
        self.trust_remote_code = bool(trust_remote_code)
        self.model: Any = None

    def _load(self) -> None:
        if self.model is not None:
            return
        from sentence_transformers import CrossEncoder

        model = load_or_explain(
            CrossEncoder,
            self.pretrained,
            "cross-encoder",
            device=self.device,
            revision=self.revision,
            max_length=self.max_length,
            trust_remote_code=self.trust_remote_code,
        )
        model.model.to(self.dtype)
        self.model = model
        self._record_weights(model.model, architecture=type(model.model).__name__)

    def score_pairs(self, queries: Sequence[str], docs: Sequence[str]) -> np.ndarray:
        import torch

        self._load()
        bs = self._resolved_batch_size(max_length=self.max_length or 512)
        act = torch.nn.Sigmoid() if self.activation == "sigmoid" else torch.nn.Identity()
        scores = self.model.predict(
            list(zip(queries, docs, strict=True)),
            batch_size=bs,
            show_progress_bar=self.show_progress,
            activation_fn=act,
            convert_to_numpy=True,
        )
        scores = np.asarray(scores, dtype=np.float32)
        return scores.reshape(len(queries), -1)[:, 0] if scores.ndim > 1 else scores

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "max_length": self.max_length, "activation": self.activation}
