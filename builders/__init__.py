"""PQB benchmark builders: from Amazon Reviews 2023 files to the published ``pqb_dataset/``.

Stages are plain functions over tables; :mod:`builders.cli` composes them into ``pqb-build``.
Builders depend on :mod:`pqb_dataset.schema`, never on :mod:`harness`.
"""

__version__ = "0.1.0"
