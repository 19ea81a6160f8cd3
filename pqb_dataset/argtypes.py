"""argparse pieces shared by ``pqb-build`` and ``pqb-harness``: range-checked ``type=`` callables and a
parser whose errors are one line.

A bad number is refused when the command line is parsed, before any data is read or any model is
loaded. :class:`OneLineParser` reports it, like every usage error, as one ``error:`` line naming the
option and where help is, exit code 2. Both CLIs use the same callables, so a count, a quantile or a
seed means the same everywhere.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one ``error:`` line naming the fix (``--help``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}; see '{self.prog} --help'\n")


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}") from None


def _float(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}") from None
    if x != x:
        raise argparse.ArgumentTypeError("must be a number, got nan")
    return x


def at_least(low: int) -> Callable[[str], int]:
    """An integer >= ``low`` (e.g. 2 profile sentences: a Gaussian needs two points)."""

    def check(value: str) -> int:
        n = _int(value)
        if n < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {n}")
        return n

    check.__name__ = f"integer >= {low}"
    return check


positive_int = at_least(1)
"""An integer >= 1 (``--limit``, ``--epochs``, ``--n``: zero of them is never meant)."""


def non_negative_int(value: str) -> int:
    """An integer >= 0 (``--seed``; ``--bootstrap_iters``: 0 means no confidence intervals)."""
    n = _int(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def row_limit(value: str) -> int | float:
    """lm-eval's ``--limit``: an integer >= 1 (the first N rows) or a share strictly between 0 and 1
    (that fraction of the rows, a seeded sample)."""
    try:
        return positive_int(value)
    except argparse.ArgumentTypeError:
        pass
    try:
        x = _float(value)
    except argparse.ArgumentTypeError:
        x = -1.0
    if not 0 < x < 1:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 1 (rows) or a share strictly between 0 and 1, got {value!r}"
        )
    return x


def batch_size(value: str) -> int | str:
    """``auto`` or an integer >= 1."""
    return value if value == "auto" else positive_int(value)


def open_unit_interval(value: str) -> float:
    """A number strictly between 0 and 1 (a quantile such as ``--threshold-q``)."""
    x = _float(value)
    if not 0 < x < 1:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {value}")
    return x


def unit_interval(value: str) -> float:
    """A number in [0, 1] (a similarity gate)."""
    x = _float(value)
    if not 0 <= x <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return x
