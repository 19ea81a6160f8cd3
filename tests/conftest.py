"""Shared fixtures. Every test runs offline with caches under a temporary directory."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import network_guard
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs offline: only loopback and Unix sockets (see tests/network_guard.py)."""
    network_guard.install(monkeypatch)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point PQB's cache at a fresh temp dir so tests never read or pollute ~/.cache/pqb."""
    from pqb.dataset import settings

    cache = tmp_path_factory.mktemp("pqb_cache")
    monkeypatch.setattr(settings, "PQB_CACHE_DIR", cache)
    monkeypatch.setenv("PQB_CACHE_DIR", str(cache))


@pytest.fixture(scope="module")
def app() -> ModuleType:
    """The leaderboard Space's ``leaderboard/app.py``, loaded from its file (it is not a package module)."""
    path = Path(__file__).resolve().parent.parent / "leaderboard" / "app.py"
    spec = importlib.util.spec_from_file_location("pqb_space_app", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session", autouse=True)
def _slip_channel_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The pair stage's slip channel (and the card's typo study) read real slips from ``PQB_TYPOS_DIR``.
    Where they are absent (a clone without the shared data folder), the whole session gets a SYNTHETIC
    stand-in of hand-written slips (``pqb_fixtures.TOY_SLIPS``) so builds on synthetic inputs still run,
    module-scoped build fixtures included; ``PQB_TESTS_SYNTHETIC_TYPOS=1`` tells a test that compares a
    build with the committed dataset to skip."""
    from pqb_fixtures import write_toy_typos

    from pqb.dataset import settings

    if (settings.PQB_TYPOS_DIR / "srcd_typos_calibration.csv").is_file():
        yield
        return
    d = write_toy_typos(tmp_path_factory.mktemp("synthetic_typos"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settings, "PQB_TYPOS_DIR", d)
        mp.setenv("PQB_TYPOS_DIR", str(d))
        mp.setenv("PQB_TESTS_SYNTHETIC_TYPOS", "1")
        yield
