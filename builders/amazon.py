"""Streaming readers for Amazon Reviews 2023 (`<Category>.jsonl[.gz]`, `meta_<Category>.jsonl[.gz]`).

The real category files are gigabytes, so nothing here loads a whole file: records are yielded line by
line and only the fields PQB uses are kept. Fields are often missing (the offline slice lacks most
metadata), so readers count what is missing instead of failing; malformed JSON lines are counted and
reported, or raise :class:`MalformedLineError` under ``strict=True``.

Sources are a local directory (official flat layout) or the Hugging Face Hub repo declared in
``sources.yaml``; the Hub path goes through :func:`huggingface_hub.hf_hub_download`, which tests mock.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pqb_dataset import settings

SOURCES_YAML = Path(__file__).with_name("sources.yaml")

REVIEW_FIELDS = ("user_id", "parent_asin", "asin", "text", "title", "rating", "timestamp")
"""Review fields kept; ``user_id``, ``parent_asin`` and ``text`` are required (others may be missing)."""
REQUIRED_REVIEW_FIELDS = ("user_id", "parent_asin", "text")
META_FIELDS = (
    "parent_asin", "title", "main_category", "store", "details", "features", "description", "categories",
    "price", "average_rating", "rating_number",
)  # fmt: skip
"""Metadata fields kept (images, videos, bought_together are dropped while streaming)."""


class MalformedLineError(ValueError):
    """A line of a JSON-lines file is not a JSON object (raised only under ``strict=True``)."""


class SourceFileNotFoundError(FileNotFoundError):
    """The requested category file is not in the source."""


@dataclass
class ReadStats:
    """What a reader saw: lines, records yielded, malformed lines, skipped records, missing fields."""

    path: str = ""
    lines: int = 0
    records: int = 0
    malformed: int = 0
    skipped: int = 0
    missing: Counter[str] = field(default_factory=Counter)
    malformed_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": self.lines,
            "records": self.records,
            "malformed": self.malformed,
            "skipped": self.skipped,
            "missing": dict(sorted(self.missing.items())),
            "malformed_examples": self.malformed_examples[:5],
        }


def load_sources(path: Path = SOURCES_YAML) -> dict[str, Any]:
    """The declared sources (``sources.yaml``, shipped as package data)."""
    return yaml.safe_load(path.read_text())


def open_text(path: str | os.PathLike[str]) -> io.TextIOBase:
    """Open a ``.jsonl`` or ``.jsonl.gz`` file as UTF-8 text (undecodable bytes replaced, never fatal)."""
    p = Path(path)
    if p.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", errors="replace")
    return open(p, encoding="utf-8", errors="replace")


def iter_jsonl(path: str | os.PathLike[str], stats: ReadStats, *, strict: bool = False) -> Iterator[dict]:
    """Yield each JSON object of a JSON-lines file, streaming; blank lines are ignored.

    A line that is not valid JSON or not an object is counted in ``stats.malformed`` (first examples
    kept for the report) or, under ``strict``, raises :class:`MalformedLineError` naming file and line.
    """
    stats.path = str(path)
    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            stats.lines += 1
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                obj, err = None, f"{exc.msg} at column {exc.colno}"
            else:
                err = None if isinstance(obj, dict) else f"expected a JSON object, got {type(obj).__name__}"
            if err is not None:
                if strict:
                    raise MalformedLineError(
                        f"{path}:{lineno}: malformed line ({err}); rerun without --strict to skip it"
                    )
                stats.malformed += 1
                if len(stats.malformed_examples) < 5:
                    stats.malformed_examples.append(f"line {lineno}: {err}")
                continue
            yield obj


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def iter_reviews(path: str | os.PathLike[str], stats: ReadStats, *, strict: bool = False) -> Iterator[dict]:
    """Reviews with the fields of :data:`REVIEW_FIELDS` (absent optional fields are ``None``).

    Records lacking a required field are skipped and counted (``stats.skipped``, ``stats.missing``).
    """
    for obj in iter_jsonl(path, stats, strict=strict):
        rec = {k: obj.get(k) for k in REVIEW_FIELDS}
        for k in REVIEW_FIELDS:
            if not _present(rec[k]):
                stats.missing[k] += 1
        if any(not isinstance(rec[k], str) or not rec[k].strip() for k in REQUIRED_REVIEW_FIELDS):
            stats.skipped += 1
            continue
        stats.records += 1
        yield rec


def iter_meta(path: str | os.PathLike[str], stats: ReadStats, *, strict: bool = False) -> Iterator[dict]:
    """Product metadata with the fields of :data:`META_FIELDS`; records without ``parent_asin`` are skipped."""
    for obj in iter_jsonl(path, stats, strict=strict):
        rec = {k: obj.get(k) for k in META_FIELDS}
        for k in META_FIELDS:
            if not _present(rec[k]):
                stats.missing[k] += 1
        if not isinstance(rec["parent_asin"], str) or not rec["parent_asin"].strip():
            stats.skipped += 1
            continue
        stats.records += 1
        yield rec


def join_reviews_meta(
    reviews: Iterator[dict], meta_by_asin: dict[str, dict], stats: Counter[str] | None = None
) -> Iterator[tuple[dict, dict | None]]:
    """Pair each streamed review with its product's metadata by ``parent_asin`` (``None`` if absent)."""
    for r in reviews:
        m = meta_by_asin.get(r["parent_asin"])
        if stats is not None:
            stats["joined" if m is not None else "no_meta"] += 1
        yield r, m


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
            f"no {kind} file for category {category!r} in {self.root} (tried {tried})"
        )

    def reviews_path(self, category: str) -> Path:
        return self._find("reviews", category)

    def meta_path(self, category: str) -> Path:
        return self._find("meta", category)

    def describe(self) -> dict[str, Any]:
        return {"kind": "local", "root": str(self.root)}


@dataclass(frozen=True)
class HubSource:
    """The Hub dataset repo of ``sources.yaml``; files are fetched with ``hf_hub_download`` (cached)."""

    repo_id: str
    revision: str
    reviews_pattern: str
    meta_pattern: str
    repo_type: str = "dataset"
    cache_dir: Path | None = None

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

    def _download(self, filename: str) -> Path:
        from huggingface_hub import hf_hub_download

        local = hf_hub_download(
            repo_id=self.repo_id,
            filename=filename,
            repo_type=self.repo_type,
            revision=self.revision,
            cache_dir=str(self.cache_dir) if self.cache_dir else None,
        )
        return Path(local)

    def reviews_path(self, category: str) -> Path:
        return self._download(self.reviews_pattern.format(category=category))

    def meta_path(self, category: str) -> Path:
        return self._download(self.meta_pattern.format(category=category))

    def describe(self) -> dict[str, Any]:
        return {"kind": "hub", "repo_id": self.repo_id, "revision": self.revision}


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
        raise SourceFileNotFoundError(f"source {s!r} is neither 'hub' nor an existing directory")
    return LocalSource(p)
