"""The one subcommand dispatcher both ``pqb-build`` and ``pqb-harness`` are built on.

Each subcommand lives in a module of its own exposing ``HELP`` (one line), optionally ``EPILOG``,
``add_arguments(parser)`` and ``run(args) -> int`` (lm-eval ``_cli/`` style). Modules are imported
when the parser is built, so ``--help`` lists every subcommand with its line.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from pqb.dataset.argtypes import OneLineParser


def subcommand_parser(
    prog: str, description: str, package: str, names: Sequence[str]
) -> argparse.ArgumentParser:
    """A :class:`OneLineParser` with one subparser per name, each from module ``<package>.<name>`` (``-``
    read as ``_``); ``args._run`` is the chosen module's ``run``."""
    parser = OneLineParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(names) + "}", parser_class=OneLineParser
    )
    for name in names:
        module = importlib.import_module(f"{package}.{name.replace('-', '_')}")
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
