"""Fuzzing the Amazon readers: whatever the bytes, a reader yields valid records and counts every other
line, or raises the project's one-line data error naming the file; never another exception, never a
silent loss (``records + dropped == non-blank lines``)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pqb.builders.errors import CorruptFileError, DataError, MalformedLineError
from pqb.builders.source.amazon import (
    FIELD_TYPES,
    MAX_TEXT_CHARS,
    META_FIELDS,
    REQUIRED_META_FIELDS,
    REQUIRED_REVIEW_FIELDS,
    REVIEW_FIELDS,
    ReadStats,
    iter_meta,
    iter_reviews,
)

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ids = st.sampled_from(["U1", "U2", "P1", "P2", "", " "])
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["Works well. Love it.", "Works well. Love it."]),  # duplicates on purpose
    st.integers(MAX_TEXT_CHARS - 10, MAX_TEXT_CHARS + 3000).map(lambda n: ("Word word. " * n)[:n]),
)


@st.composite
def records(draw: st.DrawFn, fields: tuple[str, ...]) -> dict[str, Any]:
    """A plausible record whose fields are, at random, absent, well-typed or of any JSON type."""
    rec: dict[str, Any] = {}
    for k in fields:
        choice = draw(st.integers(0, 4))
        if choice == 0:
            continue
        if choice == 4:
            rec[k] = draw(json_values)
        elif k == "text":
            rec[k] = draw(texts)
        elif FIELD_TYPES[k] == (str,):
            rec[k] = draw(ids)
        else:
            rec[k] = draw(json_values)
    return rec


def lines(fields: tuple[str, ...]) -> st.SearchStrategy[bytes]:
    """One line's bytes (no newline): a record, a record cut short, random bytes, odd JSON."""
    as_json = records(fields).map(lambda r: json.dumps(r).encode())
    return st.one_of(
        as_json,
        as_json,
        st.tuples(as_json, st.integers(0, 200)).map(lambda t: t[0][: t[1]]),
        st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
        st.sampled_from(
            [
                b"",
                b"  ",
                b"[1, 2]",
                b'"text"',
                b"[" * 5000,
                b'{"a": ' + b"9" * 5000 + b"}",
                b'{"user_id": "U1", "parent_asin": "P1", "text": "bad \\ud800 escape"}',
                b'{"user_id": "U1", "parent_asin": "P1", "text": "caf\xe9 in latin-1"}',
            ]
        ),
        as_json.map(lambda b: b + b"\xff"),
    )


def files(fields: tuple[str, ...]) -> st.SearchStrategy[bytes]:
    return st.lists(lines(fields), max_size=12).map(lambda ls: b"\n".join(ls))


def _nonblank(data: bytes) -> int:
    return sum(1 for line in data.split(b"\n") if line.strip())


def _check_record(rec: dict[str, Any], fields: tuple[str, ...], required: tuple[str, ...]) -> None:
    assert set(rec) == set(fields)
    for k in required:
        assert isinstance(rec[k], str) and rec[k].strip()
    for k, v in rec.items():
        assert v is None or (
            isinstance(v, FIELD_TYPES[k]) and (bool in FIELD_TYPES[k] or not isinstance(v, bool))
        )
    json.dumps(rec, ensure_ascii=False).encode("utf-8")  # writable as UTF-8: no lone surrogates
    if "text" in required:
        assert len(rec["text"]) <= MAX_TEXT_CHARS


def _read(
    reader: Callable[..., Iterator[dict]], path: Path, strict: bool = False
) -> tuple[list[dict], ReadStats, Exception | None]:
    stats, out = ReadStats(), []
    try:
        for rec in reader(path, stats, strict=strict):
            out.append(rec)
    except DataError as exc:
        return out, stats, exc
    return out, stats, None


READERS = [
    pytest.param(iter_reviews, REVIEW_FIELDS, REQUIRED_REVIEW_FIELDS, id="reviews"),
    pytest.param(iter_meta, META_FIELDS, REQUIRED_META_FIELDS, id="meta"),
]


def _write(folder: Path, data: bytes, name: str) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("reader", "fields", "required"), READERS)
def test_every_line_is_a_record_or_counted(tmp_path: Path, reader: Any, fields: Any, required: Any) -> None:
    @FUZZ
    @given(data=files(fields))
    def check(data: bytes) -> None:
        path = _write(tmp_path, data, "Video_Games.jsonl")
        recs, stats, exc = _read(reader, path)
        assert exc is None  # a plain file is always readable to its end
        for r in recs:
            _check_record(r, fields, required)
        assert stats.records == len(recs)
        assert stats.lines == _nonblank(data) == stats.records + stats.dropped
        assert all(
            len(v) <= 5 and all(w.startswith("Video_Games.jsonl:") for w in v)
            for v in stats.examples.values()
        )

    check()


@pytest.mark.parametrize(("reader", "fields", "required"), READERS)
def test_strict_raises_a_located_error_or_counts_nothing(
    tmp_path: Path, reader: Any, fields: Any, required: Any
) -> None:
    @FUZZ
    @given(data=files(fields))
    def check(data: bytes) -> None:
        path = _write(tmp_path, data, "Video_Games.jsonl")
        _, stats, exc = _read(reader, path, strict=True)
        if exc is None:
            assert sum(stats.counts.values()) == stats.counts["duplicate"]
            assert stats.lines == stats.records + stats.counts["duplicate"]
        else:
            assert isinstance(exc, MalformedLineError)
            assert str(exc).startswith(f"{path}:") and "\n" not in str(exc)

    check()


@pytest.mark.parametrize(("reader", "fields", "required"), READERS)
def test_gz_cut_anywhere(tmp_path: Path, reader: Any, fields: Any, required: Any) -> None:
    @FUZZ
    @given(data=files(fields), cut=st.floats(0, 1), garbage=st.booleans())
    def check(data: bytes, cut: float, garbage: bool) -> None:
        packed = gzip.compress(data, mtime=0)
        packed = packed[: int(len(packed) * cut)] + (b"\x00garbage" if garbage else b"")
        path = _write(tmp_path, packed, "Video_Games.jsonl.gz")
        recs, stats, exc = _read(reader, path)
        for r in recs:
            _check_record(r, fields, required)
        assert stats.lines == stats.records + stats.dropped  # also for what was read before an error
        if exc is not None:
            assert isinstance(exc, CorruptFileError)
            assert str(exc).startswith(f"{path}:") and "download it again" in str(exc)
        else:
            assert stats.lines == _nonblank(data)

    check()


def test_random_bytes_as_gz_is_a_corrupt_file_error(tmp_path: Path) -> None:
    path = tmp_path / "meta_Video_Games.jsonl.gz"
    path.write_bytes(b'{"parent_asin": "P1"}\n')
    with pytest.raises(CorruptFileError, match=r"meta_Video_Games\.jsonl\.gz:1: .*BadGzipFile"):
        list(iter_meta(path, ReadStats()))
