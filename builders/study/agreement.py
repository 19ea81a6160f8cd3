"""Agreement and summary statistics of the study: Krippendorff's alpha, Cohen's kappa, adjudication, means.

Field libraries do the agreement arithmetic: ``krippendorff`` (alpha for any number of raters with
missing ratings; ordinal for the 1-5 scales, nominal for attribution and error consistency) and
scikit-learn's ``cohen_kappa_score`` (kappa per pair of annotators on the items both rated; quadratic
weights for the 1-5 scales, unweighted for nominal labels), both in the ``pqb-benchmark[study]`` extra.

**Adjudication** (the paper: "a third annotator adjudicates disagreements"). The primary annotators
disagree on an item when their nominal labels differ, or when their 1-5 ratings span more than
:data:`ORDINAL_TOLERANCE` point. The item's final value is then

* nominal: the adjudicator's label; without one, a strict majority of the primaries, else unresolved;
* ordinal: the median of the primaries' and the adjudicator's ratings (the adjudicator decides which
  side the item falls on); without one, the primaries' mean;

and an item the primaries agree on keeps their majority label or mean rating. Unresolved items are
counted and left out of the means, never silently given a value.

Means and rates come with a percentile-bootstrap 95% CI over items (seeded).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pqb.builders.seeds import derive_seed
from pqb.builders.study.rubric import BY_NAME, Dimension

ORDINAL_TOLERANCE = 1
"""Two 1-5 ratings further apart than this are a disagreement (3 and 4 agree; 3 and 5 do not)."""
MIN_SHARED = 2
"""A pair of annotators enters the mean kappa when both rated at least this many items of a dimension."""

ItemLabels = Mapping[str, Mapping[str, str]]  # item_id -> annotator -> label


def _codes(dim: Dimension) -> dict[str, float]:
    return (
        {lab: float(i) for i, lab in enumerate(dim.labels)}
        if dim.level == "nominal"
        else {lab: float(lab) for lab in dim.labels}
    )


def krippendorff_alpha(dim: Dimension, labels: ItemLabels, annotators: Sequence[str]) -> float | None:
    """Alpha over every item rated by at least two annotators (``None`` when no such item, or no variation)."""
    import krippendorff

    items = [i for i in sorted(labels) if len(labels[i]) >= 2]
    if not items:
        return None
    codes = _codes(dim)
    data = np.full((len(annotators), len(items)), np.nan)
    for j, item in enumerate(items):
        for a, lab in labels[item].items():
            data[annotators.index(a), j] = codes[lab]
    values = data[~np.isnan(data)]
    if len(np.unique(values)) < 2:
        return None  # alpha is 0/0 when every rating is the same value
    domain = np.array(sorted(set(codes.values())))
    return float(
        krippendorff.alpha(reliability_data=data, level_of_measurement=dim.level, value_domain=domain)
    )


def cohen_kappa(dim: Dimension, a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two annotators' labels on the same items (weighted quadratically for 1-5 scales)."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) < MIN_SHARED:
        return None
    weights = "quadratic" if dim.level == "ordinal" else None
    value = cohen_kappa_score(list(a), list(b), labels=list(dim.labels), weights=weights)
    return None if np.isnan(value) else float(value)


def pairwise_kappa(dim: Dimension, labels: ItemLabels, annotators: Sequence[str]) -> dict[str, Any]:
    """Kappa of every annotator pair with enough shared items, and their mean."""
    pairs = {}
    for x, y in itertools.combinations(annotators, 2):
        shared = [i for i in sorted(labels) if x in labels[i] and y in labels[i]]
        k = cohen_kappa(dim, [labels[i][x] for i in shared], [labels[i][y] for i in shared])
        if k is not None:
            pairs[f"{x}|{y}"] = {"kappa": k, "items": len(shared)}
    return {"mean": float(np.mean([p["kappa"] for p in pairs.values()])) if pairs else None, "pairs": pairs}


def disagree(dim: Dimension, labels: Sequence[str]) -> bool:
    if len(labels) < 2:
        return False
    if dim.level == "ordinal":
        vals = [float(v) for v in labels]
        return max(vals) - min(vals) > ORDINAL_TOLERANCE
    return len(set(labels)) > 1


def final_value(dim: Dimension, primaries: Sequence[str], adjudicator: str | None) -> str | float | None:
    """The item's value after adjudication (module docstring); ``None`` when it stays unresolved."""
    if not primaries:
        return (
            adjudicator
            if (adjudicator is not None and dim.level == "nominal")
            else (float(adjudicator) if adjudicator is not None else None)
        )
    if dim.level == "ordinal":
        vals = [float(v) for v in primaries]
        if disagree(dim, primaries) and adjudicator is not None:
            return float(np.median([*vals, float(adjudicator)]))
        return float(np.mean(vals))
    if disagree(dim, primaries) and adjudicator is not None:
        return adjudicator
    (top, n), *rest = Counter(primaries).most_common()
    if rest and rest[0][1] == n:
        return None  # a tie without an adjudicator
    return top if n * 2 > len(primaries) else None


def disagreements(dim: Dimension, labels: ItemLabels) -> list[str]:
    return [i for i in sorted(labels) if disagree(dim, list(labels[i].values()))]


def bootstrap_mean(values: Sequence[float], n_boot: int, seed: int, purpose: str) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {"value": None, "lo": None, "hi": None, "n": 0}
    rng = np.random.default_rng(derive_seed(seed, "study-bootstrap", purpose))
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(1)
    return {
        "value": float(v.mean()),
        "lo": float(np.percentile(means, 2.5)),
        "hi": float(np.percentile(means, 97.5)),
        "n": len(v),
    }


def summarise(
    finals: Mapping[str, Mapping[str, Any]],
    truth: Mapping[str, str],
    *,
    n_boot: int,
    seed: int,
    purpose: str,
) -> dict[str, Any]:
    """The §06 rows from final values per dimension (``finals[dim][item] = value``)."""
    out: dict[str, Any] = {}
    for name in ("naturalness", "syntactic_quality"):
        vals = [float(v) for v in finals.get(name, {}).values() if v is not None]
        out[name] = bootstrap_mean(vals, n_boot, seed, f"{purpose}/{name}")
    att = {i: v for i, v in finals.get("attribution", {}).items() if v is not None}
    decisive = [float(v == truth.get(i)) for i, v in att.items() if v in ("A", "B")]
    out["attribution"] = bootstrap_mean(decisive, n_boot, seed, f"{purpose}/attribution")
    out["no_preference"] = bootstrap_mean(
        [float(v == "none") for v in att.values()], n_boot, seed, f"{purpose}/none"
    )
    err = [v for v in finals.get("error_consistency", {}).values() if v is not None]
    out["error_strict"] = bootstrap_mean(
        [float(v == "strict") for v in err], n_boot, seed, f"{purpose}/strict"
    )
    out["error_acceptable"] = bootstrap_mean(
        [float(v in ("strict", "acceptable")) for v in err], n_boot, seed, f"{purpose}/acceptable"
    )
    return out


def agreement_table(labels_by_dim: Mapping[str, ItemLabels], annotators: Sequence[str]) -> dict[str, Any]:
    """Alpha and mean pairwise kappa per dimension (the paper's second §06 table)."""
    out = {}
    for name, labels in labels_by_dim.items():
        dim = BY_NAME[name]
        multi = {i: v for i, v in labels.items() if len(v) >= 2}
        out[name] = {
            "alpha": krippendorff_alpha(dim, multi, annotators),
            "kappa": pairwise_kappa(dim, multi, annotators),
            "items_with_two_or_more": len(multi),
            "level": dim.level,
        }
    return out
