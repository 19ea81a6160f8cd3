"""The one way a builder derives a seed from its parts (global seed, ASIN, user, purpose).

Why hash the parts instead of drawing from one generator: each product's and user's random choices
must not depend on how many others were processed before them (or on which machine, or in which
order), so adding a product or resuming a build changes nothing else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (e.g. global seed, asin, user): stable across runs and platforms."""
    h = hashlib.sha256(json.dumps([str(p) for p in parts]).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") >> 1


def sentence_key(seed: int, user_id: str, parent_asin: str, text: str) -> bytes:
    """The order in which a user's sentences are capped: SHA-1 of (seed, user, product, sentence).

    The syntactic profile keeps a user's first ``UserConfig.max_sentences`` sentences in this order and
    the error profile its first ``BuildConfig.error_max_sentences`` profile sentences, so both caps are
    seeded and independent of file order: two sentences share a key only when they are the same text
    of the same user about the same product, and then either is the same sentence to every stage."""
    return hashlib.sha1(f"pqb-cap|{seed}|{user_id}|{parent_asin}|{text}".encode()).digest()
