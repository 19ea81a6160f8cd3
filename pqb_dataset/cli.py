"""The one subcommand dispatcher both ``pqb-build`` and ``pqb-harness`` are built on.

Each subcommand lives in a module of its own exposing ``HELP`` (one line), optionally ``EPILOG``,
``add_arguments(parser)`` and ``run(args) -> int`` (lm-eval ``_cli/`` style). Modules are imported
when the parser is built, so ``--help`` lists every subcommand with its line.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from pqb.dataset.argtypes import OneLineParser


def subcommand_parser(
    prog: str, description: str, package: str, names: Sequence[str]
) -> argparse.ArgumentParser:
    """A :class:`OneLineParser` with one subparser per name, each from module ``<package>.<name>`` (``-``
    read as ``_``); ``args._run`` is the chosen module's ``run``. ``--version`` works on the command and on
    every subcommand (``pqb-harness --version`` is read as ``run --version`` by the bare form)."""
    parser = OneLineParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=version_text(prog))
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
        if "--no-progress" not in p._option_string_actions:  # every subcommand accepts it (scripts pass it)
            p.add_argument("--no-progress", "--no_progress", dest="no_progress", action="store_true",
                           help="draw no progress bars")  # fmt: skip
        p.add_argument("--version", action="version", version=version_text(prog))
        p.set_defaults(_run=module.run)
    return parser


def version_text(prog: str) -> str:
    """``pqb-harness 0.2.0 (pqb-benchmark)``: the command, the version and the distribution it came from."""
    from pqb.dataset import __version__
    from pqb.dataset.extras import DISTRIBUTION

    return f"{prog} {__version__} ({DISTRIBUTION})"


def quiet_broken_pipe(fn: Callable[[], int]) -> int:
    """Run ``fn``; when stdout's reader went away (``pqb-harness ls tasks | head -4``) exit quietly, as
    Unix tools do, instead of a ``BrokenPipeError`` traceback (Python's documented recipe: point stdout
    at devnull so the interpreter's final flush cannot fail again).

    Tables and messages hold non-ASCII text ("—", "−", "D²"): in a locale whose encoding lacks them
    (Latin-1, ASCII) a print raised ``UnicodeEncodeError``, so ``run`` exited 1 after writing its
    results and ``compare --output`` wrote nothing. Unencodable characters are escaped instead."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        code = fn()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
