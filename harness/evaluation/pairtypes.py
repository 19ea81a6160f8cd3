"""PQB's two pair types as objects: how rows become pairs, which metrics a task reports, which way is better.

* **syntactic**: two users' queries for one target (rows sharing ``pair_id``). Robustness is Flip@K
  (one side in the top K, the other not) and RRstd; effectiveness is per query.
* **error**: one user's clean query against the same query carrying that user's typos. Robustness is
  Deg@K and MRRdeg (clean minus typo'd), plus Flip@K/RRstd; effectiveness is per pair and per side,
  named ``<metric>_<side>`` (``mrr_clean``, ``hit@10_error``, ...).

Every place that used to compare the strings ``"syntactic"``/``"error"`` or spell the side suffixes
asks the :class:`PairType` instead, so a third pair type is one more entry in :data:`PAIR_TYPES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pqb.harness.evaluation.pairs import PairSet, error_pairs, syntactic_pairs

MTEB_MAIN_SCORE = "ndcg_at_10"
"""MTEB's main score of a retrieval task, under MTEB's own name: nDCG@10 over every query of the task pooled
(an error task's clean and typo'd queries together, as MTEB's ``<domain>-queries`` hold them). On a
syntactic task it equals ``ndcg@10``; on an error task it is the mean of ``ndcg@10_clean`` and
``ndcg@10_error`` (every pair has one query of each)."""


@dataclass(frozen=True)
class PairType:
    name: str
    build_pairs: Callable[..., PairSet]
    """``build_pairs(rows)``; a type with ``edits`` also takes ``dose=`` (rows re-dosed to ``error_dose``)."""
    robustness_prefix: str
    """``flip`` or ``deg``: the @K robustness metric of this type's paper table."""
    robustness_last: str
    """The table's last column: ``rrstd`` or ``mrr_deg``."""
    sides: tuple[str, ...]
    """Names of the two sides when effectiveness is reported per side (error: clean, error); empty when
    every query counts once (syntactic)."""
    edits: bool
    """Rows carry ``error_edits``: breakdowns by mechanism and edit count, and a rewriter's own rates."""
    title: str
    """The paper-style table's heading."""
    what: str
    """What the pairs are, for plot titles."""

    @property
    def main_score(self) -> str:
        return f"{self.robustness_prefix}@10"

    def robustness_columns(self, ks: Sequence[int]) -> tuple[str, ...]:
        """The paper table's columns: the @K metric at each K, then RRstd or MRRdeg."""
        return (*(f"{self.robustness_prefix}@{k}" for k in ks), self.robustness_last)

    def robustness_metric_names(self, ks: Sequence[int]) -> list[str]:
        """The per-pair robustness metrics (every pair type reports Flip@K and RRstd)."""
        own = list(self.robustness_columns(ks)) if self.robustness_prefix != "flip" else []
        return [*own, *(f"flip@{k}" for k in ks), "rrstd"]

    def side_name(self, metric: str, side: str) -> str:
        """``mrr`` on side ``clean`` is ``mrr_clean``; ``hit@10`` is ``hit@10_clean``."""
        return f"{metric}_{side}"

    def effectiveness_names(self, ks: Sequence[int]) -> list[str]:
        base = [*(f"hit@{k}" for k in ks), "mrr", "ndcg@10"]  # what metrics.effectiveness returns
        if not self.sides:
            return base
        return [self.side_name(m, side) for side in self.sides for m in base]

    def metric_names(self, ks: Sequence[int]) -> list[str]:
        """Every result key a task of this type reports, in order (see docs/results.md)."""
        ceiling = [f"flip@{k}_{kind}" for k in ks for kind in ("expected", "ratio")]
        return [*self.robustness_metric_names(ks), *ceiling, *self.effectiveness_names(ks), MTEB_MAIN_SCORE]

    @property
    def effectiveness_per_query(self) -> bool:
        """Syntactic effectiveness counts each query once; error effectiveness is per pair, per side."""
        return not self.sides


def higher_is_better(metric: str) -> bool:
    """Effectiveness goes up; robustness (Flip@K, Deg@K, RRstd, MRRdeg and Flip@K's ceiling ratios) goes down."""
    return not (metric.startswith(("flip@", "deg@")) or metric in {"rrstd", "mrr_deg"})


SYNTACTIC = PairType(
    name="syntactic",
    build_pairs=syntactic_pairs,
    robustness_prefix="flip",
    robustness_last="rrstd",
    sides=(),
    edits=False,
    title="Syntactic robustness — Flip@K and mean RRstd (lower is more robust)",
    what="syntactic pairs",
)
ERROR = PairType(
    name="error",
    build_pairs=error_pairs,
    robustness_prefix="deg",
    robustness_last="mrr_deg",
    sides=("clean", "error"),
    edits=True,
    title="Writing-error robustness — Deg@K and MRRdeg (lower is more robust)",
    what="writing-error pairs",
)
PAIR_TYPES: dict[str, PairType] = {t.name: t for t in (SYNTACTIC, ERROR)}


def pair_type(name: str) -> PairType:
    return PAIR_TYPES[name]
