"""``pqb-harness leaderboard``: results files → paper-style tables, tidy parquet, plots, HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from pqb.dataset.argtypes import positive_int
from pqb.harness.cli.argtypes import add_allow_edited

HELP = "Aggregate results files into the paper's tables, a tidy parquet, plots and a static HTML page."
EPILOG = """examples:
  pqb-harness leaderboard results/ --out leaderboard_out/
  pqb-harness leaderboard results/bm25 results/dense/results_2026-01-12T10-00-00.000000.json --out out/
  pqb-harness leaderboard results/ --out out/ --push my-org/pqb-results   # token from HF_TOKEN / login

Selection: for every (model, task) the newest run holding that task is used (its `date`, then the
file name's timestamp). A model is its name, weights and --model_args: other settings are another row
(`bm25 [b=0.1,k1=0.3]`). Runs made with --limit are left out (a note names them) unless
--include-limited, which shows them as rows of their own (`bm25 [limit=20]`). A model whose selected
tasks come from different dataset builds is refused. --all-runs also keeps older runs in
leaderboard.{parquet,csv} (column `selected`); tables and plots always use the selected runs.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", type=Path, help="results files or folders (searched for results_*.json)"
    )
    p.add_argument("--out", type=Path, required=True, help="folder to write the leaderboard into")
    p.add_argument(
        "--push", metavar="REPO_ID", default=None, help="also upload the folder to this Hub dataset repo"
    )
    p.add_argument("--all-runs", action="store_true", help="keep non-newest runs in the tidy table too")
    p.add_argument("--include-limited", action="store_true",
                   help="also show runs made with --limit, as rows of their own (default: left out, with a note)")  # fmt: skip
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    p.add_argument("--no-html", action="store_true", help="skip index.html")
    p.add_argument("--no-paper", action="store_true", help="skip paper_comparison.md")
    p.add_argument("--compare", action="store_true",
                   help="test each system against each column's best (paired CIs, p-values); marks † in tables")  # fmt: skip
    p.add_argument(
        "--compare-iters", type=positive_int, default=1000, help="bootstrap replicates and permutations"
    )
    p.add_argument(
        "--paper-tables", type=Path, default=None, help="paper tables JSON (default: the packaged copy)"
    )
    add_allow_edited(p)


def run(args: argparse.Namespace) -> int:
    from pqb.harness.reporting.leaderboard import write_leaderboard

    outputs = write_leaderboard(
        args.paths,
        args.out,
        plots=not args.no_plots,
        html=not args.no_html,
        paper=not args.no_paper,
        all_runs=args.all_runs,
        paper_tables=args.paper_tables,
        compare=args.compare,
        compare_iters=args.compare_iters,
        include_limited=args.include_limited,
        allow_edited=args.allow_edited,
    )
    print(f"read {len(outputs.runs)} results file(s); models: {', '.join(outputs.models)}")
    print(f"wrote {len(outputs.files)} files to {outputs.out_dir}")
    for name in ("syntactic_robustness.md", "error_robustness.md", "significance.md", "index.html",
                 "paper_comparison.md"):  # fmt: skip
        if (outputs.out_dir / name).exists():
            print(f"  {outputs.out_dir / name}")
    if args.push:
        from pqb.harness.reporting.hub import push_leaderboard

        url = push_leaderboard(outputs.out_dir, args.push)
        print(f"pushed: {url}")
    return 0
