"""Golden test of the committed ``pqb_dataset/`` (ir_datasets style): row counts and pinned rows.

Changing the data (a builder change, a new seed, a new source) must change this file on purpose.
The committed build is the embedded default: ``pqb-build`` on ../shared/data/amazon2023-mini.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from builders.publish import check_dataset, config_path
from pqb_dataset import settings

DS = settings.REPO_ROOT / "pqb_dataset"
COUNTS = {
    "video_games": 304,
    "video_games-corpus": 1488,
    "video_games-queries": 595,
    "video_games-qrels": 595,
    "video_games-users": 81,
}
ROWS = {
    0: ("video_games:B00000K1V7:u_1e0bc479b22a8779",
        "from sony, i need the acclaim studios cd-rom item featuring analog control compatible and rated mature.",
        "from sony, i need the acclaim studios cd-rom item featuring analog control compatible and rcted mature.",
        ["Sony", "CD-ROM", "Mature", "Acclaim Studios", "Analog Control Compatible"]),
    101: ("video_games:B07B3RPWKK:u_7d29b64671570223",
          "Show me a Corsair Aluminum item for PC, in the Keyboard Only style, and in Black.",
          "Show me a Corsair Aluminum itek for PC, in the Keyboard Only style, and in Black.",
          ["Corsair", "Black", "Aluminum", "Keyboard Only", "PC"]),
    267: ("video_games:B0B5WZV7YQ:u_da115b6ec67f0ec0",
          "Can you find me a White DESTEK item for Adult, with Fast Charging, and with USB?",
          "Can you find me a White DESTEK itaem for Adult, with Fast Charging, and with USB?",
          ["DESTEK", "White", "USB", "Fast Charging", "Adult"]),
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


def test_corpus_and_users_ends() -> None:
    corpus = pq.read_table(config_path(DS, "video_games-corpus")).column("id").to_pylist()
    assert (corpus[0], corpus[-1]) == ("1438011032", "B0CH145H9N")
    users = pq.read_table(config_path(DS, "video_games-users")).to_pylist()
    assert (users[0]["user_id"], users[0]["n_sentences"]) == ("u_002ca7a40466822c", 75)
    assert users[0]["threshold"] == pytest.approx(95.694920, abs=1e-6)


def test_committed_dataset_passes_every_invariant() -> None:
    configs = [c for c in COUNTS]
    report = check_dataset(DS, configs)
    assert report.ok, report.summary()
