"""Shared fixtures. Every test runs offline with caches under a temporary directory."""

from __future__ import annotations

import importlib.util
import os
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
