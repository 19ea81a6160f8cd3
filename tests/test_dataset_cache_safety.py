"""``datasets.load_dataset(<folder>, <config>)`` never serves another build's rows; the card declares
only configs whose files exist.

``datasets`` keys its cache for a local folder on the folder's name, the config name and the card's
``data_files`` paths (not on contents or absolute paths), so two builds in two folders named
``pqb_dataset`` shared one cache entry and the second load silently returned the first build's rows.
Content-addressed shard names (``test-00000-of-00001-<sha16>.parquet``) put the contents in the key.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pqb.builders.publish.card import declare_local_configs, write_card
from pqb.builders.publish.tables import config_path, write_config
from pqb.dataset.schema import CORPUS_SCHEMA, QRELS_SCHEMA, QUERIES_SCHEMA


def _build(root: Path, n_docs: int) -> Path:
    """A small dataset folder named ``pqb_dataset`` through the builders' own writers (card included)."""
    folder = root / "pqb_dataset"
    docs = [{"id": f"B{i:03d}", "title": f"product {i}", "text": f"brand: b{i}"} for i in range(n_docs)]
    write_config(pa.Table.from_pylist(docs, schema=CORPUS_SCHEMA), folder, "video_games-corpus")
    write_config(pa.Table.from_pylist([{"id": "q1", "text": "a query"}], schema=QUERIES_SCHEMA), folder,
                 "video_games-queries")  # fmt: skip
    write_config(pa.Table.from_pylist([{"query-id": "q1", "corpus-id": "B000", "score": 1}], schema=QRELS_SCHEMA),
                 folder, "video_games-qrels")  # fmt: skip
    write_card(folder)
    return folder


def _ids(folder: Path, cache: Path) -> list[str]:
    import datasets

    return list(
        datasets.load_dataset(str(folder), "video_games-corpus", split="test", cache_dir=str(cache))["id"]
    )


def test_two_builds_in_folders_of_one_name_each_load_their_own_rows(tmp_path: Path) -> None:
    a, b = _build(tmp_path / "a", 3), _build(tmp_path / "b", 5)
    cache = tmp_path / "hf_cache"  # one cache for both, as every user has
    assert _ids(a, cache) == ["B000", "B001", "B002"]
    assert _ids(b, cache) == ["B000", "B001", "B002", "B003", "B004"]
    assert _ids(a, cache) == ["B000", "B001", "B002"]
    assert config_path(a, "video_games-corpus").name != config_path(b, "video_games-corpus").name


def test_fixed_shard_names_would_serve_the_other_build(tmp_path: Path) -> None:
    """The failure the names prevent, reproduced: same name, same card paths -> one cache entry."""
    a, b = _build(tmp_path / "a", 3), _build(tmp_path / "b", 5)
    for folder in (a, b):
        shard = config_path(folder, "video_games-corpus")
        fixed = shard.with_name("test-00000-of-00001-fixed.parquet")
        shard.rename(fixed)
        card = folder / "README.md"
        card.write_text(card.read_text().replace(shard.name, fixed.name))
    cache = tmp_path / "hf_cache"
    assert len(_ids(a, cache)) == 3
    assert len(_ids(b, cache)) == 3  # stale: b has 5 rows


def test_rebuild_in_place_replaces_the_shard(tmp_path: Path) -> None:
    folder = _build(tmp_path, 3)
    first = config_path(folder, "video_games-corpus")
    _build(tmp_path, 4)
    shards = list((folder / "data" / "video_games-corpus").glob("*.parquet"))
    assert shards == [config_path(folder, "video_games-corpus")] and shards[0] != first
    assert _ids(folder, tmp_path / "hf_cache") == ["B000", "B001", "B002", "B003"]


def test_card_declares_only_configs_whose_files_exist(tmp_path: Path) -> None:
    import datasets

    folder = _build(tmp_path, 3)
    card = (folder / "README.md").read_text()
    assert "-release" not in card.split("\n---\n")[0]
    names = datasets.get_dataset_config_names(str(folder))
    assert sorted(names) == ["video_games-corpus", "video_games-qrels", "video_games-queries"]
    for name in names:  # every declared config loads
        assert len(datasets.load_dataset(str(folder), name, split="test", cache_dir=str(tmp_path / "c"))) >= 1
    docs = [{"id": "R1", "title": "t", "text": "x"}]
    write_config(pa.Table.from_pylist(docs, schema=CORPUS_SCHEMA), folder, "video_games-release-corpus")
    declare_local_configs(folder)  # what `pqb-build release` does after writing a release config
    assert "video_games-release-corpus" in datasets.get_dataset_config_names(str(folder))
    got = datasets.load_dataset(
        str(folder), "video_games-release-corpus", split="test", cache_dir=str(tmp_path / "c")
    )
    assert got["id"] == ["R1"]
    write_card(folder)  # publish restores the published card
    assert "video_games-release-corpus" not in datasets.get_dataset_config_names(str(folder))


def test_two_shards_in_one_config_folder_are_reported(tmp_path: Path) -> None:
    from pqb.builders.publish.tables import SchemaViolationError

    folder = _build(tmp_path, 3)
    shard = config_path(folder, "video_games-corpus")
    shard.with_name("test-00000-of-00001-0000000000000000.parquet").write_bytes(shard.read_bytes())
    assert config_path(folder, "video_games-corpus") == shard  # the card's, as while a publish commits
    (folder / "README.md").unlink()
    with pytest.raises(SchemaViolationError, match="holds 2 shards"):
        config_path(folder, "video_games-corpus")
