"""``pqb-harness``: one module per subcommand (lm-eval ``_cli/`` style).

Each subcommand module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
The bare form ``pqb-harness --model bm25 --tasks syntactic`` (no subcommand) means ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS: dict[str, str] = {
    "run": "harness.cli.run",
    "ls": "harness.cli.ls",
    "validate": "harness.cli.validate",
    "leaderboard": "harness.cli.leaderboard",
    "compare-paper": "harness.cli.compare_paper",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pqb-harness",
        description="Evaluate retrievers on PQB: Flip@K/RRstd on syntactic pairs, Deg@K/MRRdeg on error pairs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}")
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in {"-h", "--help"}:
        argv = ["run", *argv]  # bare form: pqb-harness --model bm25 --tasks pqb
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return int(args._run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
