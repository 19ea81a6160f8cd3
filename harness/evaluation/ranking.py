"""Where does the target land? Ranks from score matrices and from ranked lists, with PQB's tie rule.

Tie rule (docs/design.md §10, pinned): rank = 1 + #documents scoring *strictly higher* than the target
+ #documents scoring *exactly equal* that come earlier in corpus order (corpus sorted by id). This is
the rank ``pqb.harness.retrievers.base.topk_stable`` would give, so ranks and top-k lists agree. The
authors resolved ties optimistically (the target wins); near-duplicate product variants make that
matter (docs/design.md §11), so we also report how often a tie touches the target.

"Equal" means equal up to ``TIE_RTOL`` relative (:data:`TIE_RTOL`): float32 sums are not
associative, so the same document scored twice (or an exact duplicate) can differ in the last bit
(bm25s gave 1.7985868 vs 1.7985870 for two identical documents), and an exact-equality rule would let
summation order, not the corpus order, decide ranks.

Unranked targets (absent from the corpus, absent from a reranker's list, NaN score) get rank
``inf``: no hit, RR 0, nDCG 0.

Ranking contract: every PQB metric reads ranks up to ``rr_cutoff`` (200) exactly and "beyond it"
otherwise, so a retriever reports exact ranks (tie rule above) inside the cutoff and a miss (``inf``,
tie flag off) outside it (:func:`pqb.harness.retrievers.base.apply_cutoff`). No retriever needs
full-corpus ranks, and the fast BM25 path (:mod:`pqb.harness.retrievers.lexical.scoring`) never sorts the corpus. ``rr_cutoff: null``
asks for full ranks (cutoff = corpus size).
"""

from __future__ import annotations

import numpy as np

from pqb.harness.retrievers.base import TIE_RTOL, UNRANKED, ranks_from_lists

__all__ = ["UNRANKED", "ranks_from_lists", "target_ranks"]


def target_ranks(scores: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each row's target in a full score matrix.

    Args:
        scores: (n_queries, n_docs) scores in corpus order; higher is better.
        targets: (n_queries,) corpus index of each query's target; ``-1`` = target not in the corpus.

    Returns:
        ``ranks`` (float64, ``inf`` when unranked) and ``ties`` (bool: another document has the
        target's score within ``TIE_RTOL``, i.e. the tie rule decided something about this target).
    """
    scores = np.atleast_2d(np.asarray(scores))
    targets = np.asarray(targets, dtype=np.int64).reshape(-1)
    if scores.shape[0] != targets.shape[0]:
        raise ValueError(f"{scores.shape[0]} score rows but {targets.shape[0]} targets")
    n_q, n_d = scores.shape
    ranks = np.full(n_q, UNRANKED)
    ties = np.zeros(n_q, dtype=bool)
    valid = (targets >= 0) & (targets < n_d)
    if not valid.any():
        return ranks, ties
    rows = np.flatnonzero(valid)
    sub = scores[rows]
    t_score = sub[np.arange(len(rows)), targets[rows]][:, None].astype(np.float64)
    tol = TIE_RTOL * np.maximum(np.abs(t_score), 1e-12)
    higher = (sub > t_score + tol).sum(axis=1)
    equal = np.abs(sub - t_score) <= tol
    earlier = np.arange(n_d)[None, :] < targets[rows][:, None]
    tied_earlier = (equal & earlier).sum(axis=1)
    ok = ~np.isnan(t_score[:, 0])
    ranks[rows[ok]] = 1 + higher[ok] + tied_earlier[ok]
    ties[rows] = ok & (equal.sum(axis=1) > 1)
    return ranks, ties
