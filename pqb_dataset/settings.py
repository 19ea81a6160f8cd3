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
"""Root of the read-only reference data (``shared/data`` in the checkout's parent folder by default;
the one place this default is written)."""

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

PQB_DATASET_DIR: Path | None = _env_path("PQB_DATASET_DIR", Path()) if os.environ.get("PQB_DATASET_DIR") else None
"""The dataset folder named by ``$PQB_DATASET_DIR`` (``None`` when unset): first after ``--dataset_path``."""

CHECKOUT_DATASET_DIR: Path | None = REPO_ROOT / "pqb_dataset" if (REPO_ROOT / "pyproject.toml").is_file() else None
"""The checkout's own ``pqb_dataset/`` (``None`` in a ``pip install .``, where ``REPO_ROOT`` is inside
site-packages: a dataset is never looked for, nor written, there)."""

PQB_HUB_DATASET: str = os.environ.get("PQB_HUB_DATASET", "pqb-benchmark/pqb")
"""Hub repository id the dataset is published to and loaded from when no local folder exists."""

HF_HUB_OFFLINE: bool = _is_true(os.environ.get("HF_HUB_OFFLINE"))


DATASET_LOOKUP_ORDER = (
    "--dataset_path, $PQB_DATASET_DIR, ./pqb_dataset in the working directory, the checkout's own "
    "pqb_dataset/, then the Hub ($PQB_HUB_DATASET)"
)
"""The order, in words, for the README and every message that names where a dataset was looked for."""


def dataset_candidates() -> list[Path]:
    """Local folders looked at, in order, when no ``--dataset_path`` is given.

    Read at call time (not import time) so the working directory is the one the command runs in: after
    ``pip install .`` the checkout is gone and ``./pqb_dataset`` is what a user means.
    """
    found: list[Path] = []
    for cand in (PQB_DATASET_DIR, Path.cwd() / "pqb_dataset", CHECKOUT_DATASET_DIR):
        if cand is not None and cand.resolve() not in {f.resolve() for f in found}:
            found.append(cand)
    return found


def _is_dataset(folder: Path) -> bool:
    return (folder / "README.md").is_file()


def default_dataset_path() -> str:
    """The dataset to evaluate when a task says nothing: the first candidate holding a dataset card
    (:data:`DATASET_LOOKUP_ORDER`), else the Hub id."""
    for cand in dataset_candidates():
        if _is_dataset(cand):
            return str(cand)
    return PQB_HUB_DATASET


def default_dataset_dir() -> Path:
    """The local folder builders write (and ``pqb-build check``/``publish`` read) by default.

    ``$PQB_DATASET_DIR`` if set; else the first candidate that already holds a dataset; else the
    checkout's folder; else ``./pqb_dataset``. So the harness finds what the builder wrote, and an
    installed package never writes into site-packages.
    """
    if PQB_DATASET_DIR is not None:
        return PQB_DATASET_DIR
    for cand in dataset_candidates():
        if _is_dataset(cand):
            return cand
    return CHECKOUT_DATASET_DIR or Path.cwd() / "pqb_dataset"
