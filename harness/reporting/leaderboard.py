"""Write the leaderboard: tidy table, paper-style tables, breakdown, plots, HTML page, paper comparison.

The numbers come from :mod:`pqb.harness.reporting.collect` (results files only, never raw runs);
this module renders and writes them.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from pqb.dataset.io import atomic_write_bytes, atomic_write_json, atomic_write_text, sha256_file
from pqb.harness.evaluation.pairtypes import PAIR_TYPES
from pqb.harness.reporting.collect import breakdown_frame, load_runs, tidy_frame
from pqb.harness.reporting.tables import (
    all_table_frames,
    breakdown_markdown,
    effectiveness_markdown,
    robustness_markdown,
)

if TYPE_CHECKING:
    from pqb.harness.reporting.plots import PlotFile


@dataclass
class LeaderboardOutputs:
    """What ``write_leaderboard`` produced, for the CLI to report and tests to inspect."""

    out_dir: Path
    runs: list[Path]
    models: list[str]
    files: list[Path] = field(default_factory=list)


def _write_csv(path: Path, frame: pd.DataFrame) -> Path:
    atomic_write_text(path, frame.to_csv(index=False, lineterminator="\n"))
    return path


def _write_parquet(path: Path, frame: pd.DataFrame) -> Path:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())
    return path


def write_leaderboard(
    inputs: Sequence[Path],
    out_dir: Path,
    *,
    plots: bool = True,
    html: bool = True,
    paper: bool = True,
    all_runs: bool = False,
    paper_tables: Path | None = None,
    compare: bool = False,
    compare_iters: int = 1000,
    include_limited: bool = False,
) -> LeaderboardOutputs:
    """Read results under ``inputs`` and write every leaderboard artifact to ``out_dir``.

    Writes ``leaderboard.{parquet,csv}`` (tidy), ``{syntactic,error}_robustness.{md,csv}``,
    ``effectiveness.{md,csv}``, ``error_breakdown.{md,csv}``, ``plots/``, ``index.html``,
    ``paper_comparison.md`` and ``manifest.json`` (which run files were read, with hashes). With
    ``compare``, ``significance.{md,csv}`` too, and ``†`` marks in the robustness tables
    (:mod:`pqb.harness.reporting.significance`). Every file is written atomically and
    deterministically: the same inputs give the same bytes. Runs made with ``--limit`` are left out
    unless ``include_limited`` (:func:`~pqb.harness.reporting.collect.load_runs`).
    """
    out_dir = Path(out_dir)
    runs = load_runs(inputs, include_limited=include_limited)
    tidy = tidy_frame(runs, all_runs=all_runs)
    selected = tidy[tidy["selected"]]
    outputs = LeaderboardOutputs(
        out_dir=out_dir, runs=[r.path for r in runs], models=sorted(selected["model"].unique())
    )
    files = outputs.files
    files.append(_write_parquet(out_dir / "leaderboard.parquet", tidy))
    files.append(_write_csv(out_dir / "leaderboard.csv", tidy))
    for name, frame in all_table_frames(tidy).items():
        files.append(_write_csv(out_dir / f"{name}.csv", frame))
    significant = None
    if compare:
        from pqb.harness.reporting.significance import (
            significance_frame,
            significance_markdown,
            significant_cells,
        )

        sig = significance_frame(runs, tidy, n_boot=compare_iters, n_perm=compare_iters)
        significant = significant_cells(sig)
        files.append(_write_csv(out_dir / "significance.csv", sig))
        atomic_write_text(out_dir / "significance.md", significance_markdown(sig, compare_iters))
        files.append(out_dir / "significance.md")
    for pair_type in PAIR_TYPES:
        path = out_dir / f"{pair_type}_robustness.md"
        atomic_write_text(path, robustness_markdown(tidy, pair_type, significant))
        files.append(path)
    atomic_write_text(out_dir / "effectiveness.md", effectiveness_markdown(tidy))
    files.append(out_dir / "effectiveness.md")
    breakdown = breakdown_frame(runs)
    files.append(_write_csv(out_dir / "error_breakdown.csv", breakdown))
    atomic_write_text(
        out_dir / "error_breakdown.md",
        "## Writing-error degradation by mechanism, number of edits, edit location and profile\n\n"
        "Not in the paper. Deg@K and MRRdeg in %, lower is more robust.\n\n" + breakdown_markdown(breakdown),
    )
    files.append(out_dir / "error_breakdown.md")
    plot_files: list[PlotFile] = []
    if plots:
        from pqb.harness.reporting.plots import write_plots

        plot_files = write_plots(tidy, out_dir / "plots")
        fresh = {p for plot in plot_files for p in (plot.png, plot.svg)}
        for stale in (out_dir / "plots").glob("*_*.*"):
            if stale.suffix in {".png", ".svg"} and stale not in fresh:
                stale.unlink()  # a domain or model no longer present must not leave an old plot behind
        files += sorted(fresh)
    comparison = None
    if paper:
        from pqb.harness.reporting.paper import compare_markdown, comparison_frame, load_paper_tables

        tables = load_paper_tables(paper_tables)
        comparison = comparison_frame(tidy, tables)
        atomic_write_text(out_dir / "paper_comparison.md", compare_markdown(tidy, tables, comparison))
        files.append(out_dir / "paper_comparison.md")
    if html:
        from pqb.harness.reporting.page import write_html

        files.append(
            write_html(
                tidy,
                breakdown,
                out_dir / "index.html",
                plot_files=plot_files,
                comparison=comparison,
                significant=significant,
            )
        )
    stale = [*(["significance.md", "significance.csv"] if not compare else []), *([] if html else ["index.html"]),
             *([] if paper else ["paper_comparison.md"])]  # fmt: skip
    stale += [] if plots else [str(p.relative_to(out_dir)) for p in (out_dir / "plots").glob("*_*.*")
                               if p.suffix in {".png", ".svg"}]  # fmt: skip
    for name in stale:  # an earlier call's output must not stand beside this one's tables (nor be pushed)
        (out_dir / name).unlink(missing_ok=True)
    manifest = {
        "selection": "newest run per (model, task); see harness/reporting/leaderboard.py",
        "all_runs_in_tidy": all_runs,
        "runs": [{"file": r.source, "sha256": sha256_file(r.path), "model": r.model} for r in runs],
        "models": outputs.models,
        "files": sorted(str(p.relative_to(out_dir)) for p in files),
    }
    atomic_write_json(out_dir / "manifest.json", manifest)
    files.append(out_dir / "manifest.json")
    return outputs
