"""One switch for every progress bar of the builders (``--no-progress``).

Bars are drawn deep inside stages (spaCy parses, ERRANT alignment, correction batches) that are called
through several layers, some of which other modules own; threading a ``progress`` argument through
each signature would touch them all. Instead the CLI and :func:`builders.pipeline.build` set a context
variable with :func:`progress_bars`, and every bar is made with :func:`bar`, which passes tqdm
``disable=`` when the switch is off. Functions that take an explicit ``progress`` argument keep it and
pass ``disable=not progress``: a bar shows only when both allow it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_ENABLED: ContextVar[bool] = ContextVar("pqb_progress_bars", default=True)


def enabled() -> bool:
    """Whether bars may be drawn here (``False`` inside ``progress_bars(False)``)."""
    return _ENABLED.get()


@contextmanager
def progress_bars(on: bool) -> Iterator[None]:
    """Turn every :func:`bar` on or off for the duration of the block (restored afterwards)."""
    token = _ENABLED.set(on)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def bar(iterable: Iterable[T], *, disable: bool = False, **kwargs: Any) -> Iterable[T]:
    """``tqdm(iterable, **kwargs)``, disabled when the switch is off or the caller says ``disable``."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=disable or not enabled(), **kwargs)
