"""Render the leaderboard's tidy frame as the paper's tables: wide tables, markdown and CSV frames.

``pqb.harness.reporting.leaderboard`` collects results files into one tidy long frame (one row per metric, values
as fractions); this module turns that frame into what people read: per-model and per-domain views,
wide tables, percent formatting, the paper's best/worst marks, the markdown tables and the CSV-ready
frames of the robustness and effectiveness tables, and the markdown of the error breakdown. It reads
only frames, never results files, so it does not import :mod:`pqb.harness.reporting.collect`; the
names both sides need (``AVERAGE``, ``KS``) live here. Which columns a pair type has comes from its
:class:`~pqb.harness.evaluation.pairtypes.PairType`.

Frames keep fractions; paper-style tables print ×100.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pqb.dataset.rules import K_VALUES
from pqb.harness.evaluation.pairtypes import ERROR, PAIR_TYPES, SYNTACTIC
from pqb.harness.evaluation.results import SATURATION_REASON

KS: tuple[int, ...] = K_VALUES
AVERAGE = "average"
"""The pseudo-domain of the equal-weight domain averages (the paper's headline tables)."""

ROBUSTNESS_COLUMNS: dict[str, tuple[str, ...]] = {
    name: t.robustness_columns(KS) for name, t in PAIR_TYPES.items()
}
"""The paper's two tables: Flip@K + mean RRstd on syntactic pairs, Deg@K + MRRdeg on error pairs."""

EFFECTIVENESS_COLUMNS: tuple[tuple[str, str], ...] = (
    *((SYNTACTIC.name, m) for m in ("mrr", "hit@10", "ndcg@10")),
    *((ERROR.name, ERROR.side_name(m, side)) for m in ("mrr", "hit@10") for side in ERROR.sides),
)
"""Effectiveness beside robustness: the paper's point is that the two do not go together."""

LABELS: dict[str, str] = {
    **{f"flip@{k}": f"Flip@{k}" for k in KS},
    **{f"deg@{k}": f"Deg@{k}" for k in KS},
    "rrstd": "Mean RRstd",
    "mrr_deg": "MRRdeg",
    "mrr": "MRR",
    "hit@10": "Hit@10",
    "ndcg@10": "nDCG@10",
}
LABELS.update(
    {
        ERROR.side_name(m, side): f"{LABELS[m]} {side}"
        for m in ("mrr", "hit@10", "ndcg@10")
        for side in ERROR.sides
    }
)


# -- views of the tidy frame --------------------------------------------------------------------------


def view_ks(tidy: pd.DataFrame, pair_type: str, domain: str) -> tuple[int, ...]:
    """The cut-offs of one (pair type, domain) view, from the task configs the runs recorded."""
    sel = tidy[tidy["selected"] & (tidy["pair_type"] == pair_type) & (tidy["domain"] == domain)]
    if "k_values" not in sel or sel.empty:
        return KS
    ks = {int(k) for text in sel["k_values"].dropna().unique() for k in str(text).split(",") if k}
    return tuple(sorted(ks)) or KS


def robustness_columns(tidy: pd.DataFrame, pair_type: str, domain: str = AVERAGE) -> tuple[str, ...]:
    """The paper's robustness columns of one view (Flip@K + RRstd, or Deg@K + MRRdeg) at its own K."""
    return PAIR_TYPES[pair_type].robustness_columns(view_ks(tidy, pair_type, domain))


def domains_of(tidy: pd.DataFrame) -> list[str]:
    """The domains present, sorted, without the ``average`` pseudo-domain."""
    selected = tidy[tidy["selected"] & tidy["pair_type"].notna()]
    return sorted(d for d in selected["domain"].unique() if d != AVERAGE)


def average_domains(part: pd.DataFrame, pair_type: str | None = None) -> list[str]:
    """The domains whose own ``pqb_<pair_type>_<domain>`` task a model ran (of ``pair_type``, else of any): what
    its domain averages are over. A task's own view (a dose, the authors' variant, a release import) is no domain."""
    rows = part[part["domain"] != AVERAGE]
    if pair_type is not None:
        rows = rows[rows["pair_type"] == pair_type]
    own = rows["task"] == "pqb_" + rows["pair_type"].astype(str) + "_" + rows["domain"].astype(str)
    return sorted(rows.loc[own, "domain"].unique())


def model_table(tidy: pd.DataFrame, pair_type: str | None = None) -> pd.DataFrame:
    """One row per model: name, weights, stand-in, domains covered (those of ``pair_type``'s average when
    given: :func:`average_domains`), newest run date, limit."""
    sel = tidy[tidy["selected"] & tidy["pair_type"].notna()]
    rows = []
    for model, part in sel.groupby("model", sort=True):
        doms = average_domains(part, pair_type)
        limits = sorted({str(x) for x in part["limit"].dropna()})
        rows.append(
            {
                "model": model,
                "model_name": part["model_name"].iloc[0],
                "weights": part["weights"].iloc[0],
                "stand_in_for": part["stand_in_for"].iloc[0],
                "settings": part["settings"].iloc[0] if "settings" in part else "",
                "domains": ", ".join(doms),
                "n_domains": len(doms),
                "date": max(part["date"]),
                "limit": ", ".join(limits) if limits else None,
            }
        )
    return pd.DataFrame(rows)


def display_name(model: str, stand_in_for: Any) -> str:
    """``minilm-l6 (stand-in for GTE-base)``: a stand-in is never shown as the paper's model."""
    if isinstance(stand_in_for, str) and stand_in_for:
        return f"{model} (stand-in for {stand_in_for})"
    return model


# -- wide tables --------------------------------------------------------------------------------------


def wide_table(
    tidy: pd.DataFrame, pair_type: str, metrics: Sequence[str], domain: str = AVERAGE
) -> pd.DataFrame:
    """Rows = models, columns = ``metric``, ``metric_ci_low``, ``metric_ci_high`` (fractions) + ``n``.

    Models that did not run ``pair_type`` on ``domain`` are absent rather than shown as zeros.
    """
    sel = tidy[
        tidy["selected"]
        & (tidy["pair_type"] == pair_type)
        & (tidy["domain"] == domain)
        & tidy["metric"].isin(list(metrics))
    ]
    columns = [c for m in metrics for c in (m, f"{m}_ci_low", f"{m}_ci_high")]
    if sel.empty:
        return pd.DataFrame(columns=["stand_in_for", *columns, "n"]).rename_axis("model")
    out = pd.DataFrame(index=sorted(sel["model"].unique()))
    out.index.name = "model"
    out["stand_in_for"] = sel.groupby("model")["stand_in_for"].first()
    for metric in metrics:
        part = sel[sel["metric"] == metric].set_index("model")
        out[metric] = part["value"]
        out[f"{metric}_ci_low"] = part["ci_low"]
        out[f"{metric}_ci_high"] = part["ci_high"]
    out["n"] = sel.groupby("model")["n"].max()
    return out


def effectiveness_table(tidy: pd.DataFrame, domain: str = AVERAGE) -> pd.DataFrame:
    """Rows = models; columns ``<pair_type>:<metric>`` for ``EFFECTIVENESS_COLUMNS`` (fractions)."""
    parts = []
    for pair_type in PAIR_TYPES:
        metrics = [m for p, m in EFFECTIVENESS_COLUMNS if p == pair_type]
        wide = wide_table(tidy, pair_type, metrics, domain)[metrics]
        parts.append(wide.rename(columns={m: f"{pair_type}:{m}" for m in metrics}))
    out = pd.concat(parts, axis=1).sort_index()
    out.index.name = "model"
    return out


def mark_extremes(
    table: pd.DataFrame, metrics: Sequence[str], *, lower_is_better: bool,
    saturated: set[tuple[str, str]] | None = None,
) -> dict[tuple[str, str], str]:  # fmt: skip
    """``{(model, metric): "best" | "worst"}``, as the paper marks its tables.

    The paper bolds the lowest (most robust) and underlines the highest (most sensitive) value per
    column. Ties are all marked. A column with fewer than two values, or all values equal, gets no
    marks: best and worst would be the same row. A saturated cell (``saturated``: ``{(model, metric)}``)
    takes no part: its 0 says "no room to flip", so it is never the most robust (nor the most sensitive).
    """
    marks: dict[tuple[str, str], str] = {}
    for metric in metrics:
        if metric not in table:
            continue
        col = pd.to_numeric(table[metric], errors="coerce").dropna()
        col = col[[(str(model), metric) not in (saturated or ()) for model in col.index]]
        if len(col) < 2 or col.min() == col.max():
            continue
        best, worst = (col.min(), col.max()) if lower_is_better else (col.max(), col.min())
        for model, value in col.items():
            if value == best:
                marks[(str(model), metric)] = "best"
            elif value == worst:
                marks[(str(model), metric)] = "worst"
    return marks


def pct(value: Any, digits: int = 2) -> str:
    """A fraction as a percentage string (``0.4167`` → ``41.67``); missing → ``–``."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    return f"{100 * float(value):.{digits}f}"


def _cell_md(row: pd.Series, metric: str, mark: str | None, *, ci: bool) -> str:
    text = pct(row.get(metric))
    if mark == "best":
        text = f"**{text}**"
    elif mark == "worst":
        text = f"<u>{text}</u>"
    lo, hi = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
    if ci and lo is not None and hi is not None and not (pd.isna(lo) or pd.isna(hi)):
        text += f" ({pct(lo)}–{pct(hi)})"
    return text


def table_markdown(
    table: pd.DataFrame,
    metrics: Sequence[str],
    *,
    lower_is_better: bool,
    labels: Mapping[str, str] | None = None,
    ci: bool = True,
    n_column: bool = True,
    extra: Mapping[str, Mapping[str, str]] | None = None,
    significant: set[tuple[str, str]] | None = None,
    saturated: set[tuple[str, str]] | None = None,
) -> str:
    """A GitHub markdown table; best value **bold**, worst <u>underlined</u>, 95% CI in brackets;
    ``†`` after a value whose difference from the column's best is significant (``significant``:
    ``{(model, metric)}``, from ``leaderboard --compare``); ``ˢ`` after a value measured where the task
    is saturated (``saturated``: ``{(model, metric)}``)."""
    labels = {**LABELS, **(labels or {})}
    marks = mark_extremes(table, metrics, lower_is_better=lower_is_better, saturated=saturated)
    extra = extra or {}
    header = ["Model", *(f"{labels.get(m, m)} (%)" for m in metrics), *(["n"] if n_column else []), *extra]
    align = ["---", *("---:" for _ in header[1 : len(header) - len(extra)]), *("---" for _ in extra)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for model, row in table.iterrows():
        cells = [display_name(str(model), row.get("stand_in_for"))]
        cells += [
            _cell_md(row, m, marks.get((str(model), m)), ci=ci)
            + (" †" if (str(model), m) in (significant or ()) else "")
            + (" ˢ" if (str(model), m) in (saturated or ()) else "")
            for m in metrics
        ]
        if n_column:
            n = row.get("n")
            cells.append("–" if n is None or pd.isna(n) else str(int(n)))
        cells += [extra[col].get(str(model), "") for col in extra]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_csv_frame(
    table: pd.DataFrame,
    metrics: Sequence[str],
    *,
    lower_is_better: bool,
    domain: str,
    saturated: set[tuple[str, str]] | None = None,
) -> pd.DataFrame:
    """The table as CSV-ready rows: percentages (×100, unrounded), CI bounds and a ``marks`` column
    (``best:<metric>``, ``worst:<metric>``, ``saturated:<metric>``: the markdown tables' ``ˢ``)."""
    marks = mark_extremes(table, metrics, lower_is_better=lower_is_better, saturated=saturated)
    out = pd.DataFrame(index=table.index)
    out.insert(0, "domain", domain)
    out["stand_in_for"] = table.get("stand_in_for")
    for metric in metrics:
        for suffix in ("", "_ci_low", "_ci_high"):
            col = f"{metric}{suffix}"
            if col in table:
                out[col] = pd.to_numeric(table[col], errors="coerce") * 100
    if "n" in table:
        out["n"] = table["n"]
    out["marks"] = [
        ";".join([*(f"{marks[(str(model), m)]}:{m}" for m in metrics if (str(model), m) in marks),
                  *(f"saturated:{m}" for m in metrics if (str(model), m) in (saturated or ()))])
        for model in table.index
    ]  # fmt: skip
    return out.reset_index()


# -- error breakdown ----------------------------------------------------------------------------------


def _stratum_key(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


MIN_BREAKDOWN_PAIRS = 10
"""A breakdown cell over fewer pairs carries its n beside every value (markdown and page) and is never
emphasised: breakdowns have no CI, and Deg@1 = 50.00 over 2 pairs is one pair in two."""


def breakdown_markdown(frame: pd.DataFrame) -> str:
    """One table per (domain, breakdown): rows = (model, stratum), columns = the breakdown's metrics; a
    stratum of fewer than :data:`MIN_BREAKDOWN_PAIRS` pairs shows ``(n = ...)`` beside each value."""
    if frame.empty:
        return "_No error breakdowns in the selected runs._\n"
    parts = []
    domains = ["all", *sorted(d for d in frame["domain"].unique() if d != "all")]
    for domain in domains:
        for by in sorted(frame["by"].unique()):
            part = frame[(frame["domain"] == domain) & (frame["by"] == by)]
            if part.empty:
                continue
            metrics = sorted(
                part["metric"].unique(), key=lambda m: (m.startswith("mrr"), _stratum_key(m.split("@")[-1]))
            )
            title = "all domains, pooled by pair count" if domain == "all" else domain
            what = {
                "mechanism": "error mechanism", "n_edits": "number of edits", "location": "edit location",
                "position": "position in the word", "profile": "profile (personal vs backoff)",
            }.get(by, by)  # fmt: skip
            lines = [
                f"#### By {what} — {title}",
                "",
                "| Model | "
                + what.capitalize()
                + " | "
                + " | ".join(f"{LABELS.get(m, m)} (%)" for m in metrics)
                + " | n |",
                "|---|---|" + "---:|" * (len(metrics) + 1),
            ]
            for (model, stratum), cell in sorted(
                part.groupby(["model", "stratum"]), key=lambda kv: (kv[0][0], _stratum_key(kv[0][1]))
            ):
                vals = dict(zip(cell["metric"], cell["value"], strict=True))
                shown = display_name(model, cell["stand_in_for"].iloc[0])
                n = int(cell["n"].iloc[0])
                few = f" (n = {n})" if n < MIN_BREAKDOWN_PAIRS else ""
                lines.append(
                    f"| {shown} | {stratum} | "
                    + " | ".join(pct(vals.get(m)) + (few if vals.get(m) is not None else "") for m in metrics)
                    + f" | {n} |"
                )
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


# -- paper-style tables -------------------------------------------------------------------------------


SATURATED_PREFIX = "saturated@"
"""The tidy frame's ``saturated@K`` rows (``pqb.harness.reporting.collect``): 1.0 where the task or group
is saturated at K (``results.saturated_at``); a recomputed domain average is 1.0 only when every
domain is."""


def saturated_cells(tidy: pd.DataFrame, pair_type: str, domain: str) -> set[tuple[str, str]]:
    """``{(model, metric)}`` of the robustness cells at a K where that model's task is saturated."""
    if tidy.empty:
        return set()
    sel = tidy[tidy["selected"] & (tidy["pair_type"] == pair_type) & (tidy["domain"] == domain)
               & tidy["metric"].str.startswith(SATURATED_PREFIX) & (tidy["value"] >= 1)]  # fmt: skip
    prefix = PAIR_TYPES[pair_type].robustness_prefix
    return {(str(m), f"{prefix}@{k[len(SATURATED_PREFIX):]}") for m, k in zip(sel["model"], sel["metric"], strict=True)}


def robustness_markdown(
    tidy: pd.DataFrame, pair_type: str, significant: set[tuple[str, str, str, str]] | None = None
) -> str:
    """The paper-style table for one pair type: the domain average first, then each domain view.

    ``significant``: ``{(pair_type, domain, model, metric)}`` to mark ``†`` (``leaderboard --compare``).
    """
    title = PAIR_TYPES[pair_type].title
    models = model_table(tidy, pair_type).set_index("model") if not tidy.empty else pd.DataFrame()
    parts = [f"## {title}", "", _LEGEND, ""]
    for domain in [AVERAGE, *domains_of(tidy)]:
        metrics = robustness_columns(tidy, pair_type, domain)
        table = wide_table(tidy, pair_type, metrics, domain)
        if table.empty:
            continue
        heading = (
            "Equal-weight average over the domains each model ran"
            if domain == AVERAGE
            else f"Domain: {domain}"
        )
        extra = None
        if domain == AVERAGE and not models.empty:
            extra = {"Domains": {m: str(models.loc[m, "domains"]) for m in table.index if m in models.index}}
        marks = {(m, k) for p, d, m, k in (significant or ()) if p == pair_type and d == domain}
        md = table_markdown(table, metrics, lower_is_better=True, extra=extra, significant=marks,
                            saturated=saturated_cells(tidy, pair_type, domain))  # fmt: skip
        parts += [f"### {heading}", "", md, ""]
    return "\n".join(parts)


_LEGEND = (
    "Values in %, 95% clustered-bootstrap CI in brackets where the run reported one (unit in the results file). "
    "† = differs significantly from the column's best (p < 0.05 and a CI excluding 0, never at a saturated K; "
    "`leaderboard --compare`). "
    "**Bold** = lowest (most robust), <u>underlined</u> = highest (most sensitive) per column, as in the paper, "
    "among the values that are not saturated. "
    f"ˢ = saturated: {SATURATION_REASON}, so the value cannot show robustness at that K (at the ceiling: a "
    "small corpus, which the paper's whole-domain corpora are not; at the floor: a run that retrieves nothing)."
)


def effectiveness_markdown(tidy: pd.DataFrame) -> str:
    """Effectiveness beside robustness (higher is better: best bold, worst underlined)."""
    labels = {
        f"{p}:{m}": f"{'Syn' if p == 'syntactic' else 'Err'} {LABELS[m]}" for p, m in EFFECTIVENESS_COLUMNS
    }
    metrics = [f"{p}:{m}" for p, m in EFFECTIVENESS_COLUMNS]
    parts = [
        "## Effectiveness (higher is better)",
        "",
        "Values in %. Syn = both queries of the syntactic pairs; Err clean/error = the two sides of the "
        "error pairs. **Bold** = highest, <u>underlined</u> = lowest per column.",
        "",
    ]
    for domain in [AVERAGE, *domains_of(tidy)]:
        table = effectiveness_table(tidy, domain)
        if table.dropna(how="all").empty:
            continue
        models = model_table(tidy).set_index("model")
        table.insert(
            0,
            "stand_in_for",
            [models.loc[m, "stand_in_for"] if m in models.index else None for m in table.index],
        )
        heading = "Equal-weight average over domains" if domain == AVERAGE else f"Domain: {domain}"
        parts += [
            f"### {heading}",
            "",
            table_markdown(table, metrics, lower_is_better=False, labels=labels, ci=False, n_column=False),
            "",
        ]
    return "\n".join(parts)


def all_table_frames(tidy: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """CSV-ready frames: ``syntactic_robustness``, ``error_robustness``, ``effectiveness`` (all domains)."""
    frames: dict[str, pd.DataFrame] = {}
    domains = [AVERAGE, *domains_of(tidy)]
    for pair_type in PAIR_TYPES:
        parts = []
        for d in domains:
            metrics = robustness_columns(tidy, pair_type, d)
            parts.append(
                table_csv_frame(
                    wide_table(tidy, pair_type, metrics, d),
                    metrics,
                    lower_is_better=True,
                    domain=d,
                    saturated=saturated_cells(tidy, pair_type, d),
                )
            )
        frames[f"{pair_type}_robustness"] = pd.concat(parts, ignore_index=True)
    metrics = [f"{p}:{m}" for p, m in EFFECTIVENESS_COLUMNS]
    parts = [
        table_csv_frame(effectiveness_table(tidy, d), metrics, lower_is_better=False, domain=d)
        for d in domains
    ]
    frames["effectiveness"] = pd.concat(parts, ignore_index=True)
    return frames
