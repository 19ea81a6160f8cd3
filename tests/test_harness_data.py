"""Loading local datasets: a rebuilt folder (same name, new bytes) must never be served from a stale cache."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pqb_fixtures import make_tiny_dataset

from pqb.harness.evaluation.data import load_config


def test_rebuilt_local_dataset_is_reloaded_not_served_from_cache(tmp_path) -> None:
    root = make_tiny_dataset(tmp_path / "pqb_dataset")
    first = load_config(str(root), "video_games").to_list()
    path = root / "data" / "video_games" / "test-00000-of-00001.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 2), path)  # "rebuild": same folder, same card, other rows
    second = load_config(str(root), "video_games").to_list()
    assert len(first) == table.num_rows > 2
    assert second == first[:2]


def test_two_folders_with_the_same_name_do_not_share_a_cache(tmp_path) -> None:
    a = make_tiny_dataset(tmp_path / "a" / "pqb_dataset")
    b = make_tiny_dataset(tmp_path / "b" / "pqb_dataset")
    path = b / "data" / "video_games" / "test-00000-of-00001.parquet"
    rows = pq.read_table(path)
    pq.write_table(pa.concat_tables([rows, rows.slice(0, 1)]), path)
    assert len(load_config(str(a), "video_games")) + 1 == len(load_config(str(b), "video_games"))


def test_config_declared_but_missing_is_a_recorded_skip_not_a_crash(tmp_path) -> None:
    import pytest

    from pqb.harness.errors import DatasetNotFoundError

    root = make_tiny_dataset(tmp_path / "pqb_dataset")
    card = (root / "README.md").read_text()
    extra = "- config_name: video_games-release\n  data_files:\n  - split: test\n    path: data/video_games-release/test-00000-of-00001.parquet\n"
    # appended last, like the real card's local-only release configs
    (root / "README.md").write_text(card.replace("---\n\n# PQB", extra + "---\n\n# PQB", 1))
    with pytest.raises(DatasetNotFoundError, match=r"declared .* but its data files are missing"):
        load_config(str(root), "video_games-release")


def test_run_cache_reads_each_shard_array_once(tmp_path) -> None:
    """Entries of one shard share one decompressed array; re-reading per entry made large caches
    (10k entries) allocate tens of GB and get the process killed."""
    import numpy as np

    from pqb.harness.evaluation.run_cache import RankEntry, RunCache

    cache = RunCache(tmp_path, {"model": "x"}, "fp", depth=5)
    items = [
        (f"q{i}", "A1", RankEntry(float(i + 1), False, np.arange(5), np.ones(5, np.float32)))
        for i in range(50)
    ]
    assert cache.add(items) == 50
    loaded = RunCache(tmp_path, {"model": "x"}, "fp", depth=5)
    first, second = loaded.get("q0", "A1"), loaded.get("q1", "A1")
    assert first is not None and second is not None and second.rank == 2.0
    assert first.top_idx.base is not None and first.top_idx.base is second.top_idx.base
