"""Harness speed against references measured in the same run (ratios, not absolute targets).

Usage::

    python bench/bench_harness.py [--dataset pqb_dataset] [--domain video_games] [--repeat 3]

1. Target ranks: :func:`pqb.harness.evaluation.ranking.target_ranks` (vectorized, tie rule included) against a plain
   Python reference that sorts each row by (-score, corpus index) and finds the target.
2. BM25 scoring: the harness's ``bm25`` retriever scoring every document for every query against
   bm25s's own ``retrieve`` of the top 200 (the reference does less work: no full ranks).
3. Metrics: per-pair Flip/RRstd/Deg + 1,000 paired-bootstrap replicates for one task.

Corpus and queries are the built benchmark's (``pqb-build`` first). Prints one JSON line per check
with both timings and the ratio (reference / ours: > 1 means the harness is faster).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def reference_ranks(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Rank by an explicit stable sort per row (the definition, written the slow obvious way)."""
    ranks = []
    for row, t in zip(scores.tolist(), targets.tolist(), strict=True):
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        ranks.append(order.index(t) + 1)
    return np.asarray(ranks, dtype=float)


def report(name: str, ours: float, ref: float, **extra: Any) -> None:
    print(json.dumps({"check": name, "ours_s": round(ours, 4), "reference_s": round(ref, 4),
                      "speedup": round(ref / ours, 2), **extra}))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=str(ROOT / "pqb_dataset"))
    p.add_argument("--domain", default="video_games")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)

    import bm25s

    from pqb.harness.evaluation.bootstrap import bootstrap_means
    from pqb.harness.evaluation.data import load_config, load_corpus
    from pqb.harness.evaluation.metrics import pair_robustness
    from pqb.harness.evaluation.pairs import syntactic_pairs
    from pqb.harness.evaluation.ranking import target_ranks
    from pqb.harness.retrievers.lexical.bm25 import BM25Retriever

    corpus = load_corpus(args.dataset, f"{args.domain}-corpus")
    rows = load_config(args.dataset, args.domain).to_list()
    pairs = syntactic_pairs(rows)
    queries = list(pairs.queries)
    index_of = {d: i for i, d in enumerate(corpus.ids)}
    targets = np.asarray([index_of.get(t, -1) for t in pairs.targets])

    retriever = BM25Retriever()
    retriever.index(corpus)
    t_score, scores = best_of(lambda: retriever.score(queries), args.repeat)
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(bm25s.tokenize(list(corpus.texts), stopwords="en", show_progress=False), show_progress=False)
    q_tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False)
    t_ref, _ = best_of(lambda: model.retrieve(q_tokens, k=200, show_progress=False), args.repeat)
    report("bm25_full_scores_vs_bm25s_top200", t_score, t_ref, n_queries=len(queries), n_docs=len(corpus))

    t_ours, ranks = best_of(lambda: target_ranks(scores, targets)[0], args.repeat)
    t_ref, ref = best_of(lambda: reference_ranks(scores, targets), 1)
    same = bool(np.array_equal(ranks, ref))
    report("target_ranks_vs_python_sort", t_ours, t_ref, identical=same, shape=list(scores.shape))

    a, b = np.asarray(pairs.pair_a), np.asarray(pairs.pair_b)

    def metrics() -> dict[str, np.ndarray]:
        per_pair = pair_robustness(ranks[a], ranks[b], (1, 5, 10, 20), 200)
        return bootstrap_means(per_pair, n_boot=1000, seed=0)

    def metrics_reference() -> list[float]:
        rng = np.random.default_rng(0)
        flips = [float((ranks[i] <= 10) != (ranks[j] <= 10)) for i, j in zip(a, b, strict=True)]
        return [
            float(np.mean([flips[k] for k in rng.integers(0, len(flips), len(flips))])) for _ in range(1000)
        ]

    t_ours, _ = best_of(metrics, args.repeat)
    t_ref, _ = best_of(metrics_reference, 1)
    report("pair_metrics_bootstrap_vs_python_loop", t_ours, t_ref, n_pairs=len(a), n_boot=1000,
           note="ours computes every metric and K; the reference only Flip@10")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
