"""Harness-only argparse helpers; the range-checked ``type=`` callables live in :mod:`pqb.dataset.argtypes`
(shared with ``pqb-build``). argparse reports their message as one line naming the option (see
:class:`pqb.dataset.argtypes.OneLineParser`), exit code 2.
"""

from __future__ import annotations

import argparse


def add_bootstrap_unit(p: argparse.ArgumentParser) -> None:
    """``--bootstrap_unit`` (shared by ``run`` and ``score``): what the clustered bootstrap resamples."""
    from pqb.harness.evaluation.bootstrap import UNITS

    p.add_argument("--bootstrap_unit", choices=UNITS, default=None,
                   help="what the bootstrap resamples: whole pairs, target ASINs (default: task's, target) or users")  # fmt: skip


def add_allow_edited(p: argparse.ArgumentParser) -> None:
    """``--allow-edited`` (compare, leaderboard, compare-paper): read a results file whose content disagrees
    with its digest or with itself, with a loud note instead of a refusal."""
    p.add_argument("--allow-edited", action="store_true",
                   help="read results files whose content disagrees with their digest or with themselves (edited "
                        "after the run), with a note each, instead of refusing them")  # fmt: skip
