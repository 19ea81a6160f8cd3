"""PQB paired-robustness metrics as a Hugging Face ``evaluate`` module.

Load it offline from a path (``evaluate.load`` accepts a local ``.py`` script)::

    import evaluate
    from pqb.harness.integrations.evaluate_metric import PQB_ROBUSTNESS_PATH
    m = evaluate.load(PQB_ROBUSTNESS_PATH)
    m.compute(predictions=ranks_a, references=ranks_b, pair_type="syntactic")

``predictions`` are the target ranks of side a of each pair (the clean query for error pairs),
``references`` those of side b (the partner user's query, or the error query). Ranks are 1-based
integers; ``inf``, NaN or ``None`` means unranked (missing); anything else (0, -1, 2.5) is a
``ValueError``, since a rank below 1 would turn RR and nDCG into inf and count as a hit. It wraps
:mod:`pqb.harness.evaluation.metrics` and :func:`pqb.harness.evaluation.design.derive` — the functions the
harness uses — and returns the harness's keys for the pair type (a test checks both). Syntactic
effectiveness (hit@K, mrr, ndcg@10) is over every query of both sides, as the harness counts it when
each query is in one pair.
"""

import datasets
import evaluate
import numpy as np

from pqb.harness.evaluation import metrics as M
from pqb.harness.evaluation.design import POOL_PREFIX, derive
from pqb.harness.evaluation.pairtypes import PAIR_TYPES

_CITATION = """@misc{liang2026pqb, title={PersonalQuery-Benchmark: Evaluating Retrieval Robustness to
Personalized User Expression Differences}, author={Liang et al.}, year={2026}}"""
_DESCRIPTION = (
    "Flip@K and RRstd (syntactic or error pairs) and Deg@K / MRRdeg (error pairs) from target ranks."
)
_KWARGS_DESCRIPTION = """
Args:
    predictions: target rank of side a per pair (an integer >= 1; inf, NaN or None = unranked).
    references: target rank of side b per pair (same rule).
    pair_type: "syntactic" or "error".
    k_values: cut-offs (default [1, 5, 10, 20]).
    rr_cutoff: RR is 1/rank within this many results, else 0 (default 200).
Returns:
    dict of means, the harness's keys: flip@K, rrstd, flip@K_expected (2p(1-p), p the pooled Hit@K of
    both sides), flip@K_ratio; hit@K, mrr, ndcg@10 (syntactic: over both sides' queries; error: per
    side, e.g. hit@10_clean); for error pairs also deg@K and mrr_deg; NaN for an empty pair set.
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PqbRobustness(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}
            ),
        )

    def _compute(
        self,
        predictions,
        references,
        pair_type="syntactic",
        k_values=M.DEFAULT_K_VALUES,
        rr_cutoff=M.DEFAULT_RR_CUTOFF,
    ):
        a = _ranks(predictions, "predictions")
        b = _ranks(references, "references")
        if a.shape != b.shape:
            raise ValueError(f"predictions and references must pair up, got {a.size} and {b.size} ranks")
        if pair_type not in PAIR_TYPES:
            raise ValueError(
                f"pair_type must be one of {', '.join(map(repr, PAIR_TYPES))}, got {pair_type!r}"
            )
        kind = PAIR_TYPES[pair_type]
        ks = tuple(int(k) for k in k_values)
        per_pair = M.pair_robustness(a, b, ks, rr_cutoff)
        means = {k: M.mean_or_nan(v) for k, v in per_pair.items()}
        means.update({f"{POOL_PREFIX}{k}": M.mean_or_nan((M.hit_at_k(a, k) + M.hit_at_k(b, k)) / 2) for k in ks})
        if kind.sides:  # degradation: side a (clean) against side b (typo'd)
            means.update({k: M.mean_or_nan(v) for k, v in M.error_degradation(a, b, ks, rr_cutoff).items()})
            for side, r in zip(kind.sides, (a, b), strict=True):
                for k, v in M.effectiveness(r, ks, rr_cutoff).items():
                    means[kind.side_name(k, side)] = M.mean_or_nan(v)
        else:
            means.update(
                {k: M.mean_or_nan(v) for k, v in M.effectiveness(np.concatenate([a, b]), ks, rr_cutoff).items()}
            )
        out = dict(derive(means, ks))  # the ceiling-aware Flip and MTEB's pooled ndcg_at_10, as run derives them
        out["n_pairs"] = int(a.size)
        return out


def _ranks(values, name):
    """``values`` as float ranks with missing (None, NaN) read as unranked (inf); a finite rank that is
    not an integer >= 1 is a ValueError naming its position."""
    x = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64).reshape(-1)
    x[np.isnan(x)] = np.inf
    bad = np.flatnonzero(np.isneginf(x) | (np.isfinite(x) & ((x < 1) | (x != np.floor(x)))))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{name}[{i}] = {x[i]!r}: a rank must be an integer >= 1, or inf/None for an unranked target "
            f"({bad.size} such value(s))"
        )
    return x
