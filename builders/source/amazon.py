"""Streaming readers for Amazon Reviews 2023 (`<Category>.jsonl[.gz]`, `meta_<Category>.jsonl[.gz]`).

The real category files are gigabytes, so nothing here loads a whole file: records are yielded line by
line and only the fields PQB uses are kept. Input is never trusted, and nothing is lost silently: every
non-blank line is either yielded as a record or counted under one kind in :class:`ReadStats` (the
first :data:`MAX_EXAMPLES` ``file:line`` locations of each kind are kept), so
``stats.lines == stats.records + dropped`` always holds. The rules, per line:

* not UTF-8 → dropped (``invalid_utf8``): a decoder's U+FFFD replacements would put broken sentences
  into a user's profile, and the rest of such a line cannot be trusted either; a JSON ``\ud800``
  escape that leaves an unpaired surrogate counts the same (it cannot be written as UTF-8);
* not a JSON object → dropped (``malformed``);
* a required field (reviews: ``user_id``, ``parent_asin``, ``text``; metadata: ``parent_asin``) absent,
  empty or not a string → dropped (``missing_required``);
* a review whose (``user_id``, ``parent_asin``, ``text``) equals an earlier line's → dropped
  (``duplicate``; the first occurrence is kept). The key is exact (text before any cleaning): the same
  user may legitimately post the same words about different products, and those stay;
* a metadata record whose ``parent_asin`` an earlier line had → dropped (``duplicate``; the first is
  kept), and under ``strict`` an error when its kept fields differ from the first one's (a conflict
  the file order would settle silently); ingest also drops title-less products (``missing_required``);
* an optional field of the wrong type (e.g. ``rating: "five"``) → read as missing (``wrong_type``);
* a review text over :data:`MAX_TEXT_CHARS` → cut at the last sentence end before the cap
  (``truncated``), so spaCy's ``max_length`` (E088) can never abort a later stage.

Missing optional fields are only tallied (``missing``): the offline slice lacks most metadata. Under
``strict=True`` every counted kind except an identical ``duplicate`` raises :class:`MalformedLineError` naming the
file and line instead. A file that cannot be read on (a ``.gz`` cut short, not gzip at all) raises
:class:`CorruptFileError` naming the file and the line reached, whatever ``strict`` says.

Sources are a local directory (official flat layout) or the Hugging Face Hub repo declared in
``sources.yaml``; the Hub path goes through :func:`huggingface_hub.hf_hub_download`, which the tests run
against a Hub stand-in on loopback (``tests/hub_server.py``): resolved to one commit, checked against the
Hub's checksums, and a transfer that fails ends in one error.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from pqb.builders.errors import (
    CorruptFileError,
    MalformedLineError,
    SourceFileNotFoundError,
    SourceUnavailableError,
)
from pqb.builders.text import MAX_TEXT_CHARS
from pqb.dataset import settings
from pqb.dataset.io import MAX_LINE_BYTES, capped_lines

SOURCES_YAML = Path(__file__).with_name("sources.yaml")

REVIEW_FIELDS = ("user_id", "parent_asin", "asin", "text", "title", "rating", "timestamp")
"""Review fields kept; ``user_id``, ``parent_asin`` and ``text`` are required (others may be missing)."""
REQUIRED_REVIEW_FIELDS = ("user_id", "parent_asin", "text")
META_FIELDS = (
    "parent_asin", "title", "main_category", "store", "details", "features", "description", "categories",
    "price", "average_rating", "rating_number",
)  # fmt: skip
"""Metadata fields kept (images, videos, bought_together are dropped while streaming)."""
REQUIRED_META_FIELDS = ("parent_asin",)
DEDUP_KEY = ("user_id", "parent_asin", "text")
"""Two reviews with equal values of these fields are one review (see the module docstring)."""

_NUMBER = (int, float)
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "user_id": (str,), "parent_asin": (str,), "asin": (str,), "text": (str,), "title": (str,),
    "rating": _NUMBER, "timestamp": _NUMBER, "main_category": (str,), "store": (str,), "details": (dict,),
    "features": (list,), "description": (list,), "categories": (list,), "price": (*_NUMBER, str),
    "average_rating": _NUMBER, "rating_number": _NUMBER,
}  # fmt: skip
"""The type each kept field must have (``bool`` never counts as a number); others are read as missing."""

"""Review texts are cut to at most this many characters. spaCy refuses texts over ``nlp.max_length``
(1,000,000; E088) and its parser needs about 1 GB per 100,000 characters; 20,000 is twice the longest
review of the embedded slice (10,205), so real reviews stay whole while one pathological line can
neither abort the users stage nor exhaust memory."""
MAX_EXAMPLES = 5
"""``file:line`` locations kept per kind of counted line."""
READER_VERSION = 2
"""Recorded in the ingest fingerprint: 2 = UTF-8 rule, dedup, text cap, field types."""

DROPPED_KINDS = ("malformed", "invalid_utf8", "missing_required", "duplicate")
"""Kinds of lines that yield no record."""
KEPT_KINDS = ("wrong_type", "truncated")
"""Kinds of records yielded altered (a field read as missing, a text cut)."""
_LENIENT_ACTION = {
    "malformed": "skip it",
    "invalid_utf8": "skip it",
    "missing_required": "skip it",
    "duplicate": "skip it (the first record is kept)",
    "wrong_type": "read the field as missing",
    "truncated": f"cut the text to {MAX_TEXT_CHARS} characters",
}
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")
_SPACE = re.compile(r"\s")


@dataclass
class ReadStats:
    """What a reader saw: non-blank lines, records yielded, counts per kind, and where they were."""

    path: str = ""
    lines: int = 0
    records: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        """Lines that yielded no record; ``lines == records + dropped``."""
        return sum(self.counts[k] for k in DROPPED_KINDS)

    def flag(self, kind: str, lineno: int, detail: str, *, strict: bool = False) -> None:
        """Count one line of ``kind`` and keep its location, or raise :class:`MalformedLineError`.

        Kept locations name the file without its folder (``path`` has that), so stats copied into the
        dataset card do not depend on where the source lives; the strict error names the full path.
        """
        if strict:
            raise MalformedLineError(
                f"{self.path}:{lineno}: {detail}; fix the line, or rerun without --strict to "
                f"{_LENIENT_ACTION[kind]} and count it"
            )
        self.counts[kind] += 1
        found = self.examples.setdefault(kind, [])
        if len(found) < MAX_EXAMPLES:
            found.append(f"{Path(self.path).name}:{lineno}: {detail}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": self.lines,
            "records": self.records,
            **{k: self.counts[k] for k in (*DROPPED_KINDS, *KEPT_KINDS)},
            "missing": dict(sorted(self.missing.items())),
            "examples": {k: list(v) for k, v in sorted(self.examples.items())},
        }


def read_summary(read: Mapping[str, Any]) -> str:
    """One line for a reader's stats (:meth:`ReadStats.as_dict`, e.g. from a manifest): lines, records
    and each non-zero count, e.g. ``1345 lines -> 1343 records (duplicate=2)``."""
    counted = [f"{k}={read[k]}" for k in (*DROPPED_KINDS, *KEPT_KINDS) if read.get(k)]
    return f"{read.get('lines', 0)} lines -> {read.get('records', 0)} records" + (
        f" ({', '.join(counted)})" if counted else ""
    )


def load_sources(path: Path = SOURCES_YAML) -> dict[str, Any]:
    """The declared sources (``sources.yaml``, shipped as package data)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _open_binary(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # type: ignore[return-value]


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, raw bytes)`` of a ``.jsonl`` or ``.jsonl.gz`` file, streaming.

    Bytes, not text: decoding is per line so that one bad line is counted, not silently repaired. A
    stream that ends early or is not gzip raises :class:`CorruptFileError` naming the file. A line over
    :data:`~pqb.dataset.io.MAX_LINE_BYTES` is never held: its bytes are ``None`` (:func:`capped_lines`).
    """
    p = Path(path)
    if p.suffix == ".gz" and p.stat().st_size == 0:  # gzip reads an empty file as empty data
        raise CorruptFileError(f"{p}:1: the file is empty, not gzip (even empty data compresses to 20 "
                               "bytes); download it again")  # fmt: skip
    lineno = 0
    try:
        with _open_binary(p) as f:
            for lineno, raw in enumerate(capped_lines(f), 1):
                yield lineno, raw
    except (EOFError, zlib.error, OSError) as exc:
        raise CorruptFileError(
            f"{p}:{lineno + 1}: cannot read on ({type(exc).__name__}: {exc}); the file is truncated or "
            "corrupt: download it again"
        ) from exc


def _writable(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parse_line(raw: bytes) -> tuple[dict | None, str, str]:
    """A line's JSON object, or ``(None, kind, detail)`` saying why it has none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, "invalid_utf8", f"invalid UTF-8 at byte {exc.start} ({exc.reason})"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, "malformed", f"malformed line ({exc.msg} at column {exc.colno})"
    except (ValueError, RecursionError) as exc:  # >4300-digit integers, nesting too deep
        return None, "malformed", f"malformed line ({type(exc).__name__})"
    if not isinstance(obj, dict):
        return None, "malformed", f"malformed line (expected a JSON object, got {type(obj).__name__})"
    if _SURROGATE_ESCAPE.search(raw) and not _writable(obj):
        return None, "invalid_utf8", "invalid text (a \\u escape leaves an unpaired UTF-16 surrogate)"
    return obj, "", ""


def iter_json_objects(
    path: str | os.PathLike[str], stats: ReadStats, *, strict: bool = False
) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each JSON object of a JSON-lines file; blank lines are ignored.

    Every other line counts in ``stats`` (``malformed``, ``invalid_utf8``) or, under ``strict``, raises
    :class:`MalformedLineError` naming file and line.
    """
    stats.path = str(path)
    for lineno, raw in iter_lines(path):
        if raw is not None and not raw.strip():
            continue
        stats.lines += 1
        if raw is None:
            obj, kind, detail = None, "malformed", f"line longer than {MAX_LINE_BYTES} bytes (not read)"
        else:
            obj, kind, detail = _parse_line(raw)
        if obj is None:
            stats.flag(kind, lineno, detail, strict=strict)
            continue
        yield lineno, obj


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _has_type(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def _required_failure(obj: Mapping[str, Any], required: tuple[str, ...]) -> str | None:
    """Why a record lacks a usable required field (``None`` when it has them all)."""
    for k in required:
        v = obj.get(k)
        if k not in obj or v is None:
            return f"required field {k!r} is missing"
        if not isinstance(v, str):
            return f"required field {k!r} is {type(v).__name__}, expected a string"
        if not v.strip():
            return f"required field {k!r} is empty"
    return None


def _select(
    obj: Mapping[str, Any], fields: tuple[str, ...], stats: ReadStats, lineno: int, strict: bool
) -> dict[str, Any]:
    """The kept fields of a record, each of its declared type or ``None`` (wrong types are counted)."""
    rec: dict[str, Any] = {}
    for k in fields:
        v = obj.get(k)
        if v is not None and not _has_type(v, FIELD_TYPES[k]):
            expected = " or ".join(t.__name__ for t in FIELD_TYPES[k])
            stats.flag("wrong_type", lineno, f"field {k!r} is {type(v).__name__}, expected {expected}",
                       strict=strict)  # fmt: skip
            v = None
        rec[k] = v
    return rec


def _records(
    path: str | os.PathLike[str],
    stats: ReadStats,
    fields: tuple[str, ...],
    required: tuple[str, ...],
    strict: bool,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Objects with every required field, reduced to ``fields``; the rest counted ``missing_required``."""
    for lineno, obj in iter_json_objects(path, stats, strict=strict):
        stats.missing.update(k for k in fields if not _present(obj.get(k)))
        failure = _required_failure(obj, required)
        if failure is not None:
            stats.flag("missing_required", lineno, failure, strict=strict)
            continue
        yield lineno, _select(obj, fields, stats, lineno, strict)


def truncate_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters: after the last sentence end, else the last space."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    cut = max((m.end() for m in _SENTENCE_END.finditer(head)), default=0)
    if cut < limit // 2:  # no sentence end in the second half: keep whole words instead
        cut = max((m.end() for m in _SPACE.finditer(head)), default=0)
    return (head[:cut] if cut > 0 else head[:limit]).rstrip()


def _dedup_digest(rec: Mapping[str, Any]) -> bytes:
    return hashlib.blake2b(json.dumps([rec[k] for k in DEDUP_KEY]).encode(), digest_size=16).digest()


def iter_reviews(path: str | os.PathLike[str], stats: ReadStats, *, strict: bool = False) -> Iterator[dict]:
    """Reviews with the fields of :data:`REVIEW_FIELDS` (absent or wrong-typed optional fields are ``None``),
    deduplicated on :data:`DEDUP_KEY` and with texts of at most :data:`MAX_TEXT_CHARS` characters.

    Memory grows with the number of distinct reviews by 16 bytes of digest each (plus the set's overhead).
    """
    first_line: dict[bytes, int] = {}
    for lineno, rec in _records(path, stats, REVIEW_FIELDS, REQUIRED_REVIEW_FIELDS, strict):
        digest = _dedup_digest(rec)
        if digest in first_line:
            stats.flag("duplicate", lineno, f"same {', '.join(DEDUP_KEY)} as line {first_line[digest]}")
            continue
        first_line[digest] = lineno
        if len(rec["text"]) > MAX_TEXT_CHARS:
            stats.flag("truncated", lineno, f"text of {len(rec['text'])} characters is over the "
                       f"{MAX_TEXT_CHARS}-character cap", strict=strict)  # fmt: skip
            rec["text"] = truncate_text(rec["text"])
        stats.records += 1
        yield rec


def _meta_digest(rec: Mapping[str, Any]) -> bytes:
    return hashlib.blake2b(json.dumps(rec, sort_keys=True).encode(), digest_size=16).digest()


def iter_meta(
    path: str | os.PathLike[str],
    stats: ReadStats,
    *,
    strict: bool = False,
    usable: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Iterator[dict]:
    """Product metadata with the fields of :data:`META_FIELDS`, one record per ``parent_asin``.

    Counted, each with its ``file:line``: records without ``parent_asin`` and records the caller cannot
    use (``usable`` returns why, e.g. ingest's "no title": a product without one has no document) as
    ``missing_required``; a later record of an earlier ``parent_asin`` as ``duplicate`` (the first is
    kept, as for reviews). A duplicate whose kept fields differ from the first one's is a conflict the
    build would settle silently by file order, so under ``strict`` it raises like any bad line; an
    identical one is only counted. ``usable`` runs before the duplicate check, so an unusable first
    record does not hide a usable later one.

    Memory grows with the number of products by their id and a 16-byte digest each.
    """
    first: dict[str, tuple[int, bytes]] = {}
    for lineno, rec in _records(path, stats, META_FIELDS, REQUIRED_META_FIELDS, strict):
        if usable is not None and (why := usable(rec)) is not None:
            stats.flag("missing_required", lineno, why, strict=strict)
            continue
        asin, digest = rec["parent_asin"], _meta_digest(rec)
        if asin in first:
            line, kept = first[asin]
            if digest == kept:
                stats.flag("duplicate", lineno, f"same record as line {line} (parent_asin {asin!r})")
            else:
                stats.flag("duplicate", lineno, f"parent_asin {asin!r} again, with other content than "
                           f"line {line}", strict=strict)  # fmt: skip
            continue
        first[asin] = (lineno, digest)
        stats.records += 1
        yield rec


# --------------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalSource:
    """A directory in the official flat layout."""

    root: Path

    def _find(self, kind: str, category: str) -> Path:
        patterns = load_sources()["amazon2023"]["local"][kind]
        for pat in patterns:
            p = Path(self.root) / pat.format(category=category)
            if p.is_file():
                return p
        tried = ", ".join(pat.format(category=category) for pat in patterns)
        raise SourceFileNotFoundError(
            f"no {kind} file for category {category!r} in {self.root} (tried {tried}); pick another "
            "--domain, or pass --source a directory that has it"
        )

    def reviews_path(self, category: str) -> Path:
        return self._find("reviews", category)

    def meta_path(self, category: str) -> Path:
        return self._find("meta", category)

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "root": str(self.root)}


_TRANSFER_LIBRARIES = frozenset({"httpx", "httpx2", "httpcore", "requests", "urllib3"})
"""Libraries whose exceptions mean a transfer failed (huggingface_hub's HTTP layer raises them as they are:
a connection the server drops mid-file ends, after its retries, in ``httpx2.RemoteProtocolError``, which
is no ``OSError``)."""


def _transfer_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed fetch (offline, refused, dropped, HTTP error, unknown file) and not a bug."""
    from huggingface_hub.errors import EntryNotFoundError

    if isinstance(exc, (OSError, EntryNotFoundError)):
        return True
    return any(k.__module__.partition(".")[0] in _TRANSFER_LIBRARIES for k in type(exc).__mro__)


def _git_blob_sha1(path: Path) -> str:
    h = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def content_mismatch(path: Path) -> str | None:
    """Why a file of the Hub cache is not the content the Hub named, or ``None`` when it is (or when the
    cache holds no content address to check, e.g. a cache without symlinks).

    The Hub cache stores each file as ``blobs/<etag>``: for a Git LFS file (the category files) the etag is
    the sha256 of the content, for a small Git file the Git blob id. ``hf_hub_download`` checks only the
    size of what it received, and never re-checks a cached blob: a transfer that delivered other bytes of
    the right length, or a blob damaged since, would be ingested as it is, with some lines counted as
    malformed and the rest silently wrong.
    """
    from pqb.dataset.io import sha256_file

    blob = path.resolve()
    if blob.parent.name != "blobs":
        return None
    etag = blob.name
    if re.fullmatch(r"[0-9a-f]{64}", etag):
        kind, actual = "sha256", sha256_file(blob)
    elif re.fullmatch(r"[0-9a-f]{40}", etag):
        kind, actual = "Git blob id", _git_blob_sha1(blob)
    else:
        return None
    return None if actual == etag else f"its {kind} is {actual[:16]}…, the Hub's is {etag[:16]}…"


def _snapshot_commit(path: Path) -> str | None:
    """The commit of a Hub cache path ``…/snapshots/<commit>/<file>``."""
    parts = path.parts
    return parts[parts.index("snapshots") + 1] if "snapshots" in parts[:-1] else None


@dataclass(frozen=True)
class HubSource:
    """The Hub dataset repo of ``sources.yaml``; files are fetched with ``hf_hub_download`` (cached).

    The first file fetched resolves ``revision`` (a branch such as ``main``) to a commit; every later file
    is fetched at that commit, so the reviews and the metadata come from one commit even when the branch
    moves between the two downloads, and :meth:`describe` (the ingest stage's fingerprint, the card)
    records it beside the revision asked for. Each file is checked against the checksum the Hub named
    (:func:`content_mismatch`); a mismatch is fetched again once, then is an error.
    """

    repo_id: str
    revision: str
    reviews_pattern: str
    meta_pattern: str
    repo_type: str = "dataset"
    cache_dir: Path | None = None
    resolved: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    """``{"commit": <sha>}`` once a file was fetched."""

    @classmethod
    def from_config(cls, revision: str | None = None, cache_dir: Path | None = None) -> HubSource:
        hub = load_sources()["amazon2023"]["hub"]
        return cls(
            repo_id=hub["repo_id"],
            revision=revision or str(hub.get("revision") or "main"),
            reviews_pattern=hub["reviews"],
            meta_pattern=hub["meta"],
            repo_type=hub.get("repo_type", "dataset"),
            cache_dir=cache_dir,
        )

    def _fetch(self, filename: str, revision: str, force: bool) -> Path:
        from huggingface_hub import hf_hub_download

        try:
            local = hf_hub_download(
                repo_id=self.repo_id,
                filename=filename,
                repo_type=self.repo_type,
                revision=revision,
                cache_dir=str(self.cache_dir) if self.cache_dir else None,
                **({"force_download": True} if force else {}),
            )
        except Exception as exc:  # offline, HTTP errors, a dropped transfer, unknown repo/revision/file
            if not _transfer_error(exc):
                raise
            reason = re.split(r"(?<=\.)\s", str(exc).strip())[0][:200]  # its first sentence
            raise SourceUnavailableError(
                f"cannot fetch {filename} from the Hub dataset {self.repo_id}@{revision} "
                f"({type(exc).__name__}: {reason}); connect to the network (and unset HF_HUB_OFFLINE), "
                "or pass --source <dir> holding a local copy of the files"
            ) from exc
        return Path(local)

    def _download(self, filename: str) -> Path:
        revision = self.resolved.get("commit", self.revision)
        path = self._fetch(filename, revision, force=False)
        if content_mismatch(path) is not None:  # a bad transfer or a damaged cache: fetch it again, once
            path = self._fetch(filename, revision, force=True)
            if (why := content_mismatch(path)) is not None:
                raise CorruptFileError(
                    f"{path}: fetched twice from the Hub dataset {self.repo_id}@{revision}, and {why}; "
                    f"the transfer is corrupting it: delete {path.resolve()} and run again, or pass --source "
                    "<dir> holding a local copy of the files"
                )
        if (commit := _snapshot_commit(path)) is not None:
            self.resolved.setdefault("commit", commit)
        return path

    def reviews_path(self, category: str) -> Path:
        return self._download(self.reviews_pattern.format(category=category))

    def meta_path(self, category: str) -> Path:
        return self._download(self.meta_pattern.format(category=category))

    def describe(self) -> dict[str, Any]:
        """The repo, the revision asked for and, once a file was fetched, the commit it resolved to."""
        return {"kind": "hub", "repo_id": self.repo_id, "revision": self.revision, **self.resolved}


Source = LocalSource | HubSource


def resolve_source(source: str | os.PathLike[str] | None = None, *, revision: str | None = None) -> Source:
    """``"hub"`` (or ``hub@<revision>``) → :class:`HubSource`; a directory → :class:`LocalSource`.

    ``None`` means ``settings.PQB_AMAZON_DIR`` (read at call time so tests and env vars can move it).
    """
    if source is None:
        return LocalSource(Path(settings.PQB_AMAZON_DIR))
    s = str(source)
    if s == "hub" or s.startswith("hub@"):
        rev = s.partition("@")[2] or revision
        return HubSource.from_config(revision=rev)
    p = Path(s).expanduser()
    if not p.is_dir():
        raise SourceFileNotFoundError(
            f"source {s!r} is neither 'hub' nor an existing directory; pass --source hub or a directory "
            "with <Category>.jsonl[.gz] files (or set PQB_AMAZON_DIR)"
        )
    return LocalSource(p)
