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


def between(low: int, high: int, why: str) -> Callable[[str], int]:
    """An integer in [``low``, ``high``]; ``why`` says what the upper bound protects (memory, time).

    A count that sizes an array (bootstrap replicates, candidates per product) without an upper bound
    turns a typo into a ``MemoryError`` traceback or minutes of silent work, not a usage error.
    """

    def check(value: str) -> int:
        n = _int(value)
        if n < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {n}")
        if n > high:
            raise argparse.ArgumentTypeError(f"must be <= {high:,} ({why}), got {n:,}")
        return n

    check.__name__ = f"integer in [{low}, {high}]"
    return check


MAX_BOOTSTRAP_ITERS = 1_000_000
"""``--bootstrap_iters`` cap: every metric of a task keeps one float64 per replicate (8 MB per metric at
the cap, under 1 GB for a task's ~100 metrics); CIs stop changing in their reported digits far below it."""
bootstrap_iters = between(0, MAX_BOOTSTRAP_ITERS, "each replicate holds a float per metric in memory")
"""``--bootstrap_iters``: 0 means no confidence intervals."""

MAX_CANDIDATES = 10_000
"""``pqb-build generate --n`` cap: every candidate of a product is held, filtered and embedded in memory
(the paper draws 50); 10,000 per product is already ~10 MB of text per product before filtering."""
candidates_per_product = between(1, MAX_CANDIDATES, "each product's candidates are held in memory")


def safe_name(value: str) -> str:
    """A name that becomes a folder or file name (``--domain``): :func:`pqb.dataset.io.unsafe_name`."""
    from pqb.dataset.io import unsafe_name

    if problem := unsafe_name(value):
        raise argparse.ArgumentTypeError(problem)
    return value


positive_int = at_least(1)
"""An integer >= 1 (``--limit``, ``--epochs``, ``--n``: zero of them is never meant)."""


def non_negative_int(value: str) -> int:
    """An integer >= 0 (``--seed``; ``--bootstrap_iters``: 0 means no confidence intervals)."""
    n = _int(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def pair_limit(value: str) -> int | float:
    """lm-eval's ``--limit``, counted in pairs (PQB's documents): an integer >= 1 (the first N pairs of each
    task) or a share strictly between 0 and 1 (that fraction of each task's pairs, at least 1, a seeded
    sample)."""
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
            f"must be an integer >= 1 (pairs) or a share strictly between 0 and 1, got {value!r}"
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
