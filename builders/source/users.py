"""Users: review cleaning, spaCy sentences, the profile/held-out split, qualification and product links.

The split (docs/design.md §3, "Users") hashes a salted, normalised sentence with SHA-1: duplicate sentences always land
on the same side, and the split does not depend on file order or on which other users are present.
Thresholds are configuration (:class:`UserConfig`): the offline slice has ~20 sentences a user, the
paper's data ~50.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pqb.builders.config import UserConfig
from pqb.builders.parses import ParseCache, split_sentences
from pqb.builders.text import collapse_spaces, strip_tags, unescape_html


def clean_review_text(text: str) -> str:
    """Cleaning (docs/design.md §3): repeated HTML unescape, ``<br>`` → space, other tags removed, spaces collapsed."""
    return collapse_spaces(strip_tags(unescape_html(text or "")))


def split_bucket(sentence: str, salt: str = UserConfig.split_salt) -> int:
    """SHA-1 bucket (0–9) of the salted, lower-cased, stripped sentence."""
    digest = hashlib.sha1((salt + sentence.strip().lower()).encode("utf-8")).hexdigest()
    return int(digest, 16) % 10


def split_of(sentence: str, cfg: UserConfig = UserConfig()) -> str:
    return "profile" if split_bucket(sentence, cfg.split_salt) < cfg.profile_buckets else "heldout"


def sentence_rows(
    reviews: Sequence[Mapping[str, Any]],
    cfg: UserConfig = UserConfig(),
    *,
    nlp: Any | None = None,
    cache: ParseCache | None = None,
) -> list[dict[str, Any]]:
    """One row per kept sentence of every review (``reviews`` rows: user_id, parent_asin, review_idx, text)."""
    cleaned = [clean_review_text(r["text"]) for r in reviews]
    sents = split_sentences(cleaned, nlp=nlp, cache=cache)
    rows: list[dict[str, Any]] = []
    for r, ss in zip(reviews, sents, strict=True):
        k = 0
        for text, n_tok in ss:
            if n_tok < cfg.min_sentence_tokens or not text:
                continue
            rows.append(
                {
                    "user_id": r["user_id"],
                    "parent_asin": r["parent_asin"],
                    "review_idx": int(r["review_idx"]),
                    "sent_idx": k,
                    "sentence_id": f"r{int(r['review_idx'])}s{k}",
                    "text": text,
                    "split": split_of(text, cfg),
                }
            )
            k += 1
    return rows


def user_rows(sentences: Iterable[Mapping[str, Any]], cfg: UserConfig = UserConfig()) -> list[dict[str, Any]]:
    """Per-user counts and the qualification flag, sorted by ``user_id``."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in sentences:
        counts[s["user_id"]][0 if s["split"] == "profile" else 1] += 1
    out = []
    for uid in sorted(counts):
        n_p, n_h = counts[uid]
        out.append(
            {
                "user_id": uid,
                "n_sentences": n_p + n_h,
                "n_profile": n_p,
                "n_heldout": n_h,
                "qualified": n_p + n_h >= cfg.min_sentences
                and n_p >= cfg.min_profile
                and n_h >= cfg.min_heldout,
            }
        )
    return out


def _link_rank(seed: int, asin: str, user_id: str) -> str:
    return hashlib.sha1(f"pqb-link|{seed}|{asin}|{user_id}".encode()).hexdigest()


def link_rows(
    targets: Sequence[str],
    reviewers: Mapping[str, Iterable[str]],
    qualified: Sequence[str],
    cfg: UserConfig = UserConfig(),
) -> list[dict[str, str]]:
    """Product↔user links, sorted by (asin, user_id).

    ``reviewers``: qualified users who reviewed the product (the paper's setting). ``any``: each target
    gets its qualified reviewers first, then other qualified users in the order of a seeded SHA-1 of
    (asin, user), up to ``link_users_per_product`` users — for small samples in which reviewers rarely
    overlap the targets. Either way the choice depends only on (seed, asin, user) and is reproducible.
    """
    qset = set(qualified)
    out: list[dict[str, str]] = []
    for asin in sorted(set(targets)):
        own = sorted(u for u in set(reviewers.get(asin, ())) if u in qset)
        chosen = list(own)
        if cfg.link == "any":
            rest = sorted((u for u in qset if u not in own), key=lambda u: _link_rank(cfg.seed, asin, u))
            chosen += rest[: max(0, cfg.link_users_per_product - len(chosen))]
        elif cfg.link != "reviewers":
            raise ValueError(f"unknown link mode {cfg.link!r}; use 'reviewers' or 'any'")
        out += [{"asin": asin, "user_id": u} for u in sorted(chosen)]
    return out
