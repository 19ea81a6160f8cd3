"""How close to the ceiling a plain lexical retriever is on a built corpus: the card's saturation section.

A robustness metric (Flip@K, Deg@K) can only move where the target is sometimes in the top K and
sometimes not: when both sides of every pair find it (Hit@K near 1), a Flip@K or Deg@K of 0 says "no room
to flip", not "robust". A small corpus (the embedded slice has 1,488 documents) is such a case for BM25,
so the card states the measured Hit@K beside the paper's whole-domain scale.

The retriever is bm25s itself, with the settings of the harness's default ``bm25`` (k1=1.5, b=0.75,
``method="lucene"``, English stopwords, documents read as ``title + " " + text``). The cut-offs, the tie
rule and the saturation threshold are the harness's own: both read them from :mod:`pqb.dataset.rules`
(the builders never import the harness; this module once kept copies, and its tie floor had drifted
from the harness's). A test checks that these figures equal ``pqb-harness run --model bm25`` on
the committed dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pqb.dataset.rules import K_VALUES, SATURATION_HIT, at_ceiling, target_ranks

QUERY_BLOCK = 128
"""Queries scored at a time: their dense score rows are the report's memory (128 × 137K documents of a
paper-scale domain, 140 MB; every query at once, as before, was about 10 GB for its ~9,000 queries)."""


def bm25_ranks(
    corpus: Sequence[Mapping[str, Any]], queries: Sequence[str], targets: Sequence[str]
) -> np.ndarray:
    """The harness-default BM25 rank of each query's target document (``corpus``: rows with ``id``,
    ``title``, ``text``), :data:`QUERY_BLOCK` queries at a time (a rank depends on its own query only)."""
    import bm25s

    docs = sorted(corpus, key=lambda d: str(d["id"]))
    index = {str(d["id"]): i for i, d in enumerate(docs)}
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    texts = [f"{d.get('title') or ''} {d.get('text') or ''}" for d in docs]
    model.index(
        bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False), show_progress=False
    )
    tokens = bm25s.tokenize(list(queries), stopwords="en", return_ids=False, show_progress=False)
    wanted = np.array([index[str(t)] for t in targets], dtype=np.int64)
    ranks = np.empty(len(wanted), dtype=np.float64)
    for a in range(0, len(wanted), QUERY_BLOCK):
        scores = np.stack(
            [np.asarray(model.get_scores(q), dtype=np.float64) for q in tokens[a : a + QUERY_BLOCK]]
        )
        ranks[a : a + QUERY_BLOCK] = target_ranks(scores, wanted[a : a + QUERY_BLOCK])[0]
    return ranks


def lexical_ceiling(corpus: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Hit@K of harness-default BM25 on a domain's rows: all syntactic queries, and the clean and typo'd
    sides of the error pairs; with the K at which each pair type is saturated."""
    err = [r for r in rows if r.get("error_query") is not None]
    sides = {
        "syntactic": ([r["query"] for r in rows], [r["asin"] for r in rows]),
        "error, clean": ([r["query"] for r in err], [r["asin"] for r in err]),
        "error, typo'd": ([r["error_query"] for r in err], [r["asin"] for r in err]),
    }
    hits: dict[str, dict[str, Any]] = {}
    for name, (queries, targets) in sides.items():
        ranks = bm25_ranks(corpus, queries, targets) if queries else np.zeros(0, dtype=int)
        hits[name] = {
            "n": len(queries),
            **{f"hit@{k}": float(np.mean(ranks <= k)) if len(ranks) else None for k in K_VALUES},
        }

    def saturated(*names: str) -> list[int]:
        return [k for k in K_VALUES if at_ceiling(hits[n][f"hit@{k}"] for n in names)]

    return {
        "documents": len(corpus),
        "hits": hits,
        "saturated_at": {
            "syntactic": saturated("syntactic"),
            "error": saturated("error, clean", "error, typo'd"),
        },
    }


def render(domain: str, ceiling: Mapping[str, Any]) -> str:
    """The card's table and sentence for one domain."""
    head = "| queries | n | " + " | ".join(f"Hit@{k}" for k in K_VALUES) + " |"
    lines = [
        f"**{domain}** ({ceiling['documents']:,} documents):",
        "",
        head,
        "|---|---|" + "---|" * len(K_VALUES),
    ]
    for name, h in ceiling["hits"].items():
        cells = " | ".join("–" if h[f"hit@{k}"] is None else f"{100 * h[f'hit@{k}']:.1f}%" for k in K_VALUES)
        lines.append(f"| {name} | {h['n']} | {cells} |")
    sat = ceiling["saturated_at"]
    lines += [
        "",
        f"Saturated (both sides' Hit@K > {100 * SATURATION_HIT:.0f}%) for BM25 at K = "
        + (", ".join(map(str, sat["syntactic"])) or "none")
        + " on syntactic pairs and K = "
        + (", ".join(map(str, sat["error"])) or "none")
        + " on error pairs.",
    ]
    return "\n".join(lines)
