"""The static leaderboard page: one self-contained ``index.html`` with no network resources.

Everything the page needs is inside the file — CSS and JavaScript inline, plots as ``data:`` URIs —
so it opens from a laptop, an air-gapped cluster or a Hub dataset viewer alike, and a test can
assert that no ``http(s)://`` resource is referenced. Tables are rendered here in Python (the page
works without JavaScript); the script only sorts columns and switches the domain view.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pqb.dataset.io import atomic_write_text
from pqb.harness.evaluation.pairtypes import PAIR_TYPES
from pqb.harness.evaluation.results import SATURATION_REASON
from pqb.harness.reporting.tables import (
    AVERAGE,
    EFFECTIVENESS_COLUMNS,
    LABELS,
    MIN_BREAKDOWN_PAIRS,
    domains_of,
    effectiveness_table,
    mark_extremes,
    model_table,
    pct,
    robustness_columns,
    saturated_cells,
    wide_table,
)

if TYPE_CHECKING:
    from pqb.harness.reporting.plots import PlotFile

_CSS = """
:root { --fg:#1b1f24; --muted:#57606a; --line:#d0d7de; --bg:#ffffff; --head:#f6f8fa; --accent:#0969da; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1400px; padding: 1rem 1.5rem 3rem; line-height: 1.4; }
h1 { font-size: 1.6rem; margin: .2rem 0 .3rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin-top: 1.3rem; }
p.note, .legend { color: var(--muted); font-size: .85rem; }
.controls { position: sticky; top: 0; background: var(--bg); padding: .5rem 0; border-bottom: 1px solid var(--line); z-index: 2; }
select { font-size: 1rem; padding: .2rem .4rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .86rem; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; text-align: right; white-space: nowrap; }
th { background: var(--head); white-space: normal; vertical-align: bottom; min-width: 4.5rem; }
td:first-child, th:first-child { text-align: left; }
td.text-left { white-space: normal; min-width: 6rem; }
td.few .v { color: var(--muted); font-style: italic; font-weight: 400; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " \\2195"; color: #8c959f; font-size: .75em; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; color: var(--accent); }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; color: var(--accent); }
td.best .v { font-weight: 700; } td.worst .v { text-decoration: underline; }
.scroll { overflow-x: auto; max-width: 100%; }
th.text-left { text-align: left; }
.ci { display: block; color: var(--muted); font-size: .72rem; }
.badge { display: table; font-size: .7rem; padding: 0 .4rem; border-radius: .6rem; margin: .1rem 0 0; white-space: normal;
         background: #fff8c5; border: 1px solid #d4a72c; color: #7d4e00; }
.text-left { text-align: left; }
figure { margin: 1rem 0; } figure img { width: 760px; max-width: 100%; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: .85rem; }
footer { margin-top: 2.5rem; color: var(--muted); font-size: .8rem; }
"""

_JS = """
(function () {
  "use strict";
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) { return ""; }
    var raw = cell.getAttribute("data-value");
    return raw === null ? cell.textContent.trim() : raw;
  }
  function compare(a, b) {
    var missingA = a === "", missingB = b === "";
    if (missingA || missingB) { return missingA === missingB ? 0 : (missingA ? 1 : -1); }
    var x = Number(a), y = Number(b);
    if (isFinite(x) && isFinite(y)) { return x - y; }
    return a.localeCompare(b, undefined, {numeric: true, sensitivity: "base"});
  }
  function sortTable(table, index, th) {
    var body = table.tBodies[0];
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = cellValue(r1, index), b = cellValue(r2, index);
      if (a === "" || b === "") { return compare(a, b); }  /* missing values always last */
      var c = compare(a, b);
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.addEventListener("click", function () { sortTable(table, index, th); });
      th.setAttribute("title", "Click to sort");
    });
  });
  var select = document.getElementById("domain-select");
  function showDomain(domain) {
    document.querySelectorAll("section.domain-view").forEach(function (s) {
      s.hidden = s.getAttribute("data-domain") !== domain;
    });
  }
  select.addEventListener("change", function () { showDomain(select.value); });
  showDomain(select.value);
})();
"""


def _missing(value: Any) -> bool:
    """``None``, NaN and pandas' NA (how a missing cell comes out of a DataFrame)."""
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def _esc(value: Any, default: str = "") -> str:
    return html.escape(default if _missing(value) else str(value), quote=True)


def _num_attr(value: Any) -> str:
    if _missing(value):
        return ""
    return repr(float(value))


def _model_cell(model: str, stand_in_for: Any, weights: Any = None) -> str:
    badge = ""
    if isinstance(stand_in_for, str) and stand_in_for:
        title = "stand-in weights" if _missing(weights) else f"weights: {weights}"
        badge = f'<span class="badge" title="{_esc(title)}">stand-in for {_esc(stand_in_for)}</span>'
    return f'<td data-value="{_esc(model)}">{_esc(model)}{badge}</td>'


def _metric_table(
    table: pd.DataFrame,
    metrics: Sequence[str],
    *,
    lower_is_better: bool,
    table_id: str,
    labels: Mapping[str, str],
    weights: Mapping[str, Any],
    ci: bool = True,
    significant: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
    saturated: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> str:
    """``significant``: ``{(model, metric)}`` whose difference from the column's best is significant (†);
    ``saturated``: ``{(model, metric)}`` measured where the task is saturated (ˢ, as the markdown tables)."""
    marks = mark_extremes(table, metrics, lower_is_better=lower_is_better, saturated=saturated)
    head = "".join(f"<th>{_esc(labels.get(m, m))} (%)</th>" for m in metrics)
    n_head = "<th>n</th>" if "n" in table else ""
    rows = []
    for model, row in table.iterrows():
        cells = [_model_cell(str(model), row.get("stand_in_for"), weights.get(str(model)))]
        for m in metrics:
            mark = marks.get((str(model), m))
            cls = f' class="{mark}"' if mark else ""
            ci_text = ""
            lo, hi = row.get(f"{m}_ci_low"), row.get(f"{m}_ci_high")
            if ci and lo is not None and hi is not None and not (pd.isna(lo) or pd.isna(hi)):
                ci_text = f'<span class="ci">{pct(lo)}–{pct(hi)}</span>'
            value = f'<span class="v">{pct(row.get(m))}</span>'
            if (str(model), m) in significant:
                value += '<sup class="sig" title="differs from the column\'s best: paired randomization p &lt; 0.05 and a CI excluding 0">†</sup>'
            if (str(model), m) in saturated:
                value += f'<sup class="sat" title="saturated: {_esc(SATURATION_REASON)}">ˢ</sup>'
            cells.append(f'<td data-value="{_num_attr(row.get(m))}"{cls}>{value}{ci_text}</td>')
        if n_head:
            n = row.get("n")
            cells.append(f'<td data-value="{_num_attr(n)}">{"–" if n is None or pd.isna(n) else int(n)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="sortable" id="{_esc(table_id)}"><thead><tr><th>Model</th>{head}'
        f"{n_head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _breakdown_cell(value: Any, n: int) -> str:
    """A breakdown value; over fewer than :data:`MIN_BREAKDOWN_PAIRS` pairs it is muted and says its n."""
    if n >= MIN_BREAKDOWN_PAIRS or _missing(value):
        return f'<td data-value="{_num_attr(value)}">{pct(value)}</td>'
    title = f"only {n} pair(s): too few to read (breakdowns have no CI)"
    return (f'<td data-value="{_num_attr(value)}" class="few" title="{_esc(title)}"><span class="v">{pct(value)}</span>'
            f'<span class="ci">n = {n}</span></td>')  # fmt: skip


def _breakdown_tables(breakdown: pd.DataFrame, domain: str) -> str:
    part = breakdown[breakdown["domain"] == domain] if not breakdown.empty else breakdown
    if part.empty:
        return '<p class="note">No error breakdowns in the selected runs.</p>'
    out = []
    for by in sorted(part["by"].unique()):
        sub = part[part["by"] == by]
        metrics = sorted(sub["metric"].unique(), key=lambda m: (m.startswith("mrr"), len(m), m))
        what = {"mechanism": "Error mechanism", "n_edits": "Edits", "location": "Edit location",
                "position": "Position in the word", "profile": "Profile"}.get(by, by)  # fmt: skip
        head = "".join(f"<th>{_esc(LABELS.get(m, m))} (%)</th>" for m in metrics)
        rows = []
        for (model, stratum), cell in sorted(sub.groupby(["model", "stratum"])):
            values = dict(zip(cell["metric"], cell["value"], strict=True))
            tds = [
                _model_cell(model, cell["stand_in_for"].iloc[0]),
                f'<td class="text-left">{_esc(stratum)}</td>',
            ]
            n = int(cell["n"].iloc[0])
            tds += [_breakdown_cell(values.get(m), n) for m in metrics]
            tds.append(f'<td data-value="{n}">{n}</td>')
            rows.append("<tr>" + "".join(tds) + "</tr>")
        out.append(
            f"<h3>Deg@K by {_esc(what.lower())}</h3>"
            f'<div class="scroll"><table class="sortable" id="breakdown-{_esc(by)}-{_esc(domain)}"><thead><tr>'
            f"<th>Model</th><th>{_esc(what)}</th>{head}<th>n</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )
    return "".join(out)


def _plot_figures(plots: Sequence[PlotFile], domain: str) -> str:
    out = []
    for plot in plots:
        if plot.domain != domain:
            continue
        data = base64.b64encode(Path(plot.png).read_bytes()).decode("ascii")
        out.append(
            f'<figure><img alt="{_esc(plot.title)} ({_esc(domain)})" src="data:image/png;base64,{data}">'
            f"<figcaption>{_esc(plot.title)} — SVG: plots/{_esc(Path(plot.svg).name)}</figcaption></figure>"
        )
    return "".join(out) or '<p class="note">Plots were not generated.</p>'


def _domain_section(
    tidy: pd.DataFrame,
    breakdown: pd.DataFrame,
    domain: str,
    plots: Sequence[PlotFile],
    weights: Mapping[str, Any],
    significant: set[tuple[str, str, str, str]],
) -> str:
    title = "Equal-weight average over domains" if domain == AVERAGE else f"Domain: {domain}"
    parts = [f'<section class="domain-view" data-domain="{_esc(domain)}"><h2>{_esc(title)}</h2>']
    for pair_type, kind in PAIR_TYPES.items():
        metrics = robustness_columns(tidy, pair_type, domain)
        table = wide_table(tidy, pair_type, metrics, domain)
        parts.append(f"<h3>{_esc(kind.title)}</h3>")
        if table.empty:
            parts.append('<p class="note">No model ran these pairs here.</p>')
            continue
        parts.append(
            _metric_table(
                table,
                metrics,
                lower_is_better=True,
                table_id=f"{pair_type}-{domain}",
                labels=LABELS,
                weights=weights,
                significant={(m, k) for p, d, m, k in significant if p == pair_type and d == domain},
                saturated=saturated_cells(tidy, pair_type, domain),
            )
        )
    eff = effectiveness_table(tidy, domain)
    if not eff.dropna(how="all").empty:
        models = model_table(tidy).set_index("model")
        eff.insert(
            0,
            "stand_in_for",
            [models.loc[m, "stand_in_for"] if m in models.index else None for m in eff.index],
        )
        labels = {
            f"{p}:{m}": f"{'Syn' if p == 'syntactic' else 'Err'} {LABELS[m]}"
            for p, m in EFFECTIVENESS_COLUMNS
        }
        metrics = [f"{p}:{m}" for p, m in EFFECTIVENESS_COLUMNS]
        parts.append("<h3>Effectiveness (higher is better; bold = highest, underlined = lowest)</h3>")
        parts.append(
            _metric_table(
                eff,
                metrics,
                lower_is_better=False,
                table_id=f"effectiveness-{domain}",
                labels=labels,
                weights=weights,
                ci=False,
            )
        )
    parts.append("<h3>Plots</h3>")
    parts.append(_plot_figures(plots, domain))
    pooled = ": all domains, pooled by pair count (not the equal-weight average)" if domain == AVERAGE else ""
    parts.append(
        f"<h3>Writing-error degradation by mechanism, edits, location and profile (not in the paper){pooled}</h3>"
    )
    parts.append(_breakdown_tables(breakdown, "all" if domain == AVERAGE else domain))
    parts.append("</section>")
    return "".join(parts)


def _models_section(models: pd.DataFrame) -> str:
    rows = []
    for _, m in models.iterrows():
        rows.append(
            "<tr>"
            + _model_cell(m["model"], m["stand_in_for"], m["weights"])
            + "".join(
                f'<td class="text-left">{_esc(m[key], "—")}</td>'
                for key in ("model_name", "weights", "stand_in_for", "domains", "date", "limit")
            )
            + "</tr>"
        )
    return (
        '<div class="scroll"><table class="sortable" id="models"><thead><tr><th>Model</th>'
        + "".join(
            f'<th class="text-left">{h}</th>'
            for h in ("Registered as", "Weights", "Stand-in for", "Domains", "Newest run", "Limit")
        )
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _comparison_section(comparison: pd.DataFrame | None) -> str:
    if comparison is None or comparison.empty:
        return ""
    rows = []
    for _, r in comparison.iterrows():
        rows.append(
            "<tr>"
            + f'<td data-value="{_esc(r["model"])}">{_esc(r["model"])}</td>'
            + f'<td class="text-left">{_esc(r["paper_model"])}</td>'
            + f'<td class="text-left">{_esc(r["match"])}</td>'
            + f'<td class="text-left">{_esc(LABELS.get(r["metric"], r["metric"]))}</td>'
            + f'<td data-value="{_num_attr(r["ours"])}">{r["ours"]:.2f}</td>'
            + f'<td data-value="{_num_attr(r["paper"])}">{r["paper"]:.2f}</td>'
            + f'<td data-value="{_num_attr(r["gap"])}">{r["gap"]:+.2f}</td>'
            + "</tr>"
        )
    source = _esc(comparison.attrs.get("source", ""))
    return (
        '<h2 id="paper">Comparison with the paper</h2>'
        f'<p class="note">Paper values as published (source: {source}). Ours: equal-weight average over the '
        "domains we ran. A stand-in row uses different weights from the paper's system; its gap is not a "
        "reproduction result.</p>"
        '<div class="scroll"><table class="sortable" id="paper-comparison"><thead><tr><th>Our model</th>'
        "<th>Paper system</th><th>Match</th><th>Metric</th><th>Ours (%)</th><th>Paper (%)</th><th>Gap (pp)</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def render_html(
    tidy: pd.DataFrame,
    breakdown: pd.DataFrame,
    *,
    plot_files: Sequence[PlotFile] = (),
    comparison: pd.DataFrame | None = None,
    significant: set[tuple[str, str, str, str]] | None = None,
) -> str:
    """The whole page as a string (deterministic: same inputs ⇒ same text).

    ``significant`` (``leaderboard --compare``): ``{(pair_type, domain, model, metric)}`` marked ``†``.
    """
    domains = [AVERAGE, *domains_of(tidy)]
    models = model_table(tidy)
    weights = dict(zip(models["model"], models["weights"], strict=True)) if not models.empty else {}
    options = "".join(
        f'<option value="{_esc(d)}">{_esc("Average over domains" if d == AVERAGE else d)}</option>'
        for d in domains
    )
    runs = sorted(set(tidy.loc[tidy["selected"], "run_file"]))
    sections = "".join(
        _domain_section(tidy, breakdown, d, plot_files, weights, significant or set()) for d in domains
    )
    sig_note = (
        " † = differs significantly from the column's best (paired randomization test p &lt; 0.05 and a CI "
        "excluding 0, never at a saturated K; see significance.md)."
        if significant is not None
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>PQB leaderboard</title><style>{_CSS}</style></head><body>"
        "<h1>PersonalQuery-Benchmark (PQB) leaderboard</h1>"
        '<p class="note">Robustness of retrievers to how users word the same need: Flip@K and mean RRstd on '
        "syntactic pairs (two users' wording), Deg@K and MRRdeg on writing-error pairs (one user's clean vs "
        "typo'd query). Values in %; lower is more robust. <b>Bold</b> = most robust, <u>underlined</u> = "
        "most sensitive per column, as in the paper; small numbers under a value are its 95% paired-bootstrap "
        f"CI. ˢ = saturated ({_esc(SATURATION_REASON)}): the value cannot show robustness at that K, so it is never "
        f"bold as most robust. A breakdown value over fewer than {MIN_BREAKDOWN_PAIRS} pairs is muted and shows its n. "
        f"Click a column header to sort.{sig_note}</p>"
        '<div class="controls"><label for="domain-select">Domain: </label>'
        f'<select id="domain-select">{options}</select></div>'
        "<h2>Models</h2>"
        '<p class="note">A model marked <span class="badge">stand-in for …</span> ran with other weights than the '
        "paper's system (offline substitute); its numbers describe those weights only.</p>"
        f"{_models_section(models)}{sections}{_comparison_section(comparison)}"
        f"<footer>Generated by <code>pqb-harness leaderboard</code> from {len(runs)} results file(s): "
        f"{_esc(', '.join(runs))}. Newest run per (model, task).</footer>"
        f"<script>{_JS}</script></body></html>\n"
    )


def write_html(
    tidy: pd.DataFrame,
    breakdown: pd.DataFrame,
    path: Path,
    *,
    plot_files: Sequence[PlotFile] = (),
    comparison: pd.DataFrame | None = None,
    significant: set[tuple[str, str, str, str]] | None = None,
) -> Path:
    """Render the page and write it atomically to ``path``."""
    html = render_html(tidy, breakdown, plot_files=plot_files, comparison=comparison, significant=significant)
    atomic_write_text(path, html)
    return Path(path)
