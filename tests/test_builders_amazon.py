"""Readers on hand-written official-format lines; local and (mocked) Hub sources."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from builders import amazon
from builders.amazon import (
    HubSource,
    LocalSource,
    MalformedLineError,
    ReadStats,
    iter_meta,
    iter_reviews,
    join_reviews_meta,
    resolve_source,
)

REVIEWS = [
    json.dumps({"rating": 5.0, "title": "Great", "text": "Works well.<br />Love it.", "images": [],
                "asin": "B01", "parent_asin": "P1", "user_id": "U1", "timestamp": 1}),
    "{not json",
    json.dumps({"rating": 4.0, "text": "No title here.", "parent_asin": "P2", "user_id": "U1"}),
    "",
    json.dumps({"rating": 3.0, "title": "x", "parent_asin": "P1", "user_id": "U2"}),  # no text: skipped
    json.dumps([1, 2, 3]),  # valid JSON, not an object
    json.dumps({"text": "Orphan.", "parent_asin": "P9", "user_id": "U3", "asin": "P9"}),
]  # fmt: skip
META = [
    json.dumps({"parent_asin": "P1", "title": "Pad", "details": {"Brand": "Acme"}, "features": ["Red"],
                "images": [{"large": "x"}], "videos": []}),
    json.dumps({"parent_asin": "P2", "title": "Stick", "price": 9.99}),
    json.dumps({"title": "No asin"}),
    "]]",
]  # fmt: skip


def _write(path: Path, lines: list[str], gz: bool = False) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    if gz:
        path = path.with_suffix(path.suffix + ".gz")
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_reviews_counts_malformed_and_missing(tmp_path: Path, gz: bool) -> None:
    p = _write(tmp_path / "Video_Games.jsonl", REVIEWS, gz)
    st = ReadStats()
    recs = list(iter_reviews(p, st))
    assert [r["user_id"] for r in recs] == ["U1", "U1", "U3"]
    assert recs[1]["title"] is None and recs[1]["asin"] is None
    assert st.lines == 6 and st.records == 3
    assert st.counts["malformed"] == 2 and st.counts["missing_required"] == 1 and st.dropped == 3
    assert st.missing["text"] == 1 and st.missing["title"] == 2 and st.missing["timestamp"] == 3
    assert st.as_dict()["examples"] == {
        "malformed": [f"{p.name}:2: malformed line (Expecting property name enclosed in double quotes at "
                      "column 2)", f"{p.name}:6: malformed line (expected a JSON object, got list)"],
        "missing_required": [f"{p.name}:5: required field 'text' is missing"],
    }  # fmt: skip


def test_strict_raises_with_location(tmp_path: Path) -> None:
    p = _write(tmp_path / "Video_Games.jsonl", REVIEWS)
    with pytest.raises(MalformedLineError, match=r"Video_Games.jsonl:2"):
        list(iter_reviews(p, ReadStats(), strict=True))


def test_meta_keeps_used_fields_and_joins(tmp_path: Path) -> None:
    p = _write(tmp_path / "meta_Video_Games.jsonl", META, gz=True)
    st = ReadStats()
    meta = {m["parent_asin"]: m for m in iter_meta(p, st)}
    assert set(meta) == {"P1", "P2"} and "images" not in meta["P1"]
    assert st.counts["malformed"] == 1 and st.counts["missing_required"] == 1
    assert st.missing["details"] == 2  # P2 and the no-asin record
    rev = _write(tmp_path / "Video_Games.jsonl", REVIEWS)
    from collections import Counter

    c: Counter[str] = Counter()
    pairs = list(join_reviews_meta(iter_reviews(rev, ReadStats()), meta, c))
    assert [m["title"] if m else None for _, m in pairs] == ["Pad", "Stick", None]
    assert c == {"joined": 2, "no_meta": 1}


def test_local_source_prefers_plain_then_gz(tmp_path: Path) -> None:
    _write(tmp_path / "Video_Games.jsonl", REVIEWS, gz=True)
    _write(tmp_path / "meta_Video_Games.jsonl", META)
    src = resolve_source(tmp_path)
    assert isinstance(src, LocalSource)
    assert src.reviews_path("Video_Games").name == "Video_Games.jsonl.gz"
    assert src.meta_path("Video_Games").name == "meta_Video_Games.jsonl"
    with pytest.raises(amazon.SourceFileNotFoundError, match="Baby_Products"):
        src.reviews_path("Baby_Products")


def test_default_source_reads_settings_at_call_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pqb_dataset import settings

    monkeypatch.setattr(settings, "PQB_AMAZON_DIR", tmp_path)
    assert resolve_source(None) == LocalSource(tmp_path)


def test_hub_source_downloads_declared_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict] = []
    review_file = _write(tmp_path / "dl.jsonl", REVIEWS)

    def fake_download(**kw: object) -> str:
        calls.append(dict(kw))
        return str(review_file)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    src = resolve_source("hub@abc123")
    assert isinstance(src, HubSource) and src.repo_id == "McAuley-Lab/Amazon-Reviews-2023"
    assert src.reviews_path("Video_Games") == review_file
    src.meta_path("Video_Games")
    assert calls[0]["filename"] == "raw/review_categories/Video_Games.jsonl"
    assert calls[1]["filename"] == "raw/meta_categories/meta_Video_Games.jsonl"
    assert all(c["revision"] == "abc123" and c["repo_type"] == "dataset" for c in calls)
    assert len(list(iter_reviews(src.reviews_path("Video_Games"), ReadStats()))) == 3


def test_unknown_source_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(amazon.SourceFileNotFoundError, match="neither 'hub'"):
        resolve_source(tmp_path / "nope")
