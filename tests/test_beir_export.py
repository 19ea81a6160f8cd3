"""``pqb-harness export-beir`` writes a folder that ``beir``'s own ``GenericDataLoader`` reads, equal to
the dataset's views (the committed build)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pqb.builders.publish.tables import config_path
from pqb.dataset import settings
from pqb.harness.cli import main

DS = settings.REPO_ROOT / "pqb_dataset"
pytestmark = pytest.mark.skipif(
    not config_path(DS, "video_games-corpus").exists(),
    reason="pqb_dataset/ has not been built (run pqb-build)",
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("beir") / "pqb_video_games"
    assert main(["export-beir", "--domain", "video_games", "--dataset_path", str(DS), "--out", str(out)]) == 0
    return out


def test_beir_generic_data_loader_reads_the_export(exported: Path) -> None:
    pytest.importorskip("beir", reason="beir is in the dev extra")
    from beir.datasets.data_loader import GenericDataLoader

    corpus, queries, qrels = GenericDataLoader(data_folder=str(exported)).load(split="test")
    docs = pq.read_table(config_path(DS, "video_games-corpus")).to_pylist()
    assert corpus == {d["id"]: {"title": d["title"], "text": d["text"]} for d in docs}
    views = pq.read_table(config_path(DS, "video_games-queries")).to_pylist()
    assert queries == {q["id"]: q["text"] for q in views}
    rels = pq.read_table(config_path(DS, "video_games-qrels")).to_pylist()
    assert qrels == {r["query-id"]: {r["corpus-id"]: r["score"]} for r in rels}


def test_export_follows_the_documented_format(exported: Path) -> None:
    """BEIR's format, checked without beir: jsonl with _id/title/text and _id/text, a headed TSV."""
    import json

    first = json.loads((exported / "corpus.jsonl").read_text().splitlines()[0])
    assert list(first) == ["_id", "title", "text"]
    assert list(json.loads((exported / "queries.jsonl").read_text().splitlines()[0])) == ["_id", "text"]
    lines = (exported / "qrels" / "test.tsv").read_text().splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore" and all(len(x.split("\t")) == 3 for x in lines)


def test_export_is_deterministic(exported: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert (
        main(["export-beir", "--domain", "video_games", "--dataset_path", str(DS), "--out", str(again)]) == 0
    )
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (again / name).read_bytes() == (exported / name).read_bytes()


def test_unknown_domain_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["export-beir", "--domain", "beauty", "--dataset_path", str(DS), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "'beauty-corpus' not found" in err[0] and "pqb-build" in err[0]
