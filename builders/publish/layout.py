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


def card_data_files(dataset_dir: Path) -> dict[str, list[str]]:
    """Config name -> the ``data_files`` paths the dataset card's YAML header lists (``{}`` without a
    readable card): what the folder's current generation is made of."""
    import yaml

    card = Path(dataset_dir) / "README.md"
    try:
        text = card.read_text(encoding="utf-8") if card.is_file() else ""
        header = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, IndexError):
        return {}
    configs = header.get("configs") if isinstance(header, dict) else None
    out: dict[str, list[str]] = {}
    for cfg in configs if isinstance(configs, list) else []:
        if not isinstance(cfg, dict) or not isinstance(cfg.get("config_name"), str):
            continue
        files = cfg.get("data_files") or []
        files = files if isinstance(files, list) else [files]
        paths = [f.get("path") if isinstance(f, dict) else f for f in files]
        out[cfg["config_name"]] = [p for p in paths if isinstance(p, str)]
    return out


def config_path(dataset_dir: Path, config: str) -> Path:
    """The config's shard under ``data/<config>/``; a path that does not exist when the config is absent.

    A publish adds the new shards beside the old ones, swaps the card, then deletes the old ones
    (:mod:`pqb.builders.publish.staging`): meanwhile the shard is the one the card lists. Two shards the
    card does not tell apart mean a damaged dataset, reported as such.
    """
    folder = Path(dataset_dir) / DATA_DIR / config
    shards = sorted(folder.glob(SHARD_GLOB)) if folder.is_dir() else []
    if len(shards) > 1:
        listed = {Path(dataset_dir) / p for p in card_data_files(dataset_dir).get(config, [])}
        shards = [p for p in shards if p in listed] or shards
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
