"""Range-checked ``type=`` callables for argparse: a bad number is refused before any work starts.

argparse reports the ``ArgumentTypeError`` message as one line naming the option (see
:class:`harness.cli.OneLineParser`), exit code 2.
"""

from __future__ import annotations

import argparse


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}") from None


def positive_int(value: str) -> int:
    """An integer >= 1 (``--limit``: evaluating 0 rows is never meant)."""
    n = _int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def non_negative_int(value: str) -> int:
    """An integer >= 0 (``--bootstrap_iters``: 0 means no confidence intervals)."""
    n = _int(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (0 = no confidence intervals), got {n}")
    return n


def batch_size(value: str) -> int | str:
    """``auto`` or an integer >= 1."""
    return value if value == "auto" else positive_int(value)


def add_bootstrap_unit(p: argparse.ArgumentParser) -> None:
    """``--bootstrap_unit`` (shared by ``run`` and ``score``): what the clustered bootstrap resamples."""
    from harness.bootstrap import UNITS

    p.add_argument("--bootstrap_unit", choices=UNITS, default=None,
                   help="what the bootstrap resamples: whole pairs, target ASINs (default: task's, target) or users")  # fmt: skip
