"""Where does the target land? Ranks from score matrices and from ranked lists, with PQB's tie rule.

Tie rule (docs/design.md §10, pinned): rank = 1 + #documents scoring *strictly higher* than the target
+ #documents scoring *exactly equal* that come earlier in corpus order (corpus sorted by id). This is
the rank ``pqb.harness.retrievers.base.topk_stable`` would give, so ranks and top-k lists agree. The
authors resolved ties optimistically (the target wins); near-duplicate product variants make that
matter (docs/design.md §11), so we also report how often a tie touches the target.

"Equal" means equal up to ``TIE_RTOL`` relative (:data:`pqb.dataset.rules.TIE_RTOL`, of the score or of
``TIE_FLOOR`` = 1e-12, whichever is larger): float32 sums are not
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

from pqb.dataset.rules import TIE_RTOL, target_ranks
from pqb.harness.retrievers.base import UNRANKED, ranks_from_lists

__all__ = ["TIE_RTOL", "UNRANKED", "ranks_from_lists", "target_ranks"]
""":func:`target_ranks` and the tolerance are defined once, in :mod:`pqb.dataset.rules`, which the
card's lexical-ceiling report reads too."""
