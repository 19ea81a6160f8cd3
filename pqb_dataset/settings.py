"""Every path and environment variable PQB reads, in one place (huggingface_hub ``constants.py`` style).

Functions elsewhere take paths as arguments and default to these values; tests point them at
``tmp_path`` by setting the environment variables before import or by passing paths explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The checkout this package was imported from (meaningful for editable installs and checkouts)."""


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else default


def _is_true(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


PQB_DATA_DIR: Path = _env_path("PQB_DATA_DIR", REPO_ROOT.parent / "shared" / "data")
"""Root of the read-only reference data (``../shared/data`` next to the checkout by default)."""

PQB_AMAZON_DIR: Path = _env_path("PQB_AMAZON_DIR", PQB_DATA_DIR / "amazon2023-mini")
"""Local copy of Amazon Reviews 2023 in the official layout (``<Category>.jsonl``, ``meta_<Category>.jsonl``)."""

PQB_TYPOS_DIR: Path = _env_path("PQB_TYPOS_DIR", PQB_DATA_DIR / "typos")
"""Real typing slips with their corrections (``srcd_typos_calibration.csv``): the slip channel's data."""

PQB_RELEASE_DIR: Path = _env_path("PQB_RELEASE_DIR", PQB_DATA_DIR / "pqb_release")
"""The authors' published PQB query files (``<Domain>.json`` keyed by ASIN)."""

PQB_PAPER_TABLES: Path = _env_path("PQB_PAPER_TABLES", PQB_DATA_DIR / "paper" / "pqb_paper_tables.json")
"""The paper's published tables, for side-by-side comparison."""

PQB_CACHE_DIR: Path = _env_path("PQB_CACHE_DIR", Path.home() / ".cache" / "pqb")
"""Index, embedding, run and parse caches (content-hash keyed, safe to delete)."""

PQB_DATASET_DIR: Path = _env_path("PQB_DATASET_DIR", REPO_ROOT / "pqb_dataset")
"""The published dataset folder in a checkout (parquet + dataset card)."""

PQB_HUB_DATASET: str = os.environ.get("PQB_HUB_DATASET", "pqb-benchmark/pqb")
"""Hub repository id the dataset is published to and loaded from when no local folder exists."""

HF_HUB_OFFLINE: bool = _is_true(os.environ.get("HF_HUB_OFFLINE"))


def default_dataset_path() -> str:
    """The dataset to evaluate when a task says nothing: the checkout's folder if built, else the Hub id."""
    if (PQB_DATASET_DIR / "README.md").exists():
        return str(PQB_DATASET_DIR)
    return PQB_HUB_DATASET
