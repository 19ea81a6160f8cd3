"""PQB paired-robustness metrics as a Hugging Face ``evaluate`` module.

Load it offline from a path (``evaluate.load`` accepts a local ``.py`` script)::

    import evaluate
    from pqb.harness.integrations.evaluate_metric import PQB_ROBUSTNESS_PATH
    m = evaluate.load(PQB_ROBUSTNESS_PATH)
    m.compute(predictions=ranks_a, references=ranks_b, pair_type="syntactic")

``predictions`` are the target ranks of side a of each pair (the clean query for error pairs),
``references`` those of side b (the partner user's query, or the error query). Ranks are 1-based;
``inf`` means unranked. It wraps :mod:`pqb.harness.evaluation.metrics` — the same functions the harness uses — so
both give identical numbers (a test checks it).
"""

import datasets
import evaluate
import numpy as np

from pqb.harness.evaluation import metrics as M
from pqb.harness.evaluation.pairtypes import PAIR_TYPES

_CITATION = """@misc{liang2026pqb, title={PersonalQuery-Benchmark: Evaluating Retrieval Robustness to
Personalized User Expression Differences}, author={Liang et al.}, year={2026}}"""
_DESCRIPTION = (
    "Flip@K and RRstd (syntactic or error pairs) and Deg@K / MRRdeg (error pairs) from target ranks."
)
_KWARGS_DESCRIPTION = """
Args:
    predictions: target rank of side a per pair (float; inf = unranked).
    references: target rank of side b per pair.
    pair_type: "syntactic" or "error".
    k_values: cut-offs (default [1, 5, 10, 20]).
    rr_cutoff: RR is 1/rank within this many results, else 0 (default 200).
Returns:
    dict of means: flip@K, rrstd; for error pairs also deg@K, mrr_deg and per-side hit@K/mrr/ndcg@10;
    NaN for an empty pair set.
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
        a = np.asarray(predictions, dtype=np.float64)
        b = np.asarray(references, dtype=np.float64)
        if pair_type not in PAIR_TYPES:
            raise ValueError(
                f"pair_type must be one of {', '.join(map(repr, PAIR_TYPES))}, got {pair_type!r}"
            )
        kind = PAIR_TYPES[pair_type]
        per_pair = M.pair_robustness(a, b, k_values, rr_cutoff)
        out = {}
        if kind.sides:  # degradation: side a (clean) against side b (typo'd)
            out.update(
                {k: M.mean_or_nan(v) for k, v in M.error_degradation(a, b, k_values, rr_cutoff).items()}
            )
        for side, r in zip(kind.sides, (a, b), strict=False):
            for k, v in M.effectiveness(r, k_values, rr_cutoff).items():
                out[kind.side_name(k, side)] = M.mean_or_nan(v)
        out.update({k: M.mean_or_nan(v) for k, v in per_pair.items()})
        out["n_pairs"] = int(a.size)
        return out
