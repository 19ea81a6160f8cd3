"""Loading local datasets: a rebuilt folder (same name, new bytes) must never be served from a stale cache."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pqb_fixtures import make_tiny_dataset

from harness.data import load_config


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
