"""Pointwise LLM reranking: P(yes) from a causal LM's next-token logits (Qwen3-Reranker, Llama-3.1).

For each (query, document) pair the model reads a judge prompt and we read the logits of the *next*
token: ``score = P(yes) / (P(yes) + P(no))`` where P(yes) sums the probabilities of the single-token
"yes" variants and P(no) those of "no" (computed as ``sigmoid(logsumexp(yes) − logsumexp(no))``). No
text is generated, so one batched forward pass scores a batch of pairs.

Prompt formats (``prompt_format``):

* ``qwen3-reranker`` — the official Qwen3-Reranker judge format from its model card: system "Judge
  whether the Document meets the requirements based on the Query and the Instruct provided. Note that
  the answer can only be "yes" or "no".", user ``<Instruct>: {instruction}\\n<Query>: {query}\\n
  <Document>: {doc}``, assistant prefilled with ``<think>\\n\\n</think>\\n\\n``; tokens "yes"/"no".
  (The authors used a generic Qwen system message instead, docs/design.md §13.)
* ``chat`` — the tokenizer's own chat template with a relevance-judge system prompt (Llama-3.1-Instruct).
* ``plain`` — no template, for base models.

The first stage, depths and document truncation come from :class:`FirstStageReranker`. Every query is
reranked: nothing here looks at the gold target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from pqb.harness.errors import ModelArgsError
from pqb.harness.retrievers.base import ArgRule, positive_int
from pqb.harness.retrievers.neural.encoding import (
    FirstStageReranker,
    length_sorted_batches,
    load_or_explain,
    parse_list,
    progress,
)

QWEN3_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".'
)
QWEN3_PREFIX = "<|im_start|>system\n" + QWEN3_SYSTEM + "<|im_end|>\n<|im_start|>user\n"
QWEN3_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

JUDGE_SYSTEM = (
    "You are an expert product-search relevance judge. Given a shopper's query and a product "
    'document, answer only "yes" if the product satisfies the query, otherwise "no".'
)
JUDGE_USER = (
    "<Query>: {query}\n<Document>: {doc}\nIs this document relevant to the query? Answer yes or no only."
)
PLAIN_TEMPLATE = "Query: {query}\nDocument: {doc}\nIs the document relevant to the query (yes or no)? Answer:"

YES_VARIANTS = ("yes", " yes", "Yes", " Yes")
NO_VARIANTS = ("no", " no", "No", " No")


class LLMRerankRetriever(FirstStageReranker):
    """Causal-LM yes/no judge over a first stage's top candidates.

    Args:
        pretrained: causal LM (Hub id, folder, or ``wheel:...``); default ``Qwen/Qwen3-Reranker-8B``.
        gguf_file: load a GGUF file inside ``pretrained`` (transformers dequantises it; needs ``gguf``).
        prompt_format: ``qwen3-reranker`` | ``chat`` | ``plain`` (see module docstring).
        instruction: the ``<Instruct>`` text of the Qwen3 format.
        system_prompt: system message for ``chat`` (default: a relevance-judge prompt).
        yes_tokens / no_tokens: ``+``-separated answer variants; only single-token ones are used
            (default: ``yes``/``no`` for qwen3-reranker as in its card; yes/ yes/Yes/ Yes otherwise).
        max_length: token limit of a whole prompt (longer prompts lose the start of the document text).
        Plus :class:`FirstStageReranker` and :class:`NeuralRetriever` arguments.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "max_length": positive_int,
    }

    name = "llm-rerank"

    def __init__(
        self,
        pretrained: str = "Qwen/Qwen3-Reranker-8B",
        gguf_file: str | None = None,
        prompt_format: str = "qwen3-reranker",
        instruction: str = DEFAULT_INSTRUCTION,
        system_prompt: str = JUDGE_SYSTEM,
        yes_tokens: str | None = None,
        no_tokens: str | None = None,
        max_length: int | str = 1024,
        **kwargs: Any,
    ) -> None:
        super().__init__(pretrained=pretrained, **kwargs)
        if prompt_format not in {"qwen3-reranker", "chat", "plain"}:
            raise ModelArgsError(
                f"prompt_format must be qwen3-reranker, chat or plain, got {prompt_format!r}"
            )
        self.gguf_file = gguf_file or None
        self.prompt_format = prompt_format
        self.instruction = instruction
        self.system_prompt = system_prompt
        official = prompt_format == "qwen3-reranker"
        self.yes_variants = parse_list(yes_tokens) or (["yes"] if official else list(YES_VARIANTS))
        self.no_variants = parse_list(no_tokens) or (["no"] if official else list(NO_VARIANTS))
        self.max_length = int(max_length)
        self.model: Any = None
        self.tokenizer: Any = None
        self.yes_ids: list[int] = []
        self.no_ids: list[int] = []

    # -- loading ------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.model is not None:
            return
        from transformers import AutoModelForCausalLM, AutoTokenizer

        extra: dict[str, Any] = {"revision": self.revision}
        if self.gguf_file:
            extra["gguf_file"] = self.gguf_file
        tok = load_or_explain(AutoTokenizer.from_pretrained, self.pretrained, "tokenizer", **extra)
        tok.padding_side = "left"  # the next-token logits are read at the last position
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        model_kwargs: dict[str, Any] = {**extra, "dtype": self.dtype}
        multi = self.device.startswith("cuda") and self.multi_gpu is True
        if multi:
            model_kwargs["device_map"] = "auto"  # accelerate shards layers over all visible GPUs
        model = load_or_explain(
            AutoModelForCausalLM.from_pretrained, self.pretrained, "causal LM", **model_kwargs
        )
        if not multi:
            model = model.to(self.device)
        self.model, self.tokenizer = model.eval(), tok
        self.yes_ids = self._single_token_ids(self.yes_variants)
        self.no_ids = self._single_token_ids(self.no_variants)
        if not self.yes_ids or not self.no_ids:
            raise ModelArgsError(
                f"{self.pretrained}: none of the yes variants {self.yes_variants} or no variants "
                f"{self.no_variants} is a single token; set yes_tokens=/no_tokens=."
            )
        self._record_weights(model, gguf_file=self.gguf_file, architecture=type(model).__name__)

    def _single_token_ids(self, variants: Sequence[str]) -> list[int]:
        ids: list[int] = []
        for v in variants:
            enc = self.tokenizer.encode(v, add_special_tokens=False)
            if len(enc) == 1 and enc[0] not in ids:
                ids.append(int(enc[0]))
        return ids

    # -- prompts ------------------------------------------------------------------------------------
    def build_prompt(self, query: str, doc: str) -> str:
        """The exact prompt string for one pair (the next token after it is the answer)."""
        if self.prompt_format == "qwen3-reranker":
            body = f"<Instruct>: {self.instruction}\n<Query>: {query}\n<Document>: {doc}"
            return QWEN3_PREFIX + body + QWEN3_SUFFIX
        if self.prompt_format == "plain":
            return PLAIN_TEMPLATE.format(query=query, doc=doc)
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": JUDGE_USER.format(query=query, doc=doc)},
        ]
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _fit_doc(self, query: str, doc: str) -> str:
        """Cut the document's tokens so the whole prompt fits ``max_length`` (the answer slot must survive)."""
        n_doc = len(self.tokenizer.encode(doc, add_special_tokens=False))
        overhead = len(self.tokenizer.encode(self.build_prompt(query, ""), add_special_tokens=False)) + 2
        budget = self.max_length - overhead
        if n_doc <= budget:
            return doc
        ids = self.tokenizer.encode(doc, add_special_tokens=False)[: max(0, budget)]
        return self.tokenizer.decode(ids)

    # -- scoring ------------------------------------------------------------------------------------
    def score_pairs(self, queries: Sequence[str], docs: Sequence[str]) -> np.ndarray:
        import torch

        self._load()
        prompts = [self.build_prompt(q, self._fit_doc(q, d)) for q, d in zip(queries, docs, strict=True)]
        out = np.empty(len(prompts), np.float32)
        bs = self._resolved_batch_size(max_length=self.max_length, hidden_size=4096)
        bs = min(bs, 16) if self.batch_size in (None, "", "auto") else bs
        yes = torch.tensor(self.yes_ids)
        no = torch.tensor(self.no_ids)
        batches = length_sorted_batches(prompts, bs)
        with torch.inference_mode():
            for idx in progress(batches, desc=f"LLM rerank ({self.device})", disable=not self.show_progress):
                enc = self.tokenizer(
                    [prompts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    add_special_tokens=self.prompt_format == "plain",
                    return_tensors="pt",
                ).to(self.model.device)
                logits = self.model(**enc).logits[:, -1, :].float().cpu()
                logp = torch.log_softmax(logits, dim=-1)
                diff = torch.logsumexp(logp[:, yes], dim=-1) - torch.logsumexp(logp[:, no], dim=-1)
                out[idx] = torch.sigmoid(diff).numpy()
        return out

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "prompt_format": self.prompt_format,
            "instruction": self.instruction if self.prompt_format == "qwen3-reranker" else None,
            "system_prompt": self.system_prompt if self.prompt_format == "chat" else None,
            "yes_variants": self.yes_variants,
            "no_variants": self.no_variants,
            "max_length": self.max_length,
            "gguf_file": self.gguf_file,
            "score": "P(yes)/(P(yes)+P(no)) from next-token logits",
        }
