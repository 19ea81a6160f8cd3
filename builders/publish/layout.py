"""Where each config's parquet shard lives in a dataset folder (the Hugging Face ``data/<config>/`` layout).

A module of its own because the writer (:mod:`pqb.builders.publish.tables`), the card
(:mod:`pqb.builders.publish.card`) and the release import all locate shards, and none of them should
import another just for that.
"""

from __future__ import annotations

from pathlib import Path

from pqb.dataset.schema import SPLIT

DATA_DIR = "data"
SHARD = f"{SPLIT}-00000-of-00001.parquet"


def config_path(dataset_dir: Path, config: str) -> Path:
    return Path(dataset_dir) / DATA_DIR / config / SHARD


def published_configs(dataset_dir: Path) -> list[str]:
    """Configs with a parquet shard under ``data/``, sorted (domain configs, then their views)."""
    root = Path(dataset_dir) / DATA_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / SHARD).is_file())
