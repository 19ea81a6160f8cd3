"""One switch for every progress bar of PQB (``pqb-build --no-progress``, ``pqb-harness run --no-progress``).

Bars are drawn deep inside builder stages (spaCy parses, ERRANT alignment) and harness loops
(loading tasks, encoding, ranking), behind layers that should not each grow a ``progress`` argument.
The CLIs set a context variable with :func:`progress_bars`, and every bar is made with :func:`bar`.
Switching off also silences the libraries' own bars (``huggingface_hub`` downloads, ``datasets``,
``transformers`` weight loading) through their own switches, and switching back restores them unless
they were already off (e.g. ``HF_HUB_DISABLE_PROGRESS_BARS=1``).

Bars draw only on a terminal (tqdm's ``disable=None``), so logs, CI output and captured stderr hold no
bar fragments. Builders and harness both use this module; it lives in ``pqb_dataset`` because that is
the one package both may import.
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


def tqdm_disable(disable: bool = False) -> bool | None:
    """The ``disable=`` value for tqdm: ``True`` when off here or for the caller, else ``None`` (terminals)."""
    return True if disable or not enabled() else None


def _hub_bars_off() -> bool:
    import huggingface_hub.utils as hub

    return bool(hub.are_progress_bars_disabled())


def _library_bars(on: bool) -> None:
    """Switch the Hugging Face libraries' bars (``transformers`` imported later copies the Hub's state)."""
    import huggingface_hub.utils as hub

    (hub.enable_progress_bars if on else hub.disable_progress_bars)()
    if "datasets" in sys.modules:
        import datasets

        (datasets.enable_progress_bars if on else datasets.disable_progress_bars)()
    if "transformers" in sys.modules:
        import transformers.utils.logging as tf

        (tf.enable_progress_bar if on else tf.disable_progress_bar)()


@contextmanager
def progress_bars(on: bool) -> Iterator[None]:
    """Turn every :func:`bar` (and the libraries' bars) on or off for the block; restored afterwards."""
    token = _ENABLED.set(on)
    # the libraries draw into logs too, so they follow the terminals-only rule of :func:`bar`; if they
    # are off already (HF_HUB_DISABLE_PROGRESS_BARS), they are left alone
    quiet = not on or not (sys.stderr.isatty() if hasattr(sys.stderr, "isatty") else False)
    libraries_off = quiet and not _hub_bars_off()
    if libraries_off:
        _library_bars(False)
    try:
        yield
    finally:
        _ENABLED.reset(token)
        if libraries_off:
            _library_bars(True)


def bar(iterable: Iterable[T], *, disable: bool = False, **kwargs: Any) -> Iterable[T]:
    """``tqdm(iterable, **kwargs)`` on stderr, off when the switch is off or the caller says ``disable``."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=tqdm_disable(disable), **kwargs)
