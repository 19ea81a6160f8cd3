"""The study's item pool: PQB, the authors' release and real review sentences, blinded in one pool.

Each item asks one task (:mod:`pqb.builders.study.rubric`) about texts from one **source**:

| task | ``pqb`` | ``authors`` | ``real`` |
|---|---|---|---|
| syntactic | a row's ``query`` | a ``syntax_query`` | a review sentence of 15-35 words |
| attribution | a row's ``query``; A/B = its user and its pair partner | a ``syntax_query`` when both users of the product wrote reviews in the slice | a review sentence; A/B = its author (sentence held out) and a seeded other reviewer |
| error | ``error_query`` beside ``query``, with the user's slip profile and own sentences | — (the release publishes no user profiles) | — |

Real sentences are the calibration rows: what raters give to text people actually wrote, and how well they
attribute a real user's own sentence. Writing samples are up to :data:`SAMPLE_SENTENCES` of the user's
review sentences (6-40 words), seeded per item; an item's own text never appears in its samples.

**Blinding.** The sheet carries the task and the texts; the source, the generation condition and the
true author sit in the key only. Item ids are ``it_`` + a hash of (seed, source, task, reference): they do
not encode the source, and they are stable for one seed. A and B are assigned by a seeded coin per item.

**Stratification** (:func:`stratified`): the paper's 360 items are spread equally over (domain, task)
strata, and within a stratum equally over the sources that have items for it; a source short of its
share leaves the rest to the others, and a stratum short of its share is reported, never padded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pqb.builders.errors import UsageError
from pqb.builders.publish.tables import pseudonymize
from pqb.builders.reports.text_sources import (
    ReviewSentence,
    in_length,
    read_pqb_rows,
    read_release,
    review_sentences,
)
from pqb.builders.seeds import derive_seed
from pqb.builders.study.rubric import TASKS
from pqb.dataset.io import stable_hash

SOURCES = ("pqb", "pqb_baseline", "authors", "real")
"""``pqb_baseline`` is a second PQB build (``study export --baseline-dataset-path``), e.g. the build before
a change to the generator: rated in the same blinded pool, its column is the before of a before/after."""
SAMPLE_SENTENCES = 5
SAMPLE_MIN_WORDS, SAMPLE_MAX_WORDS = 6, 40
MIN_SAMPLE = 3
"""A user with fewer usable sentences than this cannot be shown as a writing sample."""

SHOWN_FIELDS = ("text", "clean_text", "sample_a", "sample_b", "profile")
"""What an annotator or the judge sees of an item (besides its id and task)."""

MECHANISM_WORDS = {
    "keyboard_adjacent": "neighbouring-key slips",
    "substitution": "wrong letters",
    "transposition": "swapped letters",
    "repetition": "doubled letters",
    "insertion": "extra letters",
    "deletion": "dropped letters",
    "homophone": "sound-alike words",
    "case": "capitalisation",
    "apostrophe": "apostrophes",
    "two_letter": "two-letter slips",
}


@dataclass(frozen=True)
class Item:
    """One question of the study. ``source``, ``truth`` and ``ref`` go to the key, never to the sheet."""

    task: str
    domain: str
    source: str
    ref: str
    text: str
    clean_text: str = ""
    sample_a: str = ""
    sample_b: str = ""
    profile: str = ""
    truth: str = ""
    item_id: str = ""

    def shown(self) -> dict[str, str]:
        return {"item_id": self.item_id, "task": self.task, **{f: getattr(self, f) for f in SHOWN_FIELDS}}

    def key_row(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in SHOWN_FIELDS}


def _numbered(sentences: Sequence[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))


@dataclass
class UserWriting:
    """Each reviewer's usable sentences (6-40 words) with the product reviewed, keyed by Amazon id; PQB
    pseudonyms resolve to it."""

    by_user: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    pseudonyms: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_sentences(cls, sentences: Iterable[ReviewSentence]) -> UserWriting:
        out = cls()
        for s in sentences:
            if SAMPLE_MIN_WORDS <= len(s.text.split()) <= SAMPLE_MAX_WORDS:
                out.by_user.setdefault(s.user_id, []).append((s.text, s.asin))
        out.pseudonyms = {pseudonymize(u): u for u in out.by_user}
        return out

    def of(self, user: str) -> list[tuple[str, str]]:
        return self.by_user.get(self.pseudonyms.get(user, user), [])

    def sample(self, user: str, seed: int, *parts: Any, exclude: str = "", asin: str = "") -> list[str]:
        """Up to :data:`SAMPLE_SENTENCES` of the user's sentences, never ``exclude`` and never one about
        ``asin`` (a sample about the item's own product would give its author away by topic)."""
        pool = [t for t, a in self.of(user) if t != exclude and a != asin]
        if len(pool) <= SAMPLE_SENTENCES:
            return pool
        rng = np.random.default_rng(derive_seed(seed, "study-sample", user, *parts))
        return [pool[i] for i in sorted(rng.choice(len(pool), SAMPLE_SENTENCES, replace=False))]


def _attribution(
    base: Mapping[str, Any], author: str, other: str, writing: UserWriting, seed: int, asin: str
) -> Item | None:
    """An attribution item, or ``None`` when either user has too few sentences to show."""
    own = writing.sample(author, seed, base["ref"], "own", exclude=base["text"], asin=asin)
    alt = writing.sample(other, seed, base["ref"], "other", exclude=base["text"], asin=asin)
    if len(own) < MIN_SAMPLE or len(alt) < MIN_SAMPLE:
        return None
    author_is_a = bool(derive_seed(seed, "study-ab", base["ref"]) & 1)
    a, b = (own, alt) if author_is_a else (alt, own)
    return Item(**base, sample_a=_numbered(a), sample_b=_numbered(b), truth="A" if author_is_a else "B")


def _profile_text(user_row: Mapping[str, Any] | None, backoff: bool, sentences: Sequence[str]) -> str:
    lines = []
    if user_row is not None:
        mech = sorted(user_row.get("mechanisms") or [], key=lambda m: -float(m["prob"]))
        shares = ", ".join(
            f"{MECHANISM_WORDS.get(m['mechanism'], m['mechanism'])} {100 * float(m['prob']):.0f}%"
            for m in mech
            if float(m["prob"]) >= 0.005
        )
        lines.append(f"Slip kinds in this user's profile: {shares}.")
        if backoff:
            lines.append("(Few slips of their own were found: the shares lean on all users' slips.)")
    if sentences:
        lines += ["Some of this user's own review sentences:", _numbered(sentences)]
    return "\n".join(lines)


def pqb_candidates(
    domain: str,
    rows: Sequence[Mapping[str, Any]],
    users: Mapping[str, Mapping[str, Any]],
    writing: UserWriting,
    seed: int,
    source: str = "pqb",
) -> dict[tuple[str, str], list[Item]]:
    out: dict[tuple[str, str], list[Item]] = defaultdict(list)
    partner: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        partner[r["pair_id"]].append(r["user_id"])
    for r in rows:
        ref = str(r["id"])
        base = {"task": "syntactic", "domain": domain, "source": source, "ref": ref, "text": r["query"]}
        out[("syntactic", source)].append(Item(**base))
        others = [u for u in partner[r["pair_id"]] if u != r["user_id"]]
        if others and (
            it := _attribution(
                {**base, "task": "attribution"}, r["user_id"], others[0], writing, seed, r["asin"]
            )
        ):
            out[("attribution", source)].append(it)
        if r.get("error_query") and r["error_query"] != r["query"]:
            own = writing.sample(r["user_id"], seed, ref, "profile", asin=r["asin"])
            profile = _profile_text(users.get(r["user_id"]), bool(r.get("backoff")), own)
            out[("error", source)].append(
                Item(
                    **{**base, "task": "error", "text": r["error_query"]},
                    clean_text=r["query"],
                    profile=profile,
                )
            )
    return out


def authors_candidates(
    domain: str, release: Mapping[str, Sequence[Mapping[str, Any]]], writing: UserWriting, seed: int
) -> dict[tuple[str, str], list[Item]]:
    out: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for asin, recs in release.items():
        for r in recs:
            ref = f"{asin}:{r['uid']}"
            base = {
                "task": "syntactic",
                "domain": domain,
                "source": "authors",
                "ref": ref,
                "text": r["syntax_query"],
            }
            out[("syntactic", "authors")].append(Item(**base))
            others = [x["uid"] for x in recs if x["uid"] != r["uid"]]
            if others and (
                it := _attribution({**base, "task": "attribution"}, r["uid"], others[0], writing, seed, asin)
            ):
                out[("attribution", "authors")].append(it)
    return out


def real_candidates(
    domain: str, sentences: Sequence[ReviewSentence], writing: UserWriting, seed: int
) -> dict[tuple[str, str], list[Item]]:
    out: dict[tuple[str, str], list[Item]] = defaultdict(list)
    seen: set[str] = set()
    reviewers = sorted(u for u, s in writing.by_user.items() if len(s) >= MIN_SAMPLE + 1)
    for s in sentences:
        if not in_length(s.text) or s.text in seen:
            continue
        seen.add(s.text)
        ref = f"{s.user_id}:{stable_hash(s.text, length=12)}"
        base = {"task": "syntactic", "domain": domain, "source": "real", "ref": ref, "text": s.text}
        out[("syntactic", "real")].append(Item(**base))
        others = [u for u in reviewers if u != s.user_id]
        if others:
            other = others[derive_seed(seed, "study-other", ref) % len(others)]
            if it := _attribution({**base, "task": "attribution"}, s.user_id, other, writing, seed, s.asin):
                out[("attribution", "real")].append(it)
    return out


def read_pqb_users(dataset_dir: str | Path, domain: str) -> dict[str, dict[str, Any]]:
    """The ``<domain>-users`` config (error profiles), by user id; empty when the folder has none."""
    import pyarrow.parquet as pq

    files = sorted((Path(dataset_dir) / "data" / f"{domain}-users").glob("*.parquet"))
    return {r["user_id"]: r for f in files for r in pq.read_table(f).to_pylist()}


def domain_candidates(
    domain: str,
    *,
    sources: Sequence[str],
    dataset_dir: str | Path | None,
    release_dir: str | Path | None,
    baseline_dir: str | Path | None = None,
    amazon_dir: str | Path | None,
    seed: int,
) -> tuple[dict[tuple[str, str], list[Item]], dict[str, Any]]:
    """Every candidate item of one domain, by (task, source), and what was read."""
    if "pqb_baseline" in sources and baseline_dir is None:
        raise UsageError("--sources pqb_baseline needs --baseline-dataset-path (the other PQB build)")
    sentences, read = review_sentences(amazon_dir, domain)
    writing = UserWriting.from_sentences(sentences)
    cands: dict[tuple[str, str], list[Item]] = {}
    if "pqb" in sources:
        rows = read_pqb_rows(dataset_dir or "pqb_dataset", domain)
        cands |= pqb_candidates(
            domain, rows, read_pqb_users(dataset_dir or "pqb_dataset", domain), writing, seed
        )
    if "pqb_baseline" in sources:
        rows = read_pqb_rows(baseline_dir, domain)
        users = read_pqb_users(baseline_dir, domain)
        cands |= pqb_candidates(domain, rows, users, writing, seed, source="pqb_baseline")
    if "authors" in sources:
        cands |= authors_candidates(domain, read_release(release_dir, domain), writing, seed)
    if "real" in sources:
        cands |= real_candidates(domain, sentences, writing, seed)
    return cands, {
        "reviews": read,
        "reviewers_with_samples": sum(len(v) >= MIN_SAMPLE for v in writing.by_user.values()),
    }


def _shares(total: int, names: Sequence[Any]) -> dict[Any, int]:
    """``total`` split as evenly as possible over ``names`` (the remainder to the first ones, in order)."""
    q, r = divmod(total, len(names)) if names else (0, 0)
    return {n: q + (i < r) for i, n in enumerate(names)}


def _allocate(target: int, available: Mapping[str, int]) -> dict[str, int]:
    """Equal shares of ``target`` over sources, a short source's remainder given to the others."""
    alloc = {s: 0 for s in available}
    left, open_ = target, [s for s in available if available[s] > 0]
    while left > 0 and open_:
        for s, k in _shares(left, open_).items():
            alloc[s] += min(k, available[s] - alloc[s])
        left = target - sum(alloc.values())
        open_ = [s for s in open_ if alloc[s] < available[s]]
    return alloc


def stratified(
    candidates: Mapping[str, Mapping[tuple[str, str], Sequence[Item]]],
    n: int,
    seed: int,
    tasks: Sequence[str] = TASKS,
) -> tuple[list[Item], dict[str, Any]]:
    """Draw ``n`` items over (domain, task) strata and sources, id them, and shuffle them with ``seed``."""
    strata = [(d, t) for d in sorted(candidates) for t in tasks]
    chosen: list[Item] = []
    allocation: dict[str, Any] = {}
    for (domain, task), want in _shares(n, strata).items():
        pools = {s: list(candidates[domain].get((task, s), [])) for s in SOURCES}
        alloc = _allocate(want, {s: len(p) for s, p in pools.items()})
        for s, k in alloc.items():
            pool = pools[s]
            if k:
                rng = np.random.default_rng(derive_seed(seed, "study-draw", domain, task, s))
                chosen += [pool[i] for i in sorted(rng.choice(len(pool), k, replace=False))]
        allocation[f"{domain}/{task}"] = {
            "target": want,
            "drawn": sum(alloc.values()),
            "by_source": {s: {"drawn": alloc[s], "available": len(pools[s])} for s in SOURCES},
        }
    items = [_with_id(it, seed) for it in chosen]
    if len({it.item_id for it in items}) != len(items):  # pragma: no cover - a 40-bit hash collision
        raise RuntimeError("two study items got one id; change --seed")
    order = np.random.default_rng(derive_seed(seed, "study-order")).permutation(len(items))
    return [items[i] for i in order], allocation


def _with_id(item: Item, seed: int) -> Item:
    return Item(
        **{**asdict(item), "item_id": "it_" + stable_hash(seed, item.source, item.task, item.ref, length=10)}
    )
