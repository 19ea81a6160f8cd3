"""The BEIR/MTEB views (``<domain>-queries``, ``<domain>-qrels``) are checked before anything reads them:
``export-beir``, ``validate`` and the MTEB tasks refuse duplicate query ids, duplicate qrels, qrels to
documents outside the corpus and queries without a qrel (they once reached the BEIR files silently)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.errors import DatasetInvalidError


def _rewrite(ds: Path, config: str, edit) -> None:
    path = ds / "data" / config / "test-00000-of-00001.parquet"
    table = pq.read_table(path)
    pq.write_table(pa.Table.from_pylist(edit(table.to_pylist()), schema=table.schema), path)


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """The tiny dataset with one of each: a repeated query id, a repeated qrel, a qrel to an absent document,
    and a query (r3) whose qrel is gone."""
    ds = make_tiny_dataset(tmp_path / "ds")
    _rewrite(ds, "video_games-queries", lambda rows: [*rows, rows[0]])

    def qrels(rows: list[dict]) -> list[dict]:
        rows = [r for r in rows if r["query-id"] != "r3"]
        return [*rows, rows[0], {"query-id": "r2", "corpus-id": "NO-SUCH-DOC", "score": 1}]

    _rewrite(ds, "video_games-qrels", qrels)
    return ds


def test_export_beir_refuses_bad_views_and_writes_nothing(damaged, tmp_path, capsys):
    out = tmp_path / "beir"
    assert (
        main(["export-beir", "--domain", "video_games", "--dataset_path", str(damaged), "--out", str(out)])
        == 1
    )
    err = capsys.readouterr().err
    assert "the retrieval views of 'video_games' have 4 violation(s)" in err
    assert "video_games-queries[15]: duplicate_query_id: 1 duplicate query id(s), e.g. ['r1']" in err
    assert "duplicate_qrel: 1 duplicate (query-id, corpus-id) qrel(s), e.g. ['r1 -> G01']" in err
    assert (
        "qrel_unknown_document: 1 qrel(s) to a document not in video_games-corpus, e.g. ['r2 -> NO-SUCH-DOC']"
        in err
    )
    assert "query_without_qrels: 1 query(ies) without a qrel in video_games-qrels, e.g. ['r3']" in err
    assert not out.exists()


def test_validate_checks_the_views(damaged, capsys):
    assert main(["validate", "--tasks", "pqb_error_video_games", "--dataset_path", str(damaged)]) == 1
    out = capsys.readouterr().out
    assert "video_games-queries + video_games-qrels" in out and "4 violation(s)" in out
    assert "qrel_unknown_document" in out and "query_without_qrels" in out


def test_mteb_tasks_refuse_bad_views(damaged):
    pytest.importorskip("mteb", reason="mteb is an optional extra")
    from pqb.harness.integrations.mteb_tasks import pqb_tasks

    with pytest.raises(DatasetInvalidError, match="duplicate_query_id"):
        pqb_tasks(str(damaged))


def test_good_views_export_and_validate(tmp_path, capsys):
    ds = make_tiny_dataset(tmp_path / "ds")
    out = tmp_path / "beir"
    assert main(["export-beir", "--domain", "video_games", "--dataset_path", str(ds), "--out", str(out)]) == 0
    assert len((out / "queries.jsonl").read_text().splitlines()) == 9 + 6  # clean queries + error queries
    assert main(["validate", "--tasks", "pqb_error_video_games", "--dataset_path", str(ds)]) == 0
    assert "qrels': 15" in capsys.readouterr().out
