"""The slip detector's labelled sets: where they live, how a row is read and keyed.

Shared by the scorer (:mod:`pqb.builders.reports.detector_eval`) and the builder of the test set's
universe (:mod:`pqb.builders.reports.detector_sets`). A row names its token by category, a fragment of
the sentence (up to :data:`WINDOW` characters either side) and the token's offset in that fragment, and
its writer by :func:`user_key`, never by the raw id.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

LABELS = Path(__file__).resolve().parents[2] / "tests" / "data" / "detector_labels.jsonl"
HELDOUT = LABELS.with_name("detector_labels_heldout.jsonl")
TEST = LABELS.with_name("detector_labels_test.jsonl")
SETS = {"test": TEST, "heldout": HELDOUT, "dev": LABELS}
"""The three labelled sets, by the name ``detector_quality.json`` files them under."""
WINDOW = 30


def load_labels(path: Path = LABELS) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header object and the label rows."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]


def user_key(user_id: str) -> str:
    """The labels' user field: the first 8 hex digits of sha1(user_id) (no raw ids in the repository)."""
    return hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:8]


def fragment_key(category: str, sentence: str, start: int, token: str) -> tuple[str, str, int]:
    lo = max(0, start - WINDOW)
    return category, sentence[lo : min(len(sentence), start + len(token) + WINDOW)], start - lo
