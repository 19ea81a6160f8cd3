"""PQB benchmark builders: from Amazon Reviews 2023 files to the published ``pqb_dataset/``.

Stages are plain functions over tables; :mod:`pqb.builders.cli` composes them into ``pqb-build``.
Builders depend on :mod:`pqb.dataset.schema`, never on :mod:`harness`.

Wings (one per stage, plus ``reports``) each say in their ``__init__`` what they read, write and may
import. Core modules (``config``, ``errors``, ``executor``, ``text``, ``nlp``, ``parses``, ``linalg``, ``seeds``, ``workdir``, ``kinds``) serve
every wing.
Core may import: pqb.dataset, pqb.builders.config, pqb.builders.errors, pqb.builders.executor, pqb.builders.text, pqb.builders.nlp,
pqb.builders.parses, pqb.builders.linalg, pqb.builders.seeds, pqb.builders.workdir, pqb.builders.kinds.
Composition (``pipeline``, ``cli``) may import every wing.
"""

from pqb.dataset import __version__  # the distribution's version, defined once

__all__ = ["__version__"]
