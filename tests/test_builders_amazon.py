"""Readers on hand-written official-format lines; local and (mocked) Hub sources."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pqb.builders.errors import MalformedLineError
from pqb.builders.source import amazon
from pqb.builders.source.amazon import (
    HubSource,
    LocalSource,
    ReadStats,
    iter_meta,
    iter_reviews,
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


def test_meta_keeps_used_fields(tmp_path: Path) -> None:
    p = _write(tmp_path / "meta_Video_Games.jsonl", META, gz=True)
    st = ReadStats()
    meta = {m["parent_asin"]: m for m in iter_meta(p, st)}
    assert set(meta) == {"P1", "P2"} and "images" not in meta["P1"]
    assert st.counts["malformed"] == 1 and st.counts["missing_required"] == 1
    assert st.missing["details"] == 2  # P2 and the no-asin record


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
    from pqb.dataset import settings

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


def _review(user: str, asin: str, text: str) -> str:
    return json.dumps({"user_id": user, "parent_asin": asin, "text": text})


def test_reviews_are_deduplicated_on_user_product_text(tmp_path: Path) -> None:
    once = [_review("U1", "P1", "Same words."), _review("U1", "P2", "Same words."),  # other product: kept
            _review("U2", "P1", "Same words."), _review("U1", "P1", "Other words.")]  # fmt: skip
    p = _write(tmp_path / "Video_Games.jsonl", once + once)
    st = ReadStats()
    recs = list(iter_reviews(p, st))
    assert [(r["user_id"], r["parent_asin"], r["text"]) for r in recs] == [
        ("U1", "P1", "Same words."), ("U1", "P2", "Same words."), ("U2", "P1", "Same words."),
        ("U1", "P1", "Other words."),
    ]  # fmt: skip
    assert st.counts["duplicate"] == 4 and st.lines == 8 == st.records + st.dropped
    assert st.examples["duplicate"][0] == "Video_Games.jsonl:5: same user_id, parent_asin, text as line 1"
    assert list(iter_reviews(p, ReadStats(), strict=True)) == recs  # a duplicate is not a bad line


def test_ingest_of_a_doubled_file_equals_ingest_of_the_file(tmp_path: Path) -> None:
    from pqb.builders.config import BuildConfig
    from pqb.builders.source.stage import run_ingest
    from pqb.builders.workdir import WorkDir, read_parquet

    lines = [_review(f"U{i % 3}", f"P{i % 5}", f"Review number {i}. It works.") for i in range(30)]
    tables = {}
    for name, content in (("once", lines), ("twice", lines + lines)):
        (tmp_path / name).mkdir()
        _write(tmp_path / name / "Video_Games.jsonl", content)
        _write(tmp_path / name / "meta_Video_Games.jsonl", META)
        stats = run_ingest(
            WorkDir(tmp_path / f"work_{name}", "video_games"), BuildConfig(source=tmp_path / name)
        )
        tables[name] = read_parquet(tmp_path / f"work_{name}" / "video_games" / "reviews.parquet")
        assert stats["reviews"] == 30 and stats["reviews_read"]["duplicate"] == len(content) - 30
    assert tables["once"].equals(tables["twice"])


def test_invalid_utf8_line_is_dropped_counted_and_located(tmp_path: Path) -> None:
    p = tmp_path / "Video_Games.jsonl"
    p.write_bytes(
        f"{REVIEWS[0]}\n".encode() + b'{"user_id": "U9", "parent_asin": "P1", "text": "Bad \xff here."}\n'
    )
    st = ReadStats()
    assert [r["user_id"] for r in iter_reviews(p, st)] == ["U1"]  # no U+FFFD sentence reaches a profile
    assert st.counts["invalid_utf8"] == 1
    assert st.examples["invalid_utf8"] == [
        "Video_Games.jsonl:2: invalid UTF-8 at byte 52 (invalid start byte)"
    ]
    with pytest.raises(MalformedLineError, match=r"Video_Games\.jsonl:2: invalid UTF-8 .*without --strict"):
        list(iter_reviews(p, ReadStats(), strict=True))


def test_overlong_text_is_cut_at_a_sentence_end_and_counted(tmp_path: Path) -> None:
    text = "A short sentence here. " * (amazon.MAX_TEXT_CHARS // 10)
    p = _write(tmp_path / "Video_Games.jsonl", [_review("U1", "P1", text)])
    st = ReadStats()
    (rec,) = iter_reviews(p, st)
    assert len(rec["text"]) <= amazon.MAX_TEXT_CHARS and rec["text"].endswith("here.")
    assert st.counts["truncated"] == 1 and st.examples["truncated"][0].startswith(
        "Video_Games.jsonl:1: text of"
    )
    assert amazon.truncate_text("x" * 30, 10) == "x" * 10  # no space at all: a hard cut
    assert amazon.truncate_text("one two three four", 12) == "one two"  # no sentence end: whole words


def test_wrong_typed_optional_field_reads_as_missing(tmp_path: Path) -> None:
    line = json.dumps(
        {"user_id": "U1", "parent_asin": "P1", "text": "Fine.", "rating": "five", "timestamp": True}
    )
    st = ReadStats()
    (rec,) = iter_reviews(_write(tmp_path / "Video_Games.jsonl", [line]), st)
    assert rec["rating"] is None and rec["timestamp"] is None and st.counts["wrong_type"] == 2
    assert st.examples["wrong_type"][0] == "Video_Games.jsonl:1: field 'rating' is str, expected int or float"


def _meta(asin: str, title: str | None, **more: object) -> str:
    return json.dumps({"parent_asin": asin, **({"title": title} if title is not None else {}), **more})


def test_meta_duplicates_are_counted_with_their_line_and_a_conflict_fails_strict(tmp_path: Path) -> None:
    """Ingest skipped a repeated ``parent_asin`` through a bare counter: no ``file:line``, ``--strict``
    passed even when the repeat described another product, and the read summary claimed the repeat as
    a usable record."""
    lines = [_meta("P1", "Pad", price=9.0), _meta("P2", "Stick"), _meta("P1", "Pad", price=9.0),
             _meta("P1", "COMPLETELY DIFFERENT PRODUCT")]  # fmt: skip
    p = _write(tmp_path / "meta_Video_Games.jsonl", lines)
    st = ReadStats()
    recs = list(iter_meta(p, st))
    assert [(r["parent_asin"], r["title"]) for r in recs] == [("P1", "Pad"), ("P2", "Stick")]  # first kept
    assert st.counts["duplicate"] == 2 and st.lines == 4 == st.records + st.dropped and st.records == 2
    assert st.examples["duplicate"] == [
        f"{p.name}:3: same record as line 1 (parent_asin 'P1')",
        f"{p.name}:4: parent_asin 'P1' again, with other content than line 1",
    ]
    assert amazon.read_summary(st.as_dict()) == "4 lines -> 2 records (duplicate=2)"
    identical = _write(tmp_path / "meta_Identical.jsonl", lines[:3])
    assert len(list(iter_meta(identical, ReadStats(), strict=True))) == 2  # an identical repeat is no error
    with pytest.raises(MalformedLineError, match=rf"{p}:4: parent_asin 'P1' again, with other content than "
                       r"line 1; fix the line, or rerun without --strict to skip it \(the first record"):  # fmt: skip
        list(iter_meta(p, ReadStats(), strict=True))


def test_meta_records_the_caller_cannot_use_are_counted_before_duplicates(tmp_path: Path) -> None:
    lines = [_meta("P1", ""), _meta("P1", "Pad"), _meta("P2", None)]
    p = _write(tmp_path / "meta_Video_Games.jsonl", lines)
    st = ReadStats()

    def titled(rec: dict) -> str | None:
        return None if rec["title"] else "no title"

    assert [r["title"] for r in iter_meta(p, st, usable=titled)] == ["Pad"]  # not hidden by the title-less P1
    assert st.examples == {"missing_required": [f"{p.name}:1: no title", f"{p.name}:3: no title"]}
    assert st.records == 1 and st.lines == st.records + st.dropped
    with pytest.raises(MalformedLineError, match=rf"{p}:1: no title"):
        list(iter_meta(p, ReadStats(), strict=True, usable=titled))
