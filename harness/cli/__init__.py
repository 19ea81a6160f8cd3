"""``pqb-harness``: one module per subcommand (lm-eval ``_cli/`` style).

Each subcommand module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
The bare form ``pqb-harness --model bm25 --tasks syntactic`` (no subcommand) means ``run``.

Errors are reported here and nowhere else: a subcommand raises a
:class:`~pqb.harness.errors.PQBHarnessError` and :func:`main` prints its details and one ``error:`` line,
returning the error's exit code (2 usage, 1 data). Argument-parsing errors get the same one-line form
(exit 2) instead of argparse's usage block.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pqb.dataset.cli import quiet_broken_pipe, subcommand_parser
from pqb.dataset.io import write_failure
from pqb.dataset.progress import progress_bars
from pqb.harness.errors import PQBHarnessError

SUBCOMMANDS: tuple[str, ...] = (
    "run",
    "ls",
    "validate",
    "leaderboard",
    "compare-paper",
    "compare",
    "score",
    "export-beir",
)
"""Each is the module ``pqb.harness.cli.<name>`` (``-`` read as ``_``)."""


def build_parser() -> argparse.ArgumentParser:
    return subcommand_parser(
        "pqb-harness",
        "Evaluate retrievers on PQB: Flip@K/RRstd on syntactic pairs, Deg@K/MRRdeg on error pairs.",
        __name__,
        SUBCOMMANDS,
    )


def report_error(exc: PQBHarnessError) -> int:
    """Print ``exc`` as its detail lines plus one ``error:`` line on stderr; return its exit code."""
    for line in exc.details:
        print(f"  {line}", file=sys.stderr)
    print("error: " + " ".join(str(exc).split()), file=sys.stderr)
    return exc.exit_code


def preflight(args: argparse.Namespace) -> None:
    """Refuse an unwritable ``--output_path`` or ``PQB_CACHE_DIR`` before any model loads or task runs
    (the first write used to be the first checkpoint, after a whole task had been evaluated).

    An ``--output_path`` ending in ``.json`` names the results file (lm-eval's habit): its folder must be
    writable, and the file may exist (every run rewrites it; a second run was once refused: "is not a
    folder"), but not as a folder."""
    from pathlib import Path

    from pqb.dataset import settings
    from pqb.dataset.io import first_unwritable
    from pqb.harness.errors import UsageError

    output = getattr(args, "output_path", None)
    if output is not None and Path(output).suffix.lower() == ".json":  # results.names_a_file
        if Path(output).is_dir():
            raise UsageError(
                f"--output_path: {output} names a results file (.json) but is a folder; choose another name"
            )
        output = Path(output).absolute().parent
    folders = {"--output_path": output}
    if args.command in ("run", "score"):
        folders["PQB_CACHE_DIR"] = settings.PQB_CACHE_DIR
    if problem := first_unwritable(folders):
        raise UsageError(problem)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in {"-h", "--help"}:
        argv = ["run", *argv]  # bare form: pqb-harness --model bm25 --tasks pqb
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    with progress_bars(not getattr(args, "no_progress", False)):
        return quiet_broken_pipe(lambda: _guarded(args))


def _guarded(args: argparse.Namespace) -> int:
    try:
        preflight(args)
        return int(args._run(args) or 0)
    except PQBHarnessError as exc:
        return report_error(exc)
    except OSError as exc:  # EFBIG, ENOSPC, ...: one line, exit 1; any other OSError is a bug
        if (message := write_failure(exc)) is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
