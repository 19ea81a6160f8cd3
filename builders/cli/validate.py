"""``pqb-build validate {syntax,errors,all}``: the validation studies over a finished work directory."""

from __future__ import annotations

import argparse
import importlib
import sys

from pqb.builders.cli._common import add_stage_arguments, guarded, report, workdir_of
from pqb.dataset.argtypes import positive_int

HELP = (
    "Validation studies: syntactic attribution (syntax), error-profile attribution (errors), injected vs "
    "real typos (typos), or all three."
)
EPILOG = """examples:
  pqb-build validate syntax --domain video_games --workdir work/
  pqb-build validate typos --domain video_games   # injected typos beside held-out real slips
  pqb-build validate all --domain video_games --n-boot 1000
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", choices=("syntax", "errors", "typos", "all"), help="which study to run")
    add_stage_arguments(parser)
    parser.add_argument(
        "--n-boot", type=positive_int, default=200, help="bootstrap resamples for the CIs (default 200)"
    )


def _errors(args: argparse.Namespace) -> int:
    try:
        mod = importlib.import_module("pqb.builders.reports.error_study")
    except ModuleNotFoundError as exc:
        if exc.name != "pqb.builders.reports.error_study":
            raise
        print(
            "error: the error-profile study (pqb.builders.reports.error_study) is not available in this checkout",
            file=sys.stderr,
        )
        return 2
    from pqb.builders.workdir import WorkDir

    fn = getattr(mod, "run_error_study", None)
    if fn is None:
        print(
            "error: pqb.builders.reports.error_study has no run_error_study(workdir, *, seed, n_boot)",
            file=sys.stderr,
        )
        return 2
    try:
        report("validate errors", fn(WorkDir(args.workdir, args.domain), seed=args.seed, n_boot=args.n_boot))
    except FileNotFoundError as exc:  # a missing input artifact: say which stage to run
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    rc = 0
    if args.study in ("syntax", "all"):
        from pqb.builders.config import BuildConfig
        from pqb.builders.reports.attribution import run_validate_syntax

        def go() -> None:
            cfg = BuildConfig(seed=args.seed, n_boot=args.n_boot)
            stats = run_validate_syntax(workdir_of(args), cfg, force=args.force)
            report("validate syntax", stats)
            print(f"table: {args.workdir}/{args.domain}/validation/syntax_attribution.md")

        rc = guarded(go)
    if args.study in ("errors", "all"):
        rc = max(rc, _errors(args))
    if args.study in ("typos", "all"):
        from pqb.builders.reports.typo_study import run_typo_study
        from pqb.builders.workdir import WorkDir

        def typos() -> None:
            run_typo_study(WorkDir(args.workdir, args.domain), seed=args.seed, n_boot=args.n_boot)
            print(f"table: {args.workdir}/{args.domain}/validation/typo_study.md")

        rc = max(rc, guarded(typos))
    return rc
