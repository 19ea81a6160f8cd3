"""Where each config's parquet shard lives in a dataset folder (the Hugging Face ``data/<config>/`` layout).

A module of its own because the writer (:mod:`pqb.builders.publish.tables`), the card
(:mod:`pqb.builders.publish.card`) and the release import all locate shards, and none of them should
import another just for that.

Shard names are content-addressed (``test-00000-of-00001-<sha16>.parquet``, ``<sha16>`` = the first 16
hex digits of the file's sha256): ``datasets`` keys its cache for a local folder on the folder's
*name*, the config name and the card's ``data_files`` paths, so two builds with different bytes get
different paths in the card, hence different cache keys, and ``load_dataset(<folder>, <config>)``
never serves another build's rows (see :mod:`pqb.builders.publish.tables`).
"""

from __future__ import annotations

from pathlib import Path

from pqb.builders.errors import SchemaViolationError
from pqb.dataset.io import sha256_file
from pqb.dataset.schema import SPLIT

DATA_DIR = "data"
SHARD_PREFIX = f"{SPLIT}-00000-of-00001"
SHARD_GLOB = f"{SHARD_PREFIX}-*.parquet"
"""A config's one shard: ``test-00000-of-00001-<sha16>.parquet``."""


def shard_name(path: Path) -> str:
    """The content-addressed file name of a written shard: its sha256's first 16 hex digits."""
    return f"{SHARD_PREFIX}-{sha256_file(path)[:16]}.parquet"


def config_path(dataset_dir: Path, config: str) -> Path:
    """The config's shard under ``data/<config>/``; a path that does not exist when the config is absent.

    Two shards in one folder mean a damaged dataset (``write_config`` keeps exactly one), reported as such.
    """
    folder = Path(dataset_dir) / DATA_DIR / config
    shards = sorted(folder.glob(SHARD_GLOB)) if folder.is_dir() else []
    if len(shards) > 1:
        raise SchemaViolationError(
            f"{folder} holds {len(shards)} shards ({', '.join(p.name for p in shards)}); one build writes "
            "exactly one: delete the folder and rebuild (pqb-build publish)"
        )
    return shards[0] if shards else folder / f"{SHARD_PREFIX}.parquet"


def published_configs(dataset_dir: Path) -> list[str]:
    """Configs with a parquet shard under ``data/``, sorted (domain configs, then their views)."""
    root = Path(dataset_dir) / DATA_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and config_path(dataset_dir, p.name).is_file())
