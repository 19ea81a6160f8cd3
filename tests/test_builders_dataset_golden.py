"""Golden test of the committed ``pqb_dataset/`` (ir_datasets style): row counts and pinned rows.

Changing the data (a builder change, a new seed, a new source) must change this file on purpose.
The committed build is the embedded default: ``pqb-build`` on the offline slice at ``$PQB_AMAZON_DIR``.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pqb.builders.publish.layout import config_path
from pqb.builders.publish.tables import check_dataset
from pqb.dataset import settings

DS = settings.REPO_ROOT / "pqb_dataset"
COUNTS = {
    "video_games": 192,
    "video_games-corpus": 1488,
    "video_games-queries": 384,
    "video_games-qrels": 384,
    "video_games-users": 69,
}
ROWS = {
    0: ('video_games:B00006I5CY:u_3f952eec5f84030f', 'Where can I get the rumble gamepad by InterAct that is compatible with Windows and PC?', 'Where can I get the rumble gamepad by InierAct that is compatible with Windows and PC?', ['InterAct', 'Windows', 'Gamepad', 'Rumble', 'PC']),
    101: ('video_games:B08NCKZJQD:u_c509de16d61b64ec', "Ideally from OKKID. I want to buy a modern Bluetooth keyboard for Windows that's wireless.", "Ideally from OKKID. I want to buy a modern Blueototh keyboard for Windows that's wireless.", ['OKKID', 'Modern', 'Bluetooth', 'Wireless', 'Windows']),
    191: ('video_games:B0C4YQ6W6H:u_e45e7cd9ed18d805', 'Purple optical mouse for PC that is from Trueque. Does it connect via USB', 'Purple optical mouse for PC that is from Trueqeu. Does it connect via USB', ['Trueque', 'Purple', 'USB', 'Optical', 'PC']),
}  # fmt: skip

pytestmark = pytest.mark.skipif(
    not config_path(DS, "video_games").exists(), reason="pqb_dataset/ has not been built (run pqb-build)"
)


@pytest.mark.parametrize("config", sorted(COUNTS))
def test_row_counts(config: str) -> None:
    assert pq.read_table(config_path(DS, config)).num_rows == COUNTS[config]


@pytest.mark.parametrize("index", sorted(ROWS))
def test_pinned_rows(index: int) -> None:
    row = pq.read_table(config_path(DS, "video_games")).slice(index, 1).to_pylist()[0]
    assert (row["id"], row["query"], row["error_query"], row["core_terms"]) == ROWS[index]


CHAINS = {  # issues 12 and 29: the stored 3-edit chains of the pinned rows (the dose is a prefix)
    0: [('InterAct', 'InierAct', 'brand'), ('gamepad', 'gamead', 'core_term'), ('get', 'gat', 'content_word')],
    37: [('Ideally', 'Ieally', 'content_word'), ('headset', 'hedset', 'title_word'), ('have', 'hvae', 'content_word')],
    101: [('Bluetooth', 'Blueototh', 'core_term'), ('OKKID', 'OKTID', 'brand'), ('keyboard', 'kybard', 'title_word')],
    191: [('Trueque', 'Trueqeu', 'brand'), ('connect', 'cnonsct', 'content_word'), ('USB', 'UOSB', 'core_term')],
}  # fmt: skip


@pytest.mark.parametrize("index", sorted(CHAINS))
def test_pinned_chains(index: int) -> None:
    row = pq.read_table(config_path(DS, "video_games")).slice(index, 1).to_pylist()[0]
    assert [(e["original"], e["edited"], e["location"]) for e in row["error_chain"]] == CHAINS[index]
    assert row["error_edits"] == row["error_chain"][: len(row["error_edits"])]


def test_corpus_and_users_ends() -> None:
    corpus = pq.read_table(config_path(DS, "video_games-corpus")).column("id").to_pylist()
    assert (corpus[0], corpus[-1]) == ("1438011032", "B0CH145H9N")
    users = pq.read_table(config_path(DS, "video_games-users")).to_pylist()
    assert (users[0]["user_id"], users[0]["n_sentences"]) == ('u_052123728ba698a3', 58)
    assert users[0]["threshold"] == pytest.approx(88.534841, abs=1e-6)


def test_pinned_corpus_document() -> None:
    """The corpus view: ``title`` apart, the body alone in ``text`` (BEIR/MTEB join them with a space)."""
    docs = {d["id"]: d for d in pq.read_table(config_path(DS, "video_games-corpus")).to_pylist()}
    doc = docs["1625040598"]
    assert doc["title"].startswith("Beautiful Holy Death Rosary With Prayer Book")
    assert doc["text"].split("\n")[:3] == [
        "brand: splins",
        "category: Video Games / PlayStation 4",
        "type of item: Gift",
    ]
    assert docs["1438011032"]["text"] == ""  # a title-only product: nothing but its title to read
    assert sum(not d["text"] for d in docs.values()) == 489


def test_shards_are_named_by_their_content() -> None:
    from pqb.dataset.io import sha256_file

    for config in COUNTS:
        path = config_path(DS, config)
        assert path.name == f"test-00000-of-00001-{sha256_file(path)[:16]}.parquet"


def test_committed_dataset_passes_every_invariant() -> None:
    configs = [c for c in COUNTS]
    report = check_dataset(DS, configs)
    assert report.ok, report.summary()
