"""bench/loadtest_data.py: LOAD TEST data resampled from the real slice is labelled as such and passes the
PQB schema and invariants (so ``pqb-harness run`` accepts it for timing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pqb.dataset.schema import check_rows

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import loadtest_data as lt  # noqa: E402


@pytest.mark.skipif(not lt.DEFAULT_META.is_file() or not lt.DEFAULT_ROWS.is_file(),
                    reason="needs the real Video_Games slice and a built pqb_dataset/")  # fmt: skip
def test_loadtest_dataset_is_labelled_and_valid(tmp_path):
    out = lt.write(tmp_path / "lt", n_docs=400, n_pairs=30)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.count(lt.LABEL) >= 2
    corpus = pq.read_table(out / "data" / lt.CORPUS_CONFIG / "test-00000-of-00001.parquet").to_pylist()
    rows = pq.read_table(out / "data" / lt.ROWS_CONFIG / "test-00000-of-00001.parquet").to_pylist()
    assert len(corpus) == 400 and len(rows) == 60
    assert all(d["id"].startswith("LOADTEST") for d in corpus)
    assert all(r["id"].startswith("loadtest:") and r["user_id"].startswith("loadtest_user") for r in rows)
    report = check_rows(rows, config=lt.ROWS_CONFIG, corpus_ids={d["id"] for d in corpus})
    assert report.ok, report.violations[:3]
    again = lt.write(tmp_path / "again", n_docs=400, n_pairs=30)  # seeded: the same bytes
    assert pq.read_table(again / "data" / lt.ROWS_CONFIG / "test-00000-of-00001.parquet").equals(
        pq.read_table(out / "data" / lt.ROWS_CONFIG / "test-00000-of-00001.parquet")
    )
