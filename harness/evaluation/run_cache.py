"""On-disk cache of per-query ranks and top-k lists ("run cache").

Keyed by (retriever ``cache_settings()``, corpus fingerprint, depth) per folder and by
(query-text hash, target id) per entry, so a second run — or a second task sharing queries —
re-ranks nothing and does not even index the corpus. Entries are appended as immutable ``.npz``
shards written atomically; a killed run loses only its unsaved shard.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pqb.dataset.io import (
    atomic_path,
    cache_rebuild_notice,
    checksum_path,
    checksum_problem,
    stable_hash,
    write_checksum,
)
from pqb.dataset.rules import TIE_RTOL

SHARD_ARRAYS = ("text_hash", "target", "rank", "tie", "top_idx", "top_scores")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class RankEntry:
    """The rank of one target for one query text, the tie flag and the query's top-k (corpus indices)."""

    rank: float
    tie: bool
    top_idx: np.ndarray
    top_scores: np.ndarray


class RunCache:
    """``(text_hash, target_id) -> RankEntry`` for one (retriever settings, corpus, depth)."""

    def __init__(self, root: Path, settings: dict[str, Any], corpus_fingerprint: str, depth: int) -> None:
        # the tie rule is part of the key: cached ranks made under another rule must not be reused
        rule = {"tie_rtol": TIE_RTOL}
        self.folder = Path(root) / "runs" / stable_hash(settings, corpus_fingerprint, depth, rule)
        self.depth = depth
        self.entries: dict[tuple[str, str], RankEntry] = {}
        self._load()

    def _load(self) -> None:
        """Read every shard whose checksum matches; a damaged one (truncated, edited, no checksum) is
        deleted with one line, so its queries are ranked again instead of failing or scoring wrong."""
        for shard in sorted(self.folder.glob("shard_*.npz")):
            arrays = None
            why = checksum_problem(shard)
            if why is None:
                try:
                    with np.load(shard, allow_pickle=False) as z:
                        # read each array once: ``z[name]`` decompresses the whole array on every access
                        arrays = {name: z[name] for name in SHARD_ARRAYS}
                except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
                    why = f"cannot be read ({type(exc).__name__}: {exc})"
            if arrays is None:
                cache_rebuild_notice("run cache shard", shard, why or "cannot be read")
                for p in (shard, checksum_path(shard)):
                    p.unlink(missing_ok=True)
                continue
            for i, (h, t) in enumerate(zip(arrays["text_hash"], arrays["target"], strict=True)):
                self.entries[(str(h), str(t))] = RankEntry(
                    float(arrays["rank"][i]),
                    bool(arrays["tie"][i]),
                    arrays["top_idx"][i],
                    arrays["top_scores"][i],
                )

    def get(self, text: str, target: str) -> RankEntry | None:
        return self.entries.get((text_hash(text), target))

    def add(self, items: Iterable[tuple[str, str, RankEntry]]) -> int:
        """Store ``(text, target, entry)`` items in a new shard; returns how many were written."""
        items = list(items)
        if not items:
            return 0
        keys = [(text_hash(t), tgt) for t, tgt, _ in items]
        arrays = {
            "text_hash": np.asarray([k[0] for k in keys]),
            "target": np.asarray([k[1] for k in keys]),
            "rank": np.asarray([e.rank for _, _, e in items], dtype=np.float64),
            "tie": np.asarray([e.tie for _, _, e in items], dtype=bool),
            "top_idx": np.stack([_pad(e.top_idx, self.depth, -1, np.int64) for _, _, e in items]),
            "top_scores": np.stack([_pad(e.top_scores, self.depth, np.nan, np.float32) for _, _, e in items]),
        }
        name = f"shard_{stable_hash(sorted(keys))}.npz"
        with atomic_path(self.folder / name) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
            write_checksum(self.folder / name, tmp)
        for (h, tgt), (_, _, e) in zip(keys, items, strict=True):
            self.entries[(h, tgt)] = e
        return len(items)


def _pad(a: np.ndarray, n: int, fill: float, dtype: Any) -> np.ndarray:
    out = np.full(n, fill, dtype=dtype)
    a = np.asarray(a)[:n]
    out[: len(a)] = a
    return out
