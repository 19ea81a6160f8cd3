"""Progress bars of the harness, switched off in one place by ``pqb-harness run --no-progress``.

Every bar in ``harness/`` goes through :func:`progress_bar`, and every library call that can draw
one (sentence-transformers' ``show_progress_bar``, ``datasets``, ``huggingface_hub`` downloads) asks
:func:`enabled`, so the flag silences them all instead of only the outer loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_ENABLED = True


def set_enabled(flag: bool) -> None:
    """Turn every harness bar (and those of ``datasets`` and ``huggingface_hub``) on or off."""
    global _ENABLED
    _ENABLED = bool(flag)
    import datasets
    import huggingface_hub.utils as hf_utils

    if flag:
        datasets.enable_progress_bars()
        hf_utils.enable_progress_bars()
    else:
        datasets.disable_progress_bars()
        hf_utils.disable_progress_bars()


def enabled() -> bool:
    """Whether bars may be drawn (a retriever's own ``show_progress`` can still turn its bars off)."""
    return _ENABLED


def progress_bar(
    iterable: Iterable[Any], *, desc: str, total: int | None = None, unit: str = "it", disable: bool = False
) -> Any:
    """A transient tqdm bar on stderr (terminals only); a pass-through when disabled here or by ``disable``."""
    from tqdm.auto import tqdm

    # disable=None: tqdm draws only on a terminal, so logs and captured stderr hold no bar fragments
    off = True if disable or not _ENABLED else None
    return tqdm(iterable, desc=desc, total=total, unit=unit, disable=off, leave=False, dynamic_ncols=True)
