"""PQB dataset: the published benchmark files plus the small package harness and builders share.

This folder is a Hugging Face dataset repository (``README.md`` dataset card with a YAML ``configs:``
block and parquet files) *and* the Python package ``pqb.dataset``. The package holds only what both
sides of the project must agree on or would otherwise write twice: the column schema
(:mod:`pqb.dataset.schema`), environment settings (:mod:`pqb.dataset.settings`), atomic file writes
(:mod:`pqb.dataset.io`), the progress switch, range-checked argparse types, the subcommand dispatcher
(:mod:`pqb.dataset.cli`) and the numeric environment. ``pqb.builders`` writes datasets in this schema,
``pqb.harness`` reads them; neither imports the other.

May import: the standard library and the base dependencies only (never pqb.builders or pqb.harness).
"""

from pqb.dataset.schema import SCHEMA_VERSION

__version__ = "0.2.0"
"""The version of the whole distribution (``pqb-benchmark``): ``pqb.__version__``, ``pqb.harness.__version__``,
``pqb-harness --version`` and ``pyproject.toml`` (``dynamic``) all read it here."""

__all__ = ["SCHEMA_VERSION", "__version__"]
