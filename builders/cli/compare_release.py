"""``pqb-build compare-release``: the authors' released typo queries against our error injector."""

from __future__ import annotations

import argparse
from pathlib import Path

from pqb.dataset.argtypes import non_negative_int, positive_int

HELP = "Diff the authors' released typo queries: mechanisms, edits per query, core-term hits; ours beside."
EPILOG = """examples:
  pqb-build compare-release
  pqb-build compare-release --workdir work --domain video_games
  pqb-build compare-release --release-dir $PQB_RELEASE_DIR --out reports/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--release-dir", default=None, help="folder of <Domain>.json (default $PQB_RELEASE_DIR)"
    )
    parser.add_argument(
        "--workdir", default=None, help="a build work dir: our products/profiles go beside theirs"
    )
    parser.add_argument("--domain", default=None, help="only this domain (default: every release file)")
    parser.add_argument("--out", default=None, help="output folder (default <workdir>/<domain>/validation)")
    parser.add_argument(
        "--n-inject", type=positive_int, default=500, help="release queries our injector is run on"
    )
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the injection sample (default 0)"
    )


def run(args: argparse.Namespace) -> int:
    from pqb.builders.reports.release_compare import compare_release

    compare_release(
        release_dir=args.release_dir,
        workdir=args.workdir,
        domain=args.domain,
        out_dir=args.out,
        n_inject=args.n_inject,
        seed=args.seed,
    )
    out = Path(args.out) if args.out else None
    if out is None:
        out = (
            Path(args.workdir) / args.domain / "validation"
            if args.workdir and args.domain
            else Path("release_compare")
        )
    print((out / "release_compare.md").read_text(encoding="utf-8"))
    return 0
