"""The kinds of attribute value a query phrases differently, and the attribute keys that name them.

Shared by the source wing (which types each core term from its key and its parse,
:mod:`pqb.builders.source.descriptors`) and the queries wing (whose realizer has frames per kind and
falls back to the key alone for a products file without kinds), so both read one table.
"""

from __future__ import annotations

import re

KINDS: tuple[str, ...] = (
    "brand", "product", "color", "material", "platform", "device", "purpose", "connectivity", "style",
    "size", "age_rating", "audience", "language", "adj_feature", "noun_feature", "count_feature", "modifier",
)  # fmt: skip
"""What a core term is typed as: the issue-43 kinds (brand, product kind, colour, material, platform or
compatibility, connectivity, style, size, age rating, adjectival and nominal feature) plus the language,
the intended use ("Recommended Uses For Product: Gaming": "for Gaming") and the intended user ("Age Range:
Adult", which is not a rating: "rated Adult" says something else); and, from how the domain's text uses
a value (:func:`pqb.builders.source.descriptors.kind_of`), a **device** (a platform that is a common
noun and takes an article: "for a laptop", not "for Laptop"), a **modifier** (a value the text only
writes before a noun: "a dust proof case", never "with dust proof") and a **count feature** (a nominal
feature that takes an article: "with a zipper", but "with lighting")."""

FEATURE_KEY = "feature"
"""The one key every unkeyed feature line shares (``Feature 1`` ... ``Feature n`` are positions, not keys)."""
CATEGORY_KEY = "category path"
"""The key of a node of the product's category path ("PlayStation 3" in Video Games > Legacy Systems >
PlayStation Systems > PlayStation 3 > Games): a core term only where the domain's text uses it as a
platform."""

KEY_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("brand", ("brand", "manufacturer", "publisher", "developer", "label")),
    ("audience", ("age range",)),
    ("age_rating", ("rated", "esrb", "rating", "age rating")),
    ("color", ("color", "colour")),
    ("material", ("material", "fabric")),
    ("connectivity", ("connectivity", "connector", "interface", "cable type")),
    ("platform", ("platform", "compatible", "operating system", "console", "support model")),
    ("purpose", ("uses for product", "recommended use", "specific use", "usage")),
    ("language", ("language",)),
    ("size", ("size",)),
    ("product", ("type of item", "item type", "product type", "controller type", "form factor",
                 "input device", "item form", "model name")),
    ("style", ("style", "theme", "pattern", "design", "genre", "edition", "finish")),
)  # fmt: skip
"""Key-name patterns (whole words) -> kind, first match wins: ``connector type`` is connectivity, not a
product kind, and ``operating system`` is a platform although it contains "rating". A key that matches
none names a feature, adjectival or nominal by its value's parse."""

_PAREN = re.compile(r"\s*\(.*\)$")
_FEATURE_NAME = re.compile(r"feature \d+")
_PATTERNS = tuple((kind, tuple(re.compile(rf"\b{re.escape(p)}\b") for p in ps)) for kind, ps in KEY_KINDS)


def key_kind(key: str) -> str:
    """The kind an attribute key names (:data:`KEY_KINDS`), ``category`` for a category-path node, or
    ``feature``."""
    low = " ".join(key.lower().split())
    if low == FEATURE_KEY or _FEATURE_NAME.fullmatch(low):
        return "feature"
    if low == CATEGORY_KEY:
        return "category"
    low = _PAREN.sub("", low) or low
    for kind, patterns in _PATTERNS:
        if any(p.search(low) for p in patterns):
            return kind
    return "feature"
