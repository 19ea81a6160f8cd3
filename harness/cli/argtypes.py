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


MIN_CI_REPLICATES = 40
"""ceil(2 / alpha) at alpha = 0.05: below it a percentile CI's bounds are single replicates, not an interval."""


def bootstrap_note(n_boot: int | None) -> str | None:
    """The ``note:`` line ``run`` and ``score`` print for ``--bootstrap_iters`` of 0 or below
    :data:`MIN_CI_REPLICATES`, else ``None``.

    Why: ``--bootstrap_iters 1`` printed ``Deg@10 5.24 [4.29, 4.29]``, a "95% CI" that does not hold its
    own estimate, and moved the saturation marks (which compare the expected flip rate with the CI width).
    """
    if n_boot == 0:
        return "note: --bootstrap_iters 0: no confidence intervals are computed (every CI is null, no <metric>_stderr is written)"
    if n_boot is not None and n_boot < MIN_CI_REPLICATES:
        return (f"note: --bootstrap_iters {n_boot}: a 95% percentile interval needs at least {MIN_CI_REPLICATES} "
                "replicates (fewer cannot place its 2.5% tails, and the interval may not even hold the estimate); "
                "read these CIs as placeholders, or give 0 for none")  # fmt: skip
    return None
