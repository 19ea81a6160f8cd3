"""PQB benchmark builders: from Amazon Reviews 2023 files to the published ``pqb_dataset/``.

Stages are plain functions over tables; :mod:`pqb.builders.cli` composes them into ``pqb-build``.
Builders depend on :mod:`pqb.dataset.schema`, never on :mod:`harness`.
"""

__version__ = "0.1.0"
