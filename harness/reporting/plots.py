"""Leaderboard plots: Flip@K / Deg@K across K with CI bands, and robustness against effectiveness.

The figures are drawn on ``matplotlib.figure.Figure`` objects with the Agg canvas, never through
``pyplot``, so importing this module neither switches the global backend nor leaks figures. Output
is deterministic (same tidy table ⇒ same bytes): SVG ids are salted with a constant and no creation
date is written into either format.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pqb.dataset.io import atomic_write_bytes
from pqb.harness.evaluation.pairtypes import ERROR, PAIR_TYPES, SYNTACTIC
from pqb.harness.reporting.tables import AVERAGE, display_name, domains_of, saturated_cells, view_ks

_RC = {
    "svg.hashsalt": "pqb-leaderboard",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
_PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


@dataclass(frozen=True)
class PlotFile:
    """One plot for one domain, written as PNG and SVG."""

    name: str
    domain: str
    title: str
    png: Path
    svg: Path


def _style(models: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A fixed colour and marker per model (by sorted name), identical in every plot."""
    return {
        m: (_PALETTE[i % len(_PALETTE)], _MARKERS[i % len(_MARKERS)]) for i, m in enumerate(sorted(models))
    }


def _metric_frame(tidy: pd.DataFrame, pair_type: str, domain: str) -> pd.DataFrame:
    sel = tidy[tidy["selected"] & (tidy["pair_type"] == pair_type) & (tidy["domain"] == domain)]
    return sel.set_index(["model", "metric"])


def _value(frame: pd.DataFrame, model: str, metric: str, column: str = "value") -> float | None:
    try:
        value = frame.loc[(model, metric), column]
    except KeyError:
        return None
    if isinstance(value, pd.Series):
        value = value.iloc[0]
    return None if pd.isna(value) else 100.0 * float(value)


def _labels(tidy: pd.DataFrame) -> dict[str, str]:
    sel = tidy[tidy["selected"]].groupby("model")["stand_in_for"].first()
    return {m: display_name(m, s) for m, s in sel.items()}


def at_k_figure(tidy: pd.DataFrame, pair_type: str, domain: str = AVERAGE) -> Figure | None:
    """Flip@K (syntactic) or Deg@K (error) against K per model, with the 95% CI as a band."""
    kind = PAIR_TYPES[pair_type]
    prefix = kind.robustness_prefix
    frame = _metric_frame(tidy, pair_type, domain)
    ks = view_ks(tidy, pair_type, domain)
    if frame.empty:
        return None
    models = sorted(frame.index.get_level_values("model").unique())
    styles, labels = _style(tidy["model"].unique()), _labels(tidy)
    fig = Figure(figsize=(6.4, 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = list(range(len(ks)))
    for model in models:
        color, marker = styles[model]
        points = [(x, _value(frame, model, f"{prefix}@{k}")) for x, k in zip(xs, ks, strict=True)]
        points = [(x, y) for x, y in points if y is not None]
        if not points:
            continue
        ax.plot(*zip(*points, strict=True), color=color, marker=marker, label=labels.get(model, model))
        band = [
            (
                x,
                _value(frame, model, f"{prefix}@{k}", "ci_low"),
                _value(frame, model, f"{prefix}@{k}", "ci_high"),
            )
            for x, k in zip(xs, ks, strict=True)
        ]
        band = [(x, lo, hi) for x, lo, hi in band if lo is not None and hi is not None]
        if band:
            bx, lo, hi = zip(*band, strict=True)
            ax.fill_between(bx, lo, hi, color=color, alpha=0.15, linewidth=0)
    ax.set_xticks(xs, [str(k) for k in ks])
    ax.set_xlabel("K (cut-off)")
    metric = f"{prefix.capitalize()}@K"
    what = kind.what
    ax.set_ylabel(f"{metric} (%) — lower is more robust")
    where = "equal-weight domain average" if domain == AVERAGE else domain
    ax.set_title(f"{metric} on {what} ({where}); band = 95% CI", fontsize=9)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def scatter_figure(tidy: pd.DataFrame, domain: str = AVERAGE) -> Figure | None:
    """MRR on clean queries (x) against Flip@10 and Deg@10 (y), one labelled point per model.

    The paper's point — the most effective retriever is not the most robust — shows as the
    rightmost point not being the lowest one. A system saturated at K 10 (``ˢ``, a hollow marker) is never
    named most robust: its Flip@10 or Deg@10 of 0 says "no room to flip".
    """
    panels = (
        (SYNTACTIC.name, "mrr", SYNTACTIC.main_score, "MRR, syntactic queries (%)", "Flip@10 (%)"),
        (
            ERROR.name,
            ERROR.side_name("mrr", "clean"),
            ERROR.main_score,
            "MRR, clean queries (%)",
            "Deg@10 (%)",
        ),
    )
    frames = {p: _metric_frame(tidy, p, domain) for p, *_ in panels}
    if all(f.empty for f in frames.values()):
        return None
    styles, labels = _style(tidy["model"].unique()), _labels(tidy)
    fig = Figure(figsize=(10.0, 4.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    handles: dict[str, object] = {}
    for ax, (pair_type, x_metric, y_metric, x_label, y_label) in zip(axes, panels, strict=True):
        frame = frames[pair_type]
        models = sorted(frame.index.get_level_values("model").unique()) if not frame.empty else []
        points = {m: (_value(frame, m, x_metric), _value(frame, m, y_metric)) for m in models}
        points = {m: xy for m, xy in points.items() if None not in xy}
        saturated = {m for m, metric in saturated_cells(tidy, pair_type, domain) if metric == y_metric}
        xs = [x for x, _ in points.values()]
        middle = (min(xs) + max(xs)) / 2 if xs else 0.0
        for model, (x, y) in points.items():
            lo, hi = _value(frame, model, y_metric, "ci_low"), _value(frame, model, y_metric, "ci_high")
            color, marker = styles[model]
            # a CI need not hold its estimate (fewer than 40 bootstrap replicates, which run only notes, or an
            # edited file): matplotlib refuses a negative bar with a traceback after the tables were written
            yerr = [[max(y - lo, 0.0)], [max(hi - y, 0.0)]] if lo is not None and hi is not None else None
            face = "none" if model in saturated else color  # hollow: saturated at K, not a robustness value
            handles[model] = ax.errorbar(
                [x], [y], yerr=yerr, color=color, marker=marker, markersize=7, capsize=3, linestyle="none",
                markerfacecolor=face,
            )  # fmt: skip
            right = x > middle and len(points) > 1  # keep labels of right-hand points inside the axes
            short = (
                model
                + (" *" if labels.get(model, model) != model else "")
                + (" ˢ" if model in saturated else "")
            )
            ax.annotate(
                short,
                (x, y),
                xytext=(-7 if right else 7, 5),
                textcoords="offset points",
                ha="right" if right else "left",
                fontsize=8,
                color=color,
            )
        if len(points) > 1:  # ties are all named, as the tables mark them all
            top_x = max(x for x, _ in points.values())
            best_eff = ", ".join(sorted(m for m, (x, _) in points.items() if x == top_x))
            # a saturated system's 0 says "no room to flip": it is never named most robust (as in the tables)
            ranked = {m: y for m, (_, y) in points.items() if m not in saturated}
            low_y = min(ranked.values()) if ranked else None
            best_rob = ", ".join(sorted(m for m, y in ranked.items() if y == low_y)) or "none measurable"
            note = (
                f"\nsaturated (ˢ, hollow; not ranked): {', '.join(sorted(saturated & set(points)))}"
                if saturated & set(points)
                else ""
            )
            ax.text(
                0.99,
                0.01,
                f"most effective: {best_eff}\nmost robust: {best_rob}{note}",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=8,
                bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#999999", "alpha": 0.9},
            )
        ax.set_xlabel(f"{x_label} → more effective")
        ax.set_ylabel(f"{y_label} ↓ more robust")
        ax.margins(x=0.2, y=0.2)
        ax.set_title(f"{y_label.split(' ')[0]} vs effectiveness", fontsize=9)
    where = "equal-weight domain average" if domain == AVERAGE else domain
    fig.suptitle(f"Robustness vs effectiveness ({where}); bars = 95% CI; * = stand-in weights", fontsize=10)
    ordered = sorted(handles)
    fig.legend(
        [handles[m] for m in ordered],
        [labels.get(m, m) for m in ordered],
        loc="lower center",
        ncol=min(3, len(ordered)),
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.06 + 0.04 * ((len(ordered) - 1) // 3), 1, 1))
    return fig


def save_figure(fig: Figure, stem: Path) -> tuple[Path, Path]:
    """Write ``stem.png`` and ``stem.svg`` atomically, without dates in their metadata."""
    outputs = []
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        buf = io.BytesIO()
        with matplotlib.rc_context(_RC):
            fig.savefig(buf, format=fmt, dpi=150, metadata=metadata)
        path = stem.with_suffix(f".{fmt}")
        atomic_write_bytes(path, buf.getvalue())
        outputs.append(path)
    return outputs[0], outputs[1]


def write_plots(tidy: pd.DataFrame, out_dir: Path) -> list[PlotFile]:
    """All plots for the domain average and every domain: ``<name>_<domain>.{png,svg}``."""
    written: list[PlotFile] = []
    specs = (
        ("flip_at_k", "Flip@K across K (syntactic pairs)", lambda d: at_k_figure(tidy, SYNTACTIC.name, d)),
        ("deg_at_k", "Deg@K across K (writing-error pairs)", lambda d: at_k_figure(tidy, ERROR.name, d)),
        ("robustness_vs_effectiveness", "Robustness vs effectiveness", lambda d: scatter_figure(tidy, d)),
    )
    for domain in [AVERAGE, *domains_of(tidy)]:
        for name, title, build in specs:
            with matplotlib.rc_context(_RC):
                fig = build(domain)
            if fig is None:
                continue
            png, svg = save_figure(fig, Path(out_dir) / f"{name}_{domain}")
            written.append(PlotFile(name=name, domain=domain, title=title, png=png, svg=svg))
    return written
