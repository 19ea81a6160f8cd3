"""Users: review cleaning, spaCy sentences, the profile/held-out split, qualification and product links.

The split (docs/design.md §3, "Users") hashes a salted, normalised sentence with SHA-1: duplicate sentences always land
on the same side, and the split does not depend on file order or on which other users are present.
Thresholds are configuration (:class:`UserConfig`): the offline slice has ~20 sentences a user, the
paper's data ~50.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pqb.builders.config import UserConfig
from pqb.builders.executor import Executor
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
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """One row per kept sentence of every review (``reviews`` rows: user_id, parent_asin, review_idx, text).

    The users stage calls this once per chunk of reviews; repeated texts in a chunk are cleaned and
    split once.
    """
    clean = {t: clean_review_text(t) for t in {r["text"] for r in reviews}}
    cleaned = [clean[r["text"]] for r in reviews]
    sents = split_sentences(cleaned, nlp=nlp, cache=cache, executor=executor)
    splits: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for r, ss in zip(reviews, sents, strict=True):
        k = 0
        for text, n_tok in ss:
            if n_tok < cfg.min_sentence_tokens or not text:
                continue
            split = splits.get(text)
            if split is None:
                split = splits[text] = split_of(text, cfg)
            rows.append(
                {
                    "user_id": r["user_id"],
                    "parent_asin": r["parent_asin"],
                    "review_idx": int(r["review_idx"]),
                    "sent_idx": k,
                    "sentence_id": f"r{int(r['review_idx'])}s{k}",
                    "text": text,
                    "split": split,
                }
            )
            k += 1
    return rows


def count_splits(sentences: Iterable[Mapping[str, Any]], counts: dict[str, list[int]]) -> None:
    """Add each sentence to its user's ``[profile, heldout]`` counts (the users stage does it per chunk)."""
    for s in sentences:
        c = counts.get(s["user_id"])
        if c is None:
            c = counts[s["user_id"]] = [0, 0]
        c[0 if s["split"] == "profile" else 1] += 1


def users_from_counts(
    counts: Mapping[str, Sequence[int]], cfg: UserConfig = UserConfig()
) -> list[dict[str, Any]]:
    """Per-user counts and the qualification flag, sorted by ``user_id``, from the ``[profile, heldout]``
    counts :func:`count_splits` accumulates chunk by chunk."""
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


def _nearest_by_rank(seed: int, asin: str, users: Sequence[tuple[str, bytes]], k: int) -> list[str]:
    """The ``k`` users of smallest :func:`_link_rank` (ties, which SHA-1 makes impossible in practice,
    by user id), hashing from one copied prefix state and keeping a ``k``-heap instead of sorting."""
    if k <= 0:
        return []
    prefix = hashlib.sha1(f"pqb-link|{seed}|{asin}|".encode())
    ranked = []
    for u, raw in users:
        h = prefix.copy()
        h.update(raw)
        ranked.append((h.digest(), u))
    return [u for _, u in heapq.nsmallest(k, ranked)]


LINK_CHUNK = 64
"""Targets per ``link="any"`` job handed to the executor (each job hashes every qualified user once per target)."""


def _nearest_chunk(job: tuple[int, list[str], list[tuple[str, bytes]], int]) -> list[list[str]]:
    """:func:`_nearest_by_rank` for one chunk of targets (in whichever process the executor chose)."""
    seed, asins, users, k = job
    return [_nearest_by_rank(seed, asin, users, k) for asin in asins]


def link_rows(
    targets: Sequence[str],
    reviewers: Mapping[str, Iterable[str]],
    qualified: Sequence[str],
    cfg: UserConfig = UserConfig(),
    executor: Executor | None = None,
) -> list[dict[str, str]]:
    """Product↔user links, sorted by (asin, user_id).

    ``reviewers``: qualified users who reviewed the product (the paper's setting). ``any``: each target
    gets its qualified reviewers first, then other qualified users in the order of a seeded SHA-1 of
    (asin, user), up to ``link_users_per_product`` users — for small samples in which reviewers rarely
    overlap the targets. Either way the choice depends only on (seed, asin, user) and is reproducible.
    That rule costs one hash per (target, qualified user), so ``any`` maps chunks of
    :data:`LINK_CHUNK` targets through ``executor`` (in order: the links do not depend on it).
    """
    if cfg.link not in ("reviewers", "any"):
        raise ValueError(f"unknown link mode {cfg.link!r}; use 'reviewers' or 'any'")
    qset = set(qualified)
    asins = sorted(set(targets))
    own = {a: sorted(u for u in set(reviewers.get(a, ())) if u in qset) for a in asins}
    k = cfg.link_users_per_product
    # a target with fewer than k reviewers tops up from the k smallest ranks over all qualified users,
    # which hold at least the k - |own| non-reviewers it needs
    short = [a for a in asins if len(own[a]) < k] if cfg.link == "any" else []
    near: dict[str, list[str]] = {}
    if short:
        encoded = [(u, u.encode()) for u in sorted(qset)]  # once, not per target
        jobs = ((cfg.seed, short[i : i + LINK_CHUNK], encoded, k) for i in range(0, len(short), LINK_CHUNK))
        found = map(_nearest_chunk, jobs) if executor is None else executor.map(_nearest_chunk, jobs)
        near = dict(zip(short, (n for chunk in found for n in chunk), strict=True))
    out: list[dict[str, str]] = []
    for asin in asins:
        mine = set(own[asin])
        extra = [u for u in near.get(asin, ()) if u not in mine][: k - len(mine)]
        out += [{"asin": asin, "user_id": u} for u in sorted([*own[asin], *extra])]
    return out
