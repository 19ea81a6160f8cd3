"""Load a task's rows and corpus with ``datasets`` and turn them into pairs the metrics consume.

Paths: a local folder whose dataset card lists ``configs:`` (``pqb_dataset/`` in a checkout, or a
test's temp folder) or a Hub id + revision. A config that is absent raises
:class:`~pqb.harness.errors.DatasetNotFoundError`, which the evaluator turns into a recorded skip; a
dataset that is unreachable as a whole, a damaged parquet file or a missing split raise errors that
stop the run with a one-line message.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pqb.harness.errors import DataError, DatasetNotFoundError, DatasetUnavailableError, TaskConfigError
from pqb.harness.retrievers.base import Corpus

log = logging.getLogger(__name__)


def _is_local(path: str) -> bool:
    return Path(path).expanduser().exists()


def _local_cache_dir(path: str) -> str:
    """A ``datasets`` cache folder keyed by the local dataset's file contents.

    ``datasets`` keys its cache on the folder *name* and card, not the parquet bytes, so after a
    rebuild (or a test's folder of the same name) it would serve stale rows. Hashing the files
    (README, everything under data/, and every file any config's ``data_files`` names, wherever it
    lies: shards beside the card are as common as shards under data/) gives each build its own cache.
    """
    from pqb.dataset import settings
    from pqb.dataset.io import sha256_file

    root = Path(path).expanduser()
    files = {p for p in root.rglob("*") if p.is_file() and (p.name == "README.md" or "data" in p.parts)
             and not _hidden(p.relative_to(root))}  # fmt: skip
    for patterns in _card_configs(root).values():
        for pattern in patterns:
            files.update(p for p in _glob(root, pattern) if p.is_file())
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(os.path.relpath(f, root).encode())
        h.update(sha256_file(f).encode())
    return str(settings.PQB_CACHE_DIR / "datasets" / h.hexdigest()[:16])


def _hidden(rel: Path) -> bool:
    """A dot-named entry (a publish's private ``.pqb-publish/`` copy, a lock file): never data to read."""
    return any(part.startswith(".") for part in rel.parts)


CARD_RETRIES = 3
"""How often a reader starts again when a publish replaced the folder's card while it read."""


def card_generation(path: str) -> str | None:
    """The generation of a local dataset folder: its card's sha256 (a publish replaces the card in one
    rename, after the new shards are in place and before the old ones go); ``None`` for a Hub id or a
    folder without a card."""
    from pqb.dataset.io import sha256_file

    card = Path(path).expanduser() / "README.md"
    try:
        return sha256_file(card) if _is_local(path) and card.is_file() else None
    except OSError:
        return None


def _glob(root: Path, pattern: str) -> list[Path]:
    """The files a ``data_files`` entry names: a path or a glob pattern, relative to the card."""
    if any(c in pattern for c in "*?["):
        return sorted(root.glob(pattern))
    return [root / pattern]


def require_card(path: str) -> None:
    """A local dataset folder must have its card: without ``README.md`` ``datasets`` invents a
    ``default`` config from whatever parquet it finds, so every PQB config reads as absent and
    ``validate`` once said OK (exit 0) on a folder ``run`` refused."""
    root = Path(path).expanduser()
    if root.is_dir() and not (root / "README.md").is_file():
        raise DataError(
            f"{path}: no dataset card (README.md) in this folder; point --dataset_path at a PQB dataset "
            "folder (pqb-build all writes one) or restore its README.md"
        )


def config_names(path: str, revision: str | None = None, *, strict: bool = False) -> list[str]:
    """Config names the dataset declares; ``[]`` if the dataset itself cannot be found.

    With ``strict`` an unreachable dataset raises :class:`DatasetUnavailableError` saying why (no
    local folder, Hub offline or unreachable) instead of looking like a dataset without configs.
    """
    import datasets

    try:
        require_hub(path)
        return list(datasets.get_dataset_config_names(path, revision=None if _is_local(path) else revision))
    except Exception as exc:  # datasets raises several types for "not found"/offline
        log.debug("no configs for %s: %s", path, exc)
        if strict:
            raise DatasetUnavailableError(_unavailable_message(path, exc)) from exc
        return []


class HubUnreachableError(ConnectionError):
    """The Hub endpoint did not accept a connection (:func:`pqb.dataset.hub.hub_unreachable`)."""


def require_hub(path: str) -> None:
    """Before a Hub id is looked up: raise :class:`HubUnreachableError` at once when the Hub cannot be
    reached (``huggingface_hub`` would otherwise retry for 23 s). A local folder, or an explicit offline
    mode (``datasets`` then answers from its cache, without the network), skips the probe."""
    from pqb.dataset.hub import hub_offline, hub_unreachable

    if _is_local(path) or hub_offline():
        return
    if why := hub_unreachable():
        raise HubUnreachableError(why)


def _unavailable_message(path: str, exc: Exception) -> str:
    from pqb.dataset import settings
    from pqb.dataset.hub import hub_offline

    if _is_local(path):
        why = f"the local folder {path!r} is not a dataset ({type(exc).__name__}: {_first_line(exc)})"
    else:
        looked = ", ".join(str(c) for c in settings.dataset_candidates())
        if hub_offline():
            hub = "the Hub is offline (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE)"
        elif isinstance(exc, HubUnreachableError):
            hub = f"the Hub is unreachable ({exc}; set HF_HUB_OFFLINE=1 to skip the check)"
        else:
            hub = f"the Hub did not serve it ({type(exc).__name__}: {_first_line(exc)})"
        why = f"{path!r} is not a local folder (no dataset card in {looked}) and {hub}"
    return (
        f"dataset unavailable: {why}; the dataset is looked for in {settings.DATASET_LOOKUP_ORDER}; "
        f"build one (pqb-build all --domain <domain> writes {settings.default_dataset_dir()}) "
        "or pass --dataset_path <folder or reachable Hub id>"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def _card(root: Path, *, strict: bool = False) -> dict[str, Any]:
    """The YAML header of a local folder's card (``{}`` if none); a header that is not UTF-8 YAML is
    ``{}``, or with ``strict`` a :class:`DataError` naming the card."""
    import yaml

    readme = root / "README.md"
    try:
        text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        card = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else {}
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        if strict:
            raise DataError(
                f"{readme}: the dataset card's YAML header cannot be read ({_first_line(exc)}); "
                "restore the README.md (pqb-build all writes one)"
            ) from exc
        return {}  # the loader reports a broken card; the cache key just covers fewer files
    return card if isinstance(card, dict) else {}


def _card_configs(root: Path, *, strict: bool = False) -> dict[str, list[str]]:
    """Config name → the ``data_files`` paths or patterns the card of a local folder lists."""
    configs = _card(root, strict=strict).get("configs")
    out: dict[str, list[str]] = {}
    for cfg in configs if isinstance(configs, list) else []:
        if not isinstance(cfg, dict) or cfg.get("config_name") is None:
            continue
        files = cfg.get("data_files") or []
        files = [files] if isinstance(files, str | dict) else files if isinstance(files, list) else []
        paths = [f.get("path") if isinstance(f, dict) else f for f in files]
        out[str(cfg.get("config_name"))] = [
            q for p in paths for q in ([p] if isinstance(p, str) else p if isinstance(p, list) else [])
            if isinstance(q, str)
        ]  # fmt: skip
    return out


def _card_data_files(root: Path, name: str) -> list[Path]:
    """Parquet files the dataset card of a local folder lists for config ``name`` (``[]`` if none)."""
    return [root / p for p in _card_configs(root).get(name, [])]


def local_configs(path: str) -> set[str] | None:
    """Configs of a local dataset folder whose data files all exist (``None``: ``path`` is not local).

    Reads the card only (no ``datasets``, no network), so ``ls tasks`` can say which tasks have data;
    a card whose header is not YAML raises :class:`DataError`.
    """
    root = Path(path).expanduser()
    if not _is_local(path):
        return None
    return {
        n for n, files in _card_configs(root, strict=True).items()
        if n and files and all((root / f).is_file() for f in files)
    }  # fmt: skip


def check_parquet_files(path: str, name: str) -> None:
    """Raise :class:`DataError` naming the file if a local config's parquet is unreadable or empty.

    Reads footers only (cheap), so a truncated or 0-row file is reported by its path before
    ``datasets`` turns it into a generation traceback. Missing files are left to the loader.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    for f in _card_data_files(Path(path).expanduser(), name):
        if not f.is_file():
            continue
        try:
            n_rows = pq.read_metadata(f).num_rows
        except (pa.ArrowException, OSError) as exc:
            raise DataError(
                f"{f}: damaged parquet file of config {name!r} ({_first_line(exc)}); "
                "rebuild the dataset (pqb-build all --domain <domain>) or restore the file"
            ) from exc
        if n_rows == 0:
            raise DataError(
                f"{f}: parquet file of config {name!r} has 0 rows; rebuild the dataset "
                "(pqb-build all --domain <domain>) or restore the file"
            )


def load_config(
    path: str, name: str, *, split: str | None = "test", revision: str | None = None, split_from: str = ""
) -> Any:
    """One config as a ``datasets.Dataset``. ``split=None`` takes the config's only split.

    A ``split`` the config does not have is an error (never a silent fall-back to another split);
    ``split_from`` says where the split was set (``tasks/x.yaml:5``) for the message.

    A local folder whose card a publish replaced while it was read (an old shard deleted under the
    reader: "dataset unavailable", "declared but its data files are missing") is read again from the
    new card, up to :data:`CARD_RETRIES` times (issue 45: 28 of 32 runs started during a publish failed).
    """
    for attempt in range(CARD_RETRIES):
        generation = card_generation(path)
        try:
            return _load_config(path, name, split=split, revision=revision, split_from=split_from)
        except (DataError, DatasetNotFoundError, FileNotFoundError):
            if attempt == CARD_RETRIES - 1 or generation is None or card_generation(path) == generation:
                raise
            log.warning(
                "%s: the dataset card changed while %s was read (a publish); reading it again", path, name
            )
    raise AssertionError("unreachable")


def _load_config(path: str, name: str, *, split: str | None, revision: str | None, split_from: str) -> Any:
    """:func:`load_config`, once."""
    import datasets

    require_card(path)
    if name not in config_names(
        path, revision, strict=True
    ):  # an unreachable dataset says why, not "no config"
        raise DatasetNotFoundError(
            f"dataset config {name!r} not found in {path!r}; build it (pqb-build all --domain ...) "
            f"or pass --dataset_path <folder or Hub id> that has it"
        )
    if _is_local(path):
        check_parquet_files(path, name)
    try:
        if _is_local(path):
            ds = datasets.load_dataset(path, name, cache_dir=_local_cache_dir(path))
        else:
            ds = datasets.load_dataset(path, name, revision=revision)
    except FileNotFoundError as exc:  # declared in the card, files absent (e.g. a local-only release config)
        raise DatasetNotFoundError(
            f"dataset config {name!r} is declared in {path!r} but its data files are missing "
            f"({str(exc).split(' with any supported extension')[0]}); build it first "
            "(release configs: pqb-build release --domain <d> [--meta <meta file>])"
        ) from exc
    except datasets.exceptions.DatasetGenerationError as exc:
        raise DataError(
            f"config {name!r} of {path!r} cannot be read ({_first_line(exc.__cause__ or exc)}); "
            "rebuild or re-download the dataset"
        ) from exc
    _release_arrow_memory()
    if split is None:
        if len(ds) == 1:
            return next(iter(ds.values()))
        raise DataError(f"config {name!r} of {path!r} has splits {sorted(ds)}; name one")
    if split not in ds:
        where = f" (set at {split_from})" if split_from else ""
        raise TaskConfigError(
            f"test_split {split!r}{where} is not a split of config {name!r} in {path!r}; "
            f"its splits are {sorted(ds)}: set test_split to one of them"
        )
    return ds[split]


def _release_arrow_memory() -> None:
    """Hand the memory Arrow freed back to the OS.

    A cold ``load_dataset`` converts the parquet files into its memory-mapped Arrow cache through
    Arrow's allocator, which keeps the freed buffers for reuse: at 200K real-length documents about
    450 MB stayed in the process while the corpus then became Python strings and BM25 built its
    index, and that sum was the run's peak (issue 32). The dataset itself is read from the mapped
    cache file, not from these buffers."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def build_corpus(ids: Sequence[str], titles: Sequence[str], texts: Sequence[str]) -> Corpus:
    """A :class:`Corpus` sorted by id (the tie order); duplicate ids are an error, not a silent drop."""
    ids = list(ids)
    if len(set(ids)) != len(ids):
        dup = sorted(i for i, n in Counter(ids).items() if n > 1)[:5]
        raise DataError(f"corpus has duplicate document ids, e.g. {dup}")
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ids_s = tuple(ids[i] for i in order)
    titles_s = tuple(titles[i] or "" for i in order)
    texts_s = tuple(texts[i] or "" for i in order)
    return Corpus(ids_s, titles_s, texts_s)


def column(ds: Any, name: str) -> list[Any]:
    """One column of a ``datasets.Dataset`` as a list, converted from Arrow in bulk.

    ``ds[name]`` is a lazy column in ``datasets`` >= 3 whose iteration decodes row by row (40 s for a
    200K-document corpus); the Arrow table converts the same values in about a second."""
    table = getattr(ds, "data", None)
    if table is not None and name in ds.column_names and getattr(ds, "_indices", None) is None:
        return table.column(name).to_pylist()
    return list(ds[name])


def corpus_from_dataset(ds: Any) -> Corpus:
    """The :class:`Corpus` of a corpus config (columns ``id``, ``title``, ``text``), read in bulk."""
    return build_corpus(column(ds, "id"), column(ds, "title"), column(ds, "text"))


def load_corpus(path: str, name: str, *, revision: str | None = None) -> Corpus:
    return corpus_from_dataset(load_config(path, name, split=None, revision=revision))
