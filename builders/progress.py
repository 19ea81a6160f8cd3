"""One switch for every progress bar of the builders (``--no-progress``).

Bars are drawn deep inside stages (spaCy parses, ERRANT alignment, correction batches) that are called
through several layers, some of which other modules own; threading a ``progress`` argument through
each signature would touch them all. Instead the CLI and :func:`builders.pipeline.build` set a context
variable with :func:`progress_bars`, and every bar is made with :func:`bar`, which passes tqdm
``disable=`` when the switch is off. Functions that take an explicit ``progress`` argument keep it and
pass ``disable=not progress``: a bar shows only when both allow it.

The libraries the builders call draw bars of their own (``huggingface_hub`` downloads, ``transformers``
weight loading); switching off turns theirs off too, through their own switches, and switching back
turns them on again unless they were already off (e.g. ``HF_HUB_DISABLE_PROGRESS_BARS=1``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_ENABLED: ContextVar[bool] = ContextVar("pqb_progress_bars", default=True)


def enabled() -> bool:
    """Whether bars may be drawn here (``False`` inside ``progress_bars(False)``)."""
    return _ENABLED.get()


def _hub_bars_off() -> bool:
    try:
        import huggingface_hub.utils as hub
    except ImportError:  # pragma: no cover - a dependency of the build extra
        return True
    return bool(hub.are_progress_bars_disabled())


def _library_bars(on: bool) -> None:
    """Switch the Hugging Face libraries' bars; ``transformers`` imported later copies the Hub's state."""
    import huggingface_hub.utils as hub

    (hub.enable_progress_bars if on else hub.disable_progress_bars)()
    if "transformers" in sys.modules:
        import transformers.utils.logging as tf

        (tf.enable_progress_bar if on else tf.disable_progress_bar)()


@contextmanager
def progress_bars(on: bool) -> Iterator[None]:
    """Turn every :func:`bar` (and the libraries' bars) on or off for the block; restored afterwards."""
    token = _ENABLED.set(on)
    libraries_off = not on and not _hub_bars_off()  # already off (HF_HUB_DISABLE_PROGRESS_BARS): leave them
    if libraries_off:
        _library_bars(False)
    try:
        yield
    finally:
        _ENABLED.reset(token)
        if libraries_off and enabled():
            _library_bars(True)


def bar(iterable: Iterable[T], *, disable: bool = False, **kwargs: Any) -> Iterable[T]:
    """``tqdm(iterable, **kwargs)``, disabled when the switch is off or the caller says ``disable``."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=disable or not enabled(), **kwargs)
