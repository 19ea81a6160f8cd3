"""PQB (PersonalQuery-Benchmark), distributed as ``pqb-benchmark``: ``pqb.builders`` regenerates the
benchmark, ``pqb.harness`` evaluates retrievers on it, ``pqb.dataset`` is what both share.

This folder is the top-level ``pqb`` package itself (pyproject.toml maps it; the three parts live in
``builders/``, ``harness/`` and ``pqb_dataset/``). It holds only the version, defined once in
:mod:`pqb.dataset` and read here, so ``pqb.__version__`` and ``pqb-harness --version`` always agree.

May import: pqb.dataset.
"""

from pqb.dataset import __version__

__all__ = ["__version__"]
