"""What every generation back-end exchanges: the product spec it reads and the candidates it returns.

A module of its own so that the back-ends (:mod:`pqb.builders.queries.realizer`, :mod:`pqb.builders.queries.generate`) and the
filters share the types without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Candidate:
    """One generated query. ``frame`` names the realizer frame (``llm``/``openai`` for model output)."""

    text: str
    frame: str
    backend: str


@dataclass(frozen=True)
class ProductSpec:
    """What generation sees of a product: its id, title, the 5 core attributes (name, value) and the kind
    of each (:data:`pqb.builders.kinds.KINDS`; empty when the products file predates typing)."""

    asin: str
    title: str
    core: tuple[tuple[str, str], ...]
    kinds: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()
    """How a query writes each core term (the term itself, case aside: "dust proof"); empty: as it is."""

    @property
    def core_terms(self) -> list[str]:
        return [v for _, v in self.core]

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> ProductSpec:
        """Pair each core term with the name of the attribute it came from (``""`` when unknown)."""
        names = {}
        for a in rec.get("attributes") or []:
            names.setdefault(str(a["value"]).strip().lower(), str(a["name"]))
        core = tuple((names.get(t.strip().lower(), ""), t) for t in rec.get("core_terms") or [])
        kinds = tuple(str(k) for k in rec.get("core_kinds") or [])
        forms = tuple(str(f) for f in rec.get("core_forms") or [])
        same = len(forms) == len(core) and all(
            f.lower() == t.lower() for f, (_, t) in zip(forms, core, strict=True)
        )
        return cls(
            asin=str(rec["parent_asin"]),
            title=str(rec.get("title") or ""),
            core=core,
            kinds=kinds if len(kinds) == len(core) else (),
            forms=forms if same else (),
        )


@runtime_checkable
class CandidateGenerator(Protocol):
    """``generate(product, n, seed)`` returns up to ``n`` candidates; same inputs and seed, same output."""

    name: str

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]: ...
