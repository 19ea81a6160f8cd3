"""``pqb-harness compare-paper``: our measured robustness tables beside the paper's published ones."""

from __future__ import annotations

import argparse
from pathlib import Path

from pqb.harness.cli.argtypes import add_allow_edited

HELP = "Print our measured Flip@K/Deg@K tables beside the paper's published numbers, with the gap."
EPILOG = """examples:
  pqb-harness compare-paper results/
  pqb-harness compare-paper results/ --out paper_comparison.md

Our rows are matched to the paper's by system name (bm25 <-> BM25); a run whose model_info declares
stand_in_for (e.g. MiniLM for GTE-base) is shown as a stand-in, never as the paper's model. Runs are
selected as by `leaderboard`: other --model_args are another row, --limit runs are left out unless
--include-limited, and a model whose tasks come from different dataset builds is refused.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", type=Path, help="results files or folders (searched for results_*.json)"
    )
    p.add_argument(
        "--paper-tables", type=Path, default=None, help="paper tables JSON (default: the packaged copy)"
    )
    p.add_argument("--out", type=Path, default=None, help="also write the markdown to this file")
    p.add_argument("--include-limited", action="store_true",
                   help="also show runs made with --limit, as rows of their own (default: left out, with a note)")  # fmt: skip
    add_allow_edited(p)


def run(args: argparse.Namespace) -> int:
    from pqb.dataset.io import atomic_write_text
    from pqb.harness.reporting.collect import load_runs, tidy_frame
    from pqb.harness.reporting.paper import compare_markdown, load_paper_tables

    tidy = tidy_frame(
        load_runs(args.paths, include_limited=args.include_limited, allow_edited=args.allow_edited)
    )
    text = compare_markdown(tidy, load_paper_tables(args.paper_tables))
    print(text)
    if args.out:
        atomic_write_text(args.out, text)
    return 0
