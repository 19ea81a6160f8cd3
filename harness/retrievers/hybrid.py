"""Score fusion of any registered full-scoring retrievers (dense + sparse hybrids).

Each component scores the whole corpus; each row is z-scored per query over the corpus
((x − mean) / std, std floored at 1e-6 — the paper's BGE-M3 hybrid recipe, docs/design.md §13), and
the fused score is ``Σ_i w_i · z_i``. Z-scoring puts unbounded sparse scores and cosines on one scale
without any tuning on the benchmark.

``--model_args`` syntax (``,`` already separates arguments, so lists use ``+``)::

    components=minilm+splade-tiny,weights=1.0+1.0
    components=dense[pretrained=/models/e5;query_prompt=query: ]+bm25[k1=0.9;b=0.4],weights=1+0.5

A component is a registered model or preset name, optionally followed by ``[k=v;k=v]`` constructor
arguments (values converted like ``--model_args``). ``weights`` defaults to 1.0 per component.
``device`` and ``batch_size`` are passed on to every component that accepts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pqb.harness.errors import ModelArgsError
from pqb.harness.retrievers.base import ArgRule, Corpus, Retriever, plus_separated_weights, positive_int_or
from pqb.harness.retrievers.neural.encoding import zscore_rows


def split_components(spec: str) -> list[tuple[str, str]]:
    """``"dense[a=1;b=2]+bm25"`` → ``[("dense", "a=1,b=2"), ("bm25", "")]`` (``+`` inside ``[]`` is kept)."""
    items, depth, current = [], 0, ""
    for ch in spec:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "+" and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        name, _, rest = item.partition("[")
        if rest and not rest.endswith("]"):
            raise ModelArgsError(f"hybrid component {item!r}: arguments must be written name[k=v;k=v]")
        out.append((name.strip(), rest[:-1].replace(";", ",") if rest else ""))
    if not out:
        raise ModelArgsError(
            "hybrid needs components=<model>+<model>[+...], e.g. components=minilm+splade-tiny"
        )
    return out


class HybridRetriever(Retriever):
    """Weighted sum of per-query z-scored component scores over the whole corpus.

    Args:
        components: ``+``-separated registered models/presets, each optionally ``name[k=v;k=v]``.
        weights: ``+``-separated floats, one per component (default all 1.0).
        normalization: ``zscore`` (default) or ``none`` (raw weighted sum).
        device, batch_size: forwarded to components.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "weights": plus_separated_weights,
        "batch_size": positive_int_or(None, "auto"),
    }

    name = "hybrid"
    full_scoring = True

    def __init__(
        self,
        components: str = "minilm+splade-tiny",
        weights: str | float | None = None,
        normalization: str = "zscore",
        device: str | None = None,
        batch_size: int | str | None = None,
    ) -> None:
        super().__init__()
        from pqb.harness.registry import create_retriever

        specs = split_components(str(components))
        if weights in (None, ""):
            self.weights_ = [1.0] * len(specs)
        else:
            self.weights_ = [float(w) for w in str(weights).split("+")]
        if len(self.weights_) != len(specs):
            raise ModelArgsError(
                f"hybrid: {len(specs)} components ({components!r}) but {len(self.weights_)} weights ({weights!r})"
            )
        if normalization not in {"zscore", "none"}:
            raise ModelArgsError(f"hybrid normalization must be 'zscore' or 'none', got {normalization!r}")
        self.normalization = normalization
        self.component_specs = specs
        self.components: list[Retriever] = [
            create_retriever(n, a, device=device, batch_size=batch_size) for n, a in specs
        ]
        for (n, _), comp in zip(specs, self.components, strict=True):
            if not comp.full_scoring:
                raise ModelArgsError(
                    f"hybrid component {n!r} does not score the full corpus; fuse full-scoring models only"
                )
        self.device = device or "auto"

    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        for comp in self.components:
            comp.index(corpus, cache_dir=cache_dir)
        self.corpus = corpus
        self._sum_stats()

    def _sum_stats(self) -> None:
        for key in self.stats:
            self.stats[key] = sum(int(c.stats.get(key, 0)) for c in self.components)

    def score(self, queries: Sequence[str]) -> np.ndarray:
        corpus = self._require_index()
        fused = np.zeros((len(queries), len(corpus)), dtype=np.float64)
        for w, comp in zip(self.weights_, self.components, strict=True):
            s = comp.score(queries)
            fused += w * (zscore_rows(s) if self.normalization == "zscore" else s)
        self._sum_stats()
        return fused.astype(np.float32)

    def _parts(self, method: str) -> list[dict[str, Any]]:
        return [
            {"spec": n, "args": a, "weight": w, **getattr(c, method)()}
            for (n, a), w, c in zip(self.component_specs, self.weights_, self.components, strict=True)
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "normalization": self.normalization,
            "components": self._parts("describe"),
            "stats": dict(self.stats),
        }

    def cache_settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "normalization": self.normalization,
            "components": self._parts("cache_settings"),
        }
