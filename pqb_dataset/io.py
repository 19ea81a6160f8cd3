"""Atomic writes and content hashes, shared by builders and harness.

A long run that is killed must never leave a half-written artifact that a resumed run would trust:
every file is written to a temporary sibling and renamed into place.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it over ``path``, else delete it.

    The file gets the permissions a plain ``open(path, "w")`` would give (``0o666`` minus the umask),
    not ``mkstemp``'s owner-only ``0o600``, so published pages and datasets stay readable.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():
            os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and fixed separators: equal objects give equal bytes (and hashes)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 2) -> None:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=indent, default=str)
    atomic_write_text(path, text + "\n")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            h.update(chunk)
    return h.hexdigest()


def stable_hash(*parts: Any, length: int = 16) -> str:
    """Short content hash of any JSON-able parts, used as a cache key."""
    return sha256_bytes(canonical_json(list(parts)).encode("utf-8"))[:length]


# -- checksummed cache files ---------------------------------------------------------------------------
# A cache is trusted only while its bytes are the bytes that were written: an edited vocabulary once
# gave every metric 0.00 with exit 0, and a truncated shard a BadZipFile traceback. Each cache file
# gets a ``<name>.sha256`` sidecar; a reader that finds it missing or different drops the entry,
# says so in one line, and rebuilds it.


def checksum_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar holding ``path``'s sha256."""
    p = Path(path)
    return p.with_name(p.name + ".sha256")


def write_checksum(path: str | os.PathLike[str], source: str | os.PathLike[str] | None = None) -> None:
    """Record the sha256 of ``source`` (default ``path``) in ``path``'s sidecar, atomically.

    Pass the temporary file as ``source`` before renaming it to ``path``: the sidecar then exists
    before the file appears, so a concurrent reader never sees a file without its checksum."""
    atomic_write_text(checksum_path(path), sha256_file(source if source is not None else path) + "\n")


def checksum_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be trusted (``None`` when its sha256 matches its sidecar)."""
    try:
        recorded = checksum_path(path).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return "has no checksum"
    except (OSError, UnicodeDecodeError) as exc:
        return f"has an unreadable checksum ({exc})"
    try:
        actual = sha256_file(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if actual == recorded else "does not match its checksum (edited or truncated)"


def cache_rebuild_notice(what: str, path: str | os.PathLike[str], why: str) -> None:
    """The one line a rebuilt cache entry prints on stderr (a cache miss is normal; a bad entry is not)."""
    import sys

    print(f"warning: {what} {path} {why}; rebuilding it", file=sys.stderr)


# -- lines of untrusted files ----------------------------------------------------------------------------

MAX_LINE_BYTES = 16 * 2**20
"""Longest line a JSON-lines reader holds: 16 MiB, hundreds of times the longest real Amazon record (the
embedded slice's longest metadata line is 19 KB; a review's text is cut at 20,000 characters anyway)."""


def capped_lines(f: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The lines of a binary stream, each held only up to ``max_bytes``: a longer line is read past in
    1 MiB pieces and yields ``None``, so a compressed bomb (a 6 MB ``.jsonl.gz`` holding one 6 GiB line
    once took 2.7 GB of memory, then a ``MemoryError``) costs the cap, not the line."""
    while raw := f.readline(max_bytes + 1):
        if len(raw) <= max_bytes or raw.endswith(b"\n"):
            yield raw
            continue
        while (rest := f.readline(2**20)) and not rest.endswith(b"\n"):
            pass
        yield None


# -- names that become file names ----------------------------------------------------------------------

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a task name, run tag or domain may look like before it becomes a file or folder name: no
separator, no leading dot, no ``..``; a YAML ``task: ../../../../tmp/x`` once wrote outside
``--output_path``."""
MAX_NAME_LENGTH = 128
"""Longest such name: file names add up to ~40 characters around it (``samples_<task>_<timestamp>.jsonl``,
``robustness_vs_effectiveness_<domain>.svg``) and most file systems stop at 255 bytes; a 301-character
task name once ran to the end and then failed to write with ``ENAMETOOLONG``, losing the run."""


def unsafe_name(name: object) -> str | None:
    """Why ``name`` cannot be a file name component (``None`` when it can)."""
    if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
        return f"{name[:40]!r}... ({len(name)} characters) is too long for a file name: at most {MAX_NAME_LENGTH}"
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or ".." in name:
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "..."
        return (
            f"{shown} is not a safe file name: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, without '..'"
        )
    return None


# -- folders a command writes to, and writes that fail --------------------------------------------------


def unwritable_dir(path: str | os.PathLike[str]) -> str | None:
    """Why files cannot be written under ``path`` (``None`` when they can): it or a parent is a file,
    it is read-only, or it cannot be created. Commands check their output, cache and work folders with
    this before any work, so an unwritable folder is one line at once, not a traceback after the first
    task. Nothing is created: a folder that does not exist yet is judged by its nearest existing parent.
    """
    p = Path(path).expanduser().absolute()
    existing = next((q for q in (p, *p.parents) if q.exists()), None)
    if existing is None or not existing.is_dir():
        return f"{p} is not a folder ({existing} is a file)" if existing is not None else f"{p} has no root"
    if existing != p:
        return (
            None
            if os.access(existing, os.W_OK | os.X_OK)
            else f"{p} cannot be created ({existing} is read-only)"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".pqb-write-probe.", dir=p)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"{p} is not writable ({exc.strerror or exc})"
    return None


def first_unwritable(folders: dict[str, str | os.PathLike[str] | None]) -> str | None:
    """The problem with the first of ``{what: folder}`` that cannot be written to (``None``: all can);
    ``what`` names the option or variable the user changes (``--output_path``, ``PQB_CACHE_DIR``)."""
    for what, folder in folders.items():
        if folder is not None and (problem := unwritable_dir(folder)):
            return f"{what}: {problem}; choose a writable folder"
    return None


WRITE_ERRNOS = frozenset(
    getattr(errno, n)
    for n in ("EFBIG", "ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "ENOTDIR")
    if hasattr(errno, n)
)
"""``OSError`` numbers of a write the environment refused (file-size limit, full disk, quota, read-only)."""


def write_failure(exc: BaseException) -> str | None:
    """The one-line report of a refused write (``None`` for any other exception). Every file is written
    to a temporary sibling and renamed (:func:`atomic_path`), so the previous file is still in place."""
    if not isinstance(exc, OSError) or exc.errno not in WRITE_ERRNOS:
        return None
    where = f" {exc.filename}" if exc.filename else ""
    return (
        f"cannot write{where}: {exc.strerror or exc}; free space, raise the limit or choose another "
        "folder (no earlier file was replaced)"
    )
