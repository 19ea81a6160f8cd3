"""One switch for every progress bar of PQB (``pqb-build --no-progress``, ``pqb-harness run --no-progress``).

Bars are drawn deep inside builder stages (spaCy parses, ERRANT alignment) and harness loops
(loading tasks, encoding, ranking), behind layers that should not each grow a ``progress`` argument.
The CLIs set a context variable with :func:`progress_bars`, and every bar is made with :func:`bar`.
Switching off also silences the libraries' own bars (``huggingface_hub`` downloads, ``datasets``,
``transformers`` weight loading) through their own switches, and switching back restores each as it
was (left alone if the Hub's were already off, e.g. ``HF_HUB_DISABLE_PROGRESS_BARS=1``). ``datasets``
reads its switch once, at import, from ``HF_DATASETS_DISABLE_PROGRESS_BARS``; the block sets that
variable too, so a ``datasets`` first imported inside it (by the loaders, lazily) is silenced as well.

Bars draw only on a terminal (tqdm's ``disable=None``), so logs, CI output and captured stderr hold no
bar fragments. Builders and harness both use this module; it lives in ``pqb_dataset`` because that is
the one package both may import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_ENABLED: ContextVar[bool] = ContextVar("pqb_progress_bars", default=True)


def enabled() -> bool:
    """Whether bars may be drawn here (``False`` inside ``progress_bars(False)``)."""
    return _ENABLED.get()


def _stderr_is_terminal() -> bool:
    return bool(sys.stderr.isatty()) if hasattr(sys.stderr, "isatty") else False


def drawing() -> bool:
    """Whether a bar draws here: the switch is on and stderr is a terminal. For libraries that take a
    ``show_progress_bar`` bool rather than tqdm's ``disable=None`` (sentence-transformers: given
    ``True``, it draws into a log)."""
    return enabled() and _stderr_is_terminal()


def tqdm_disable(disable: bool = False) -> bool | None:
    """The ``disable=`` value for tqdm: ``True`` when off here or for the caller, else ``None`` (terminals)."""
    return True if disable or not enabled() else None


_DATASETS_ENV = "HF_DATASETS_DISABLE_PROGRESS_BARS"
"""``datasets`` freezes this variable at import, and it outranks ``datasets.enable_progress_bars()``."""


def _hub_bars_off() -> bool:
    import huggingface_hub.utils as hub

    return bool(hub.are_progress_bars_disabled())


def _library_switches() -> dict[str, tuple[Callable[[], bool], Callable[[bool], None]]]:
    """``(is on, turn on/off)`` for each imported library with its own bar switch.

    ``transformers`` imported later copies the Hub's state. ``datasets`` is left out when the user set
    its variable: that setting outranks its switch, which would only warn.
    """
    import huggingface_hub.utils as hub

    switches: dict[str, tuple[Callable[[], bool], Callable[[bool], None]]] = {
        "huggingface_hub": (
            lambda: not hub.are_progress_bars_disabled(),
            lambda on: (hub.enable_progress_bars if on else hub.disable_progress_bars)(),
        )
    }
    if "datasets" in sys.modules and os.environ.get(_DATASETS_ENV) is None:
        import datasets

        switches["datasets"] = (
            lambda: not datasets.utils.are_progress_bars_disabled(),
            lambda on: (datasets.enable_progress_bars if on else datasets.disable_progress_bars)(),
        )
    if "transformers" in sys.modules:
        import transformers.utils.logging as tf

        switches["transformers"] = (
            tf.is_progress_bar_enabled,
            lambda on: (tf.enable_progress_bar if on else tf.disable_progress_bar)(),
        )
    return switches


def _forget_datasets_env() -> None:
    """Undo the variable in a ``datasets`` imported inside the block: unset is what it would have read."""
    for name in ("datasets.config", "datasets.utils.tqdm"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, _DATASETS_ENV):
            setattr(module, _DATASETS_ENV, None)


@contextmanager
def _libraries_off() -> Iterator[None]:
    """The libraries' bars off for the block, then each back as it was (on, if imported inside it)."""
    switches = _library_switches()  # before the variable is set: set, it would read as the user's
    before = {name: is_on() for name, (is_on, _) in switches.items()}
    set_env = _DATASETS_ENV not in os.environ  # the user's own setting has priority, as in datasets
    imported = "datasets" in sys.modules
    if set_env:
        os.environ[_DATASETS_ENV] = "1"
    for _, switch in switches.values():
        switch(False)
    try:
        yield
    finally:
        if set_env:
            os.environ.pop(_DATASETS_ENV, None)
            if not imported and "datasets" in sys.modules:
                _forget_datasets_env()
        for name, (_, switch) in _library_switches().items():
            switch(before.get(name, True))


@contextmanager
def progress_bars(on: bool) -> Iterator[None]:
    """Turn every :func:`bar` (and the libraries' bars) on or off for the block; restored afterwards."""
    token = _ENABLED.set(on)
    # the libraries draw into logs too, so they follow the terminals-only rule of :func:`bar`; if they
    # are off already (HF_HUB_DISABLE_PROGRESS_BARS), they are left alone
    quiet = not on or not _stderr_is_terminal()
    try:
        with _libraries_off() if quiet and not _hub_bars_off() else nullcontext():
            yield
    finally:
        _ENABLED.reset(token)


def bar(iterable: Iterable[T], *, disable: bool = False, **kwargs: Any) -> Iterable[T]:
    """``tqdm(iterable, **kwargs)`` on stderr, off when the switch is off or the caller says ``disable``."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=tqdm_disable(disable), **kwargs)
