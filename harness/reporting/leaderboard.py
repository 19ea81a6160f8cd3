"""Write the leaderboard: tidy table, paper-style tables, breakdown, plots, HTML page, paper comparison.

The numbers come from :mod:`pqb.harness.reporting.collect` (results files only, never raw runs);
this module renders and writes them.
"""

from __future__ import annotations

import contextlib
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


def refuse_escape(out_dir: Path) -> None:
    """:class:`UsageError` before any write when a folder the leaderboard writes into is a symbolic link:
    ``--out/plots`` linked elsewhere would put this call's plots (and its clean-up) outside ``--out``."""
    from pqb.harness.errors import UsageError

    for folder in (Path(out_dir) / "plots",):
        if folder.is_symlink():
            raise UsageError(
                f"{folder} is a symbolic link (to {folder.readlink()}): the leaderboard writes only inside "
                f"{out_dir}; replace it with a folder, or pass another --out"
            )


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
    allow_edited: bool = False,
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
    runs = load_runs(inputs, include_limited=include_limited, allow_edited=allow_edited)
    refuse_escape(out_dir)
    previous = recorded_outputs(out_dir)
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
        files += sorted({p for plot in plot_files for p in (plot.png, plot.svg)})
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
    written = sorted(p.relative_to(out_dir).as_posix() for p in files)
    remove_earlier_outputs(out_dir, previous, keep=set(written))
    manifest = {
        "selection": "newest run per (model, task); see harness/reporting/leaderboard.py",
        "all_runs_in_tidy": all_runs,
        "runs": [{"file": r.source, "sha256": sha256_file(r.path), "model": r.model} for r in runs],
        "models": outputs.models,
        "files": written,
        "sha256": {name: sha256_file(out_dir / name) for name in written},
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    files.append(out_dir / MANIFEST)
    return outputs


MANIFEST = "manifest.json"
"""``--out/manifest.json``: the run files read and every file this call wrote (``files``, with their
``sha256``); the next call into the same folder removes only what it lists, and ``--push`` uploads only it."""


def recorded_outputs(out_dir: Path) -> list[str]:
    """The files an earlier ``leaderboard`` call wrote into ``out_dir``, as its manifest lists them
    (``[]`` without one); every name stays inside ``out_dir`` (a name that climbs out is left out)."""
    import json

    try:
        listed = json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return []
    root = Path(out_dir).resolve()
    return sorted(
        name for name in listed if isinstance(name, str) and not Path(name).is_absolute() and ".." not in
        Path(name).parts and (root / name).resolve().is_relative_to(root)
    ) if isinstance(listed, list) else []  # fmt: skip


def remove_earlier_outputs(out_dir: Path, previous: Sequence[str], keep: set[str]) -> None:
    """Delete what an earlier call wrote (``previous``: :func:`recorded_outputs`, read before this call
    wrote anything) and this one did not: its ``significance.md`` or plots must not stand beside this
    call's tables, nor be pushed. Nothing else in ``out_dir`` is touched: a user's ``plots/figure_1.png``
    or ``significance.md`` there once went too (issue 45)."""
    for name in sorted(set(previous) - keep):
        path = Path(out_dir) / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
    with contextlib.suppress(OSError):  # only when that left it empty
        (Path(out_dir) / "plots").rmdir()
