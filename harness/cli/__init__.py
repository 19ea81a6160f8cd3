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
import importlib
import sys
from collections.abc import Sequence

from pqb.dataset.argtypes import OneLineParser
from pqb.harness.errors import PQBHarnessError

SUBCOMMANDS: dict[str, str] = {
    "run": "pqb.harness.cli.run",
    "ls": "pqb.harness.cli.ls",
    "validate": "pqb.harness.cli.validate",
    "leaderboard": "pqb.harness.cli.leaderboard",
    "compare-paper": "pqb.harness.cli.compare_paper",
    "compare": "pqb.harness.cli.compare",
    "score": "pqb.harness.cli.score",
    "export-beir": "pqb.harness.cli.export_beir",
}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="pqb-harness",
        description="Evaluate retrievers on PQB: Flip@K/RRstd on syntactic pairs, Deg@K/MRRdeg on error pairs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}", parser_class=OneLineParser
    )
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=module.HELP,
            epilog=getattr(module, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def report_error(exc: PQBHarnessError) -> int:
    """Print ``exc`` as its detail lines plus one ``error:`` line on stderr; return its exit code."""
    for line in exc.details:
        print(f"  {line}", file=sys.stderr)
    print("error: " + " ".join(str(exc).split()), file=sys.stderr)
    return exc.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in {"-h", "--help"}:
        argv = ["run", *argv]  # bare form: pqb-harness --model bm25 --tasks pqb
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except PQBHarnessError as exc:
        return report_error(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
