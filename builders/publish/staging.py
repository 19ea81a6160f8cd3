"""Writing a dataset folder that readers can read at every instant, and that holds the user's files too.

Why: ``publish`` used to write each config's new shard and delete every other ``*.parquet`` of its
folder, then rewrite the card last. For most of a publish the card named shards that were gone: 28 of
32 ``pqb-harness run`` started meanwhile failed with "dataset unavailable". And the deletion followed a
``data/<config>`` that was a symbolic link into another folder, where it deleted a user's
``precious_results.parquet`` (issue 45).

Now every writer of a dataset folder (``publish``, ``pqb-build all``, ``release``) works in
:func:`staged`:

1. under the folder's writer lock (:func:`pqb.builders.workdir.writer_lock`), it refuses a ``data/`` or
   ``data/<config>`` that is a symbolic link or resolves outside the folder, before any write;
2. the writer fills a private copy (``.pqb-publish/``: hard links of the current shards and a copy of
   the card), where the usual code (:func:`~pqb.builders.publish.tables.write_config`, the card) runs
   unchanged;
3. :func:`commit` moves the new shards in beside the old ones (content-addressed names never collide),
   replaces the card in one ``rename`` (the moment the new generation appears), and only then deletes
   the shards the previous card listed that the new one does not keep. Nothing else is ever deleted: a
   file the previous card did not list (a user's file, a shard of unknown origin) stays where it is.

A reader that read the previous card just before the swap may find an old shard gone: the harness
reads again when the card changed under it (:func:`pqb.harness.evaluation.data.load_config`), and
:func:`pqb.builders.publish.layout.config_path` takes the card's shard while two sit side by side.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from pqb.builders.errors import UsageError
from pqb.builders.publish.layout import DATA_DIR, SHARD_GLOB, card_data_files, config_path, published_configs
from pqb.builders.workdir import writer_lock

STAGE_DIR = ".pqb-publish"
"""The private copy a writer fills, inside the dataset folder (so the final moves are renames on one
file system); dot-named, so no reader takes it for data."""
CARD = "README.md"


def escape(dataset_dir: Path) -> str | None:
    """Why the dataset folder's ``data/`` or one of its config folders is not the publisher's to write
    (``None`` when every one is): a symbolic link, or a folder that resolves outside ``dataset_dir``."""
    root = Path(dataset_dir)
    data = root / DATA_DIR
    for folder in [data, *(sorted(data.iterdir()) if data.is_dir() and not data.is_symlink() else [])]:
        if folder.is_symlink():
            return f"{folder} is a symbolic link (to {os.readlink(folder)})"
        if folder.exists() and not folder.resolve().is_relative_to(root.resolve()):
            return f"{folder} resolves outside the dataset folder (to {folder.resolve()})"
    stage = root / STAGE_DIR
    if stage.is_symlink() or (stage.exists() and not stage.is_dir()):
        return f"{stage} is not the folder publish keeps there"
    return None


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links
        shutil.copy2(src, dst)


def refuse_escape(dataset_dir: Path) -> None:
    """:class:`UsageError` (one line, before any write) when :func:`escape` finds a folder to refuse."""
    if problem := escape(dataset_dir):
        raise UsageError(
            f"{problem}: pqb-build writes only inside {dataset_dir}; replace it with a folder of its own, or "
            "publish to another --dataset"
        )


@contextlib.contextmanager
def staged(dataset_dir: Path) -> Iterator[Path]:
    """A private copy of ``dataset_dir`` to write the next generation into; committed on a normal exit
    (:func:`commit`), dropped on an error (the folder stays as it was). Holds the folder's writer lock."""
    dataset_dir = Path(dataset_dir)
    with writer_lock(dataset_dir):
        refuse_escape(dataset_dir)
        stage = dataset_dir / STAGE_DIR
        shutil.rmtree(stage, ignore_errors=True)  # a killed writer's: ours, under the lock
        current = {c: config_path(dataset_dir, c) for c in published_configs(dataset_dir)}
        for config, shard in current.items():
            _link(shard, stage / DATA_DIR / config / shard.name)
        stage.mkdir(parents=True, exist_ok=True)
        if (dataset_dir / CARD).is_file():
            shutil.copyfile(dataset_dir / CARD, stage / CARD)
        owned = _owned(dataset_dir, current)
        try:
            yield stage
            commit(stage, dataset_dir, owned)
        finally:
            shutil.rmtree(stage, ignore_errors=True)


def _owned(dataset_dir: Path, current: Mapping[str, Path]) -> dict[str, set[Path]]:
    """Per config, the shards of the folder's current generation: those its card lists (inside
    ``data/<config>/``, named as shards); without a card, the config's one shard."""
    listed = card_data_files(dataset_dir)
    if not (dataset_dir / CARD).is_file():
        listed = {c: [p.relative_to(dataset_dir).as_posix()] for c, p in current.items()}
    out: dict[str, set[Path]] = {}
    for config, paths in listed.items():
        folder = dataset_dir / DATA_DIR / config
        for rel in paths:
            path = dataset_dir / rel
            if path.parent == folder and path.match(SHARD_GLOB):
                out.setdefault(config, set()).add(path)
    return out


def commit(stage: Path, dataset_dir: Path, owned: Mapping[str, set[Path]]) -> None:
    """Make ``stage`` the dataset: new shards in, the card swapped, then the ``owned`` shards the new
    generation does not keep deleted (and their folders, when that leaves them empty)."""
    keep: set[Path] = set()
    for shard in sorted((stage / DATA_DIR).glob(f"*/{SHARD_GLOB}")):
        target = dataset_dir / DATA_DIR / shard.parent.name / shard.name
        keep.add(target)
        if not target.is_file():  # content-addressed: the same name holds the same bytes
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(shard, target)
    if (stage / CARD).is_file():
        os.replace(stage / CARD, dataset_dir / CARD)  # the new generation appears here, at once
    for config, shards in sorted(owned.items()):
        for old in sorted(shards - keep):
            if old.is_file() and not old.is_symlink():
                old.unlink()
        with contextlib.suppress(OSError):  # only an emptied folder goes; anything else in it stays
            (dataset_dir / DATA_DIR / config).rmdir()
