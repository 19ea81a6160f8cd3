"""Users: review cleaning, sentences, the profile/held-out split, qualification, the per-user cap and links.

Sentences are cut at ``. ! ?`` followed by white space (:func:`pqb.builders.text.split_at_sentence_ends`,
the authors' rule; chosen over spaCy's parser and senter by ``bench/bench_splitters.py``), so the users
stage counts every user's sentences without a model and writes the sentences of the users the
benchmark uses only (docs/design.md §3, "Users"). The split hashes a salted, normalised sentence with
SHA-1: duplicate sentences always land on the same side, and the split does not depend on file order
or on which other users are present. Thresholds are configuration (:class:`UserConfig`): the offline
slice has ~20 sentences a user, the paper's data ~50.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pqb.builders.config import UserConfig
from pqb.builders.executor import Executor
from pqb.builders.nlp import load_tokenizer
from pqb.builders.seeds import sentence_key
from pqb.builders.text import collapse_spaces, split_at_sentence_ends, strip_tags, unescape_html


def clean_review_text(text: str) -> str:
    """Cleaning (docs/design.md §3): repeated HTML unescape, ``<br>`` → space, other tags removed, spaces collapsed."""
    return collapse_spaces(strip_tags(unescape_html(text or "")))


def split_bucket(sentence: str, salt: str = UserConfig.split_salt) -> int:
    """SHA-1 bucket (0–9) of the salted, lower-cased, stripped sentence."""
    digest = hashlib.sha1((salt + sentence.strip().lower()).encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % 10


def split_of(sentence: str, cfg: UserConfig = UserConfig()) -> str:
    return "profile" if split_bucket(sentence, cfg.split_salt) < cfg.profile_buckets else "heldout"


def has_tokens(sentence: str, n: int) -> bool:
    """Whether ``sentence`` has at least ``n`` tokens of the spaCy pipeline's tokenizer (white space not
    counted), as its parse would. The tokenizer runs only when the answer is in doubt: it splits each
    white-space word into one or more tokens, so ``n`` words are at least ``n`` tokens."""
    if len(sentence.split(maxsplit=n)) >= n:
        return True
    return sum(1 for t in load_tokenizer()(sentence) if not t.is_space) >= n


def review_sentences(text: str, cfg: UserConfig = UserConfig()) -> list[str]:
    """The sentences one raw review gives: cleaned, cut at sentence ends, pieces of fewer than
    ``cfg.min_sentence_tokens`` tokens dropped."""
    return [
        s for s in split_at_sentence_ends(clean_review_text(text)) if has_tokens(s, cfg.min_sentence_tokens)
    ]


def count_chunk(job: tuple[Sequence[str], UserConfig]) -> np.ndarray:
    """``(profile, held-out)`` sentence counts of each review text of one chunk (in whichever process the
    executor chose): the users stage's counting pass, which touches every review and parses none."""
    texts, cfg = job
    out = np.zeros((len(texts), 2), np.int64)
    for i, text in enumerate(texts):
        for s in review_sentences(text, cfg):
            out[i, int(split_bucket(s, cfg.split_salt) >= cfg.profile_buckets)] += 1
    return out


def sentence_rows(
    reviews: Iterable[Mapping[str, Any]], cfg: UserConfig = UserConfig()
) -> list[dict[str, Any]]:
    """One row per sentence of every review (``reviews`` rows: user_id, parent_asin, review_idx, text),
    in review order, each with its split and its :func:`~pqb.builders.seeds.sentence_key` (the cap's order).
    Sentence ids count a review's kept sentences, so they do not depend on the cap."""
    rows: list[dict[str, Any]] = []
    for r in reviews:
        idx = int(r["review_idx"])
        for k, text in enumerate(review_sentences(r["text"], cfg)):
            rows.append(
                {
                    "user_id": r["user_id"],
                    "parent_asin": r["parent_asin"],
                    "review_idx": idx,
                    "sent_idx": k,
                    "sentence_id": f"r{idx}s{k}",
                    "text": text,
                    "split": split_of(text, cfg),
                    "cap_key": sentence_key(cfg.seed, r["user_id"], r["parent_asin"], text),
                }
            )
    return rows


class CapChooser:
    """Which sentences of the users over :meth:`UserConfig.caps` reach the profile: per (user, split), the
    ``cap`` of smallest ``cap_key``. Fed sentence rows in any order, it keeps at most twice the cap per
    side (trimmed as it goes), so its memory is bounded by users × cap, not by their sentences."""

    def __init__(self, caps: tuple[int, int]) -> None:
        self.caps = caps
        self._kept: dict[tuple[str, bool], list[tuple[bytes, int, int]]] = defaultdict(list)

    def add(self, row: Mapping[str, Any]) -> None:
        held = row["split"] != "profile"
        side = self._kept[(row["user_id"], held)]
        side.append((row["cap_key"], int(row["review_idx"]), int(row["sent_idx"])))
        cap = self.caps[held]
        if len(side) >= 2 * cap:
            side[:] = heapq.nsmallest(cap, side)

    def chosen(self) -> set[tuple[int, int]]:
        """(review_idx, sent_idx) of every sentence kept. Ties in ``cap_key`` are the same text of the same
        user about the same product, so which of them is kept changes no sentence a stage reads."""
        return {(i, k) for (_, held), side in self._kept.items()
                for _, i, k in heapq.nsmallest(self.caps[held], side)}  # fmt: skip


def qualified_mask(
    n_profile: np.ndarray, n_heldout: np.ndarray, cfg: UserConfig = UserConfig()
) -> np.ndarray:
    """Which users qualify, from their profile and held-out sentence counts."""
    n_profile, n_heldout = np.asarray(n_profile), np.asarray(n_heldout)
    return (
        (n_profile + n_heldout >= cfg.min_sentences)
        & (n_profile >= cfg.min_profile)
        & (n_heldout >= cfg.min_heldout)
    )


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


MIN_PAIR_USERS = 2
"""Qualified reviewers a target needs to be a candidate under ``link="reviewers"`` (a pair is two users)."""
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

    ``reviewers``: qualified users who reviewed the product (the paper's setting), for the **candidate
    targets** only: targets (products with their core terms, ``is_target``) with at least
    :data:`MIN_PAIR_USERS` qualified reviewers, since one user makes no pair; a user who reviewed no
    candidate target is linked to nothing, so no stage profiles them. ``any``: each target gets its
    qualified reviewers first, then other qualified users in the order of a seeded SHA-1 of (asin, user),
    up to ``link_users_per_product`` users — for small samples in which reviewers rarely overlap the
    targets; every target is then a candidate. Either way the choice depends only on (seed, asin, user).
    That rule costs one hash per (target, qualified user), so ``any`` maps chunks of
    :data:`LINK_CHUNK` targets through ``executor`` (in order: the links do not depend on it).
    """
    if cfg.link not in ("reviewers", "any"):
        raise ValueError(f"unknown link mode {cfg.link!r}; use 'reviewers' or 'any'")
    qset = set(qualified)
    asins = sorted(set(targets))
    own = {a: sorted(u for u in set(reviewers.get(a, ())) if u in qset) for a in asins}
    if cfg.link == "reviewers":
        asins = [a for a in asins if len(own[a]) >= MIN_PAIR_USERS]
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
