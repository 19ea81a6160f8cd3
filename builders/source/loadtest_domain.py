"""LOAD TEST domains at the published Amazon Reviews 2023 sizes (issue 46): users, products, reviews.

For builder benchmarks only, never for a dataset. :func:`generate_domain` writes a source folder in
the official layout (``<Category>.jsonl``, ``meta_<Category>.jsonl``) plus ``LOADTEST.md`` and
``loadtest.json``; every user id is ``LOADTEST-U…`` and every product id ``LOADTEST-P…``, so a build
from it says what it is. What is real and what is modelled:

* **Counts** (:data:`DOMAIN_SIZES`): users, products, reviews and tokens a review as the Amazon Reviews
  2023 README publishes them, times ``scale``. Totals are met exactly; the mean tokens a review in
  expectation (the generator reports the realised mean).
* **Reviews per user**: a discrete power law (zeta law truncated at :data:`MAX_REVIEWS_PER_USER`),
  ``P(k) ∝ k^-a``, with ``a`` solved so the mean is the published one (reviews ÷ users, 1.64–1.76).
  Amazon publishes the means, not the distribution; a power law is the usual model of per-user
  activity in review data (most users write one review, a few write hundreds), and its single
  parameter is then fixed by the mean. Counts are drawn by stratified inverse-CDF sampling (one
  uniform draw per stratum of width 1/users, seeded), so the sample follows the law closely even at
  small scale; the few reviews the draw misses or exceeds are added to or taken from random users.
  :func:`user_law` gives the shares the law implies (one review; at least 10; at least N sentences).
* **Review texts**: distinct, as in :mod:`pqb.builders.source.loadtest`: each sentence is a real
  sentence of the slice with one word (and each other word with probability
  :data:`~pqb.builders.source.loadtest.WORD_RATE`) replaced by a real word in the same case shape.
  A review's sentence count is a real review's count scaled by one factor (stochastic rounding, at
  least one), solved so the expected whitespace tokens a review equal the published mean. Tokens are
  whitespace-separated words of the raw text: if the published count is of sub-word tokens, real
  reviews hold fewer words than these, so the load is an upper bound. Rating, review title, helpful
  votes and verified flag are copied from the same real review.
* **Which product a review is of**: a Zipf–Mandelbrot popularity law over the products (weight of
  the r-th most popular ∝ 1/(r + :data:`POPULARITY_OFFSET`)), an assumption (the per-product counts
  are not published); popularity ranks are a seeded permutation of the product ids.
* **Products**: :func:`resampled_meta_records`, the document generator of issue 32 (a real title with
  words swapped; each body field a real record has taken from another real record), so product
  documents have real lengths. A category of the slice with too few real records (the slice's
  Musical_Instruments metadata has titles only; Baby_Products has five records) borrows them from the
  source's category with the most, and ``LOADTEST.md`` says which.

Generation streams users in blocks of :data:`USER_BLOCK`, vectorised with numpy: memory is a block's
reviews plus one 8-byte hash per text and per sentence (for the distinct shares it reports).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pqb.builders.source.amazon import ReadStats, iter_reviews
from pqb.builders.source.loadtest import WORD_RATE, split_sentences_cheaply
from pqb.dataset.io import atomic_path, atomic_write_json, atomic_write_text
from pqb.dataset.progress import bar

USER_PREFIX = "LOADTEST-U"
PRODUCT_PREFIX = "LOADTEST-P"


@dataclass(frozen=True)
class DomainSize:
    """A domain's size as the Amazon Reviews 2023 README publishes it (rounded as published)."""

    category: str
    users: int
    products: int
    reviews: int
    tokens_per_review: float

    def scaled(self, scale: float) -> DomainSize:
        """The same domain at ``scale`` (at least one user, one product, and one review per user)."""
        if not 0 < scale <= 1:
            raise ValueError(f"scale must be in (0, 1], got {scale}")
        users = max(1, round(self.users * scale))
        return DomainSize(self.category, users, max(1, round(self.products * scale)),
                          max(users, round(self.reviews * scale)), self.tokens_per_review)  # fmt: skip


DOMAIN_SIZES: dict[str, DomainSize] = {
    "video_games": DomainSize("Video_Games", 2_800_000, 137_200, 4_600_000, 75.6),
    "musical_instruments": DomainSize("Musical_Instruments", 1_800_000, 213_600, 3_000_000, 60.7),
    "baby_products": DomainSize("Baby_Products", 3_400_000, 217_700, 6_000_000, 53.9),
}
"""The paper's three domains: #User, #Item, #Rating and #R_Token ÷ #Rating of the dataset's README."""

MAX_REVIEWS_PER_USER = 2_000
"""Truncation of the per-user law. Not published; above the largest count the slice's samples show
(253 reviews in 10K rows of Electronics). It moves the solved exponent by < 0.01 between 1,000 and 100,000."""
POPULARITY_OFFSET = 50.0
"""Zipf–Mandelbrot offset of product popularity: at 137K products the most reviewed one holds 0.25%
of the reviews and the least about 4 reviews in expectation (an assumption, see the docstring)."""
USER_BLOCK = 20_000
"""Users generated per vectorised block."""
MIN_OWN_RECORDS = 100
"""A category needs this many real sentences' reviews / titled records / records with a body to
use its own; else it borrows the source's richest category (see :func:`_pools`)."""
MIN_OWN_SENTENCES = 1_000
BODY_FIELDS = ("brand", "categories", "details", "features", "description")
"""The fields a LOAD TEST product resamples beside its title, each from another real record."""


# --------------------------------------------------------------------------------------------------
# The per-user law
# --------------------------------------------------------------------------------------------------


def _zeta_pmf(a: float, kmax: int) -> np.ndarray:
    k = np.arange(1, kmax + 1, dtype=np.float64)
    p = k**-a
    return p / p.sum()


def power_law_exponent(mean: float, kmax: int = MAX_REVIEWS_PER_USER) -> float:
    """The exponent ``a`` of the zeta law on 1..kmax whose mean is ``mean`` (bisection; the mean falls as ``a`` grows)."""
    k = np.arange(1, kmax + 1, dtype=np.float64)
    if not 1 < mean < float(k.mean()):
        raise ValueError(f"a mean of {mean} reviews a user cannot be met on 1..{kmax}")
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if float(k @ _zeta_pmf(mid, kmax)) > mean:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def reviews_per_user(n_users: int, n_reviews: int, rng: np.random.Generator,
                     kmax: int = MAX_REVIEWS_PER_USER) -> tuple[np.ndarray, float]:  # fmt: skip
    """Review counts of ``n_users`` users summing to ``n_reviews``, from the zeta law of that mean, and its exponent."""
    if n_reviews < n_users:
        raise ValueError(f"{n_reviews} reviews cannot give {n_users} users one review each")
    if n_reviews == n_users:
        return np.ones(n_users, np.int64), math.inf
    a = power_law_exponent(n_reviews / n_users, kmax)
    cdf = np.cumsum(_zeta_pmf(a, kmax))
    u = (np.arange(n_users) + rng.random(n_users)) / n_users  # one draw per stratum
    counts = np.minimum(np.searchsorted(cdf, u, side="right"), kmax - 1).astype(np.int64) + 1
    rng.shuffle(counts)
    _meet_total(counts, n_reviews, kmax, rng)
    return counts, a


def _meet_total(counts: np.ndarray, total: int, kmax: int, rng: np.random.Generator) -> None:
    """Make ``counts`` sum to ``total`` in place, changing the heaviest users (the top 0.1%) in proportion
    to their counts: what a sample of a heavy-tailed law misses or overshoots is its tail, so the body of
    the law (the share of one-review users) stays as drawn. What they cannot absorb (the cap ``kmax``, the
    floor of one) goes to or comes from random users."""
    diff = total - int(counts.sum())
    if diff:
        top = np.argsort(-counts, kind="stable")[: max(1, len(counts) // 1000)]
        share = counts[top] / counts[top].sum()
        step = np.floor(diff * share).astype(np.int64)
        step[: abs(diff - int(step.sum()))] += np.sign(diff - int(step.sum()))
        counts[top] = np.clip(counts[top] + step, 1, kmax)
        diff = total - int(counts.sum())
    while diff:
        room = np.flatnonzero(counts < kmax) if diff > 0 else np.flatnonzero(counts > 1)
        if not len(room):
            raise ValueError(f"{total} reviews cannot be spread over {len(counts)} users of 1..{kmax}")
        pick = rng.choice(room, min(abs(diff), len(room)), replace=False)
        counts[pick] += np.sign(diff)
        diff = total - int(counts.sum())


def user_law(a: float, sentences_per_review: Sequence[float], kmax: int = MAX_REVIEWS_PER_USER,
             thresholds: Sequence[int] = (10, 50), n: int = 200_000, seed: int = 0) -> dict[str, float]:  # fmt: skip
    """Shares the law implies: users with one review, with >= 10 reviews, and (Monte Carlo over ``n``
    users, sentences per review drawn from ``sentences_per_review``) with >= each threshold of sentences."""
    p = _zeta_pmf(a, kmax)
    rng = np.random.default_rng(seed)
    k = rng.choice(np.arange(1, kmax + 1), size=n, p=p)
    per = np.asarray(sentences_per_review, np.int64)
    sents = np.add.reduceat(per[rng.integers(len(per), size=int(k.sum()))], np.r_[0, np.cumsum(k)[:-1]])
    out = {"exponent": a, "one_review": float(p[0]), "ge10_reviews": float(p[9:].sum())}
    out |= {f"ge{t}_sentences": float(np.mean(sents >= t)) for t in thresholds}
    return out


# --------------------------------------------------------------------------------------------------
# Products: real fields resampled (issue 32's document generator)
# --------------------------------------------------------------------------------------------------


def body_field(rec: Mapping[str, Any], name: str) -> Any:
    """A real record's ``name`` field as the document layout reads it (brand: the builders' ``brand_of``
    choice; details: the ``details`` dict less the keys that choose the brand); falsy when absent."""
    from pqb.builders.source.products import brand_of, details_of

    if name == "brand":
        return brand_of(rec)
    if name == "details":
        return {k: v for k, v in details_of(rec).items() if k not in ("Brand", "Manufacturer")}
    return rec.get(name)


def resampled_meta_records(title_records: Sequence[Mapping[str, Any]], field_records: Sequence[Mapping[str, Any]],
                           n: int, rng: np.random.Generator) -> Iterator[dict[str, Any]]:  # fmt: skip
    """``n`` synthetic metadata records (``title`` and the body fields) resampled from real ones.

    Why this shape: retrieval and ingest costs are per token, so a load test needs real document lengths.
    Each record takes a real record of ``field_records`` as its *template*: each body field the template
    has (brand, categories, details, features, description) is filled from another real record that has
    it, each field from its own random donor, so field presence follows the real records and each field's
    length its real distribution. The title is a real title with each word swapped, with probability 0.3,
    for a word of another real title. The brand goes to ``store`` (what ``brand_of`` reads when
    ``details`` has no brand).
    """
    words = [str(r["title"]).split() for r in title_records if r.get("title")]
    fields = [{name: body_field(r, name) for name in BODY_FIELDS} for r in field_records]
    donors = {name: [f[name] for f in fields if f[name]] for name in BODY_FIELDS}
    if not words or not fields:
        raise ValueError("resampled products need real records with titles")
    for _ in range(n):
        template = fields[rng.integers(len(fields))]
        base = list(words[rng.integers(len(words))])
        donor = words[rng.integers(len(words))]
        for j in range(len(base)):
            if rng.random() < 0.3:
                base[j] = donor[rng.integers(len(donor))]
        rec: dict[str, Any] = {"title": " ".join(base)}
        for name in BODY_FIELDS:
            if template[name] and donors[name]:
                rec["store" if name == "brand" else name] = donors[name][rng.integers(len(donors[name]))]
        yield rec


# --------------------------------------------------------------------------------------------------
# Review texts: real sentences recombined, vectorised
# --------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+")


class SentencePool:
    """Real sentences as format templates plus their words, so a block of distinct sentences is made with
    numpy draws and one ``str.format`` per sentence (the rule of :class:`loadtest._Recombiner`)."""

    def __init__(self, texts: Sequence[str]) -> None:
        sents = [s for t in texts for s in split_sentences_cheaply(t)]
        if not sents:
            raise ValueError("no real sentences to recombine")
        self.templates: list[str] = []
        self.dotted: list[str] = []  # the template when another sentence follows and it lacks an end
        words: list[str] = []
        shapes: list[int] = []
        n_words, tokens = [], []
        for s in sents:
            parts, last = [], 0
            for m in _WORD.finditer(s):
                parts.append(s[last : m.start()].replace("{", "{{").replace("}", "}}"))
                w = m.group()
                words.append(w)
                shapes.append(2 if w.isupper() and len(w) > 1 else 1 if w[0].isupper() else 0)
                last = m.end()
            tail = s[last:].replace("{", "{{").replace("}", "}}")
            template = "{}".join([*parts, tail]) if parts else tail
            self.templates.append(template)
            self.dotted.append(template if s[-1] in ".!?" else template + ".")
            n_words.append(len(parts))
            tokens.append(len(s.split()))
        self.n_words = np.asarray(n_words, np.int64)
        self.starts = np.r_[0, np.cumsum(self.n_words)[:-1]]
        self.words = np.asarray(words, dtype=object)
        self.shapes = np.asarray(shapes, np.int8)
        self.tokens = np.asarray(tokens, np.int64)
        lower = [w.lower() for w in words]
        self.forms = np.asarray(
            [lower, [w.capitalize() for w in lower], [w.upper() for w in lower]], dtype=object
        )

    def __len__(self) -> int:
        return len(self.templates)

    @property
    def mean_tokens(self) -> float:
        """Whitespace tokens of a sentence drawn uniformly from the pool."""
        return float(self.tokens.mean())

    def make(self, ids: np.ndarray, last: np.ndarray, rng: np.random.Generator) -> list[str]:
        """One new sentence per template id; ``last`` marks a review's last sentence (no full stop added)."""
        nw = self.n_words[ids]
        total = int(nw.sum())
        offsets = np.r_[0, np.cumsum(nw)[:-1]]
        flat = np.repeat(self.starts[ids] - offsets, nw) + np.arange(total)
        words = self.words[flat]
        replace = rng.random(total) < WORD_RATE
        has = nw > 0
        replace[offsets[has] + (rng.random(int(has.sum())) * nw[has]).astype(np.int64)] = True
        at = np.flatnonzero(replace)
        words[at] = self.forms[self.shapes[flat[at]], rng.integers(self.forms.shape[1], size=len(at))]
        words = words.tolist()
        out, pos = [], 0
        for sid, n, is_last in zip(ids.tolist(), nw.tolist(), last.tolist(), strict=True):
            out.append((self.templates if is_last else self.dotted)[sid].format(*words[pos : pos + n]))
            pos += n
        return out


def sentence_scale(counts: np.ndarray, mean_sentences: float) -> float:
    """The factor ``c`` with mean(max(1, c × counts)) = ``mean_sentences``: the expected sentence count of a
    real count scaled by ``c`` with stochastic rounding and a floor of one."""
    counts = np.asarray(counts, np.float64)
    if mean_sentences < 1:
        raise ValueError(f"a review has at least one sentence; {mean_sentences:.2f} cannot be met")
    lo, hi = 0.0, 1.0
    while np.maximum(1, hi * counts).mean() < mean_sentences:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(1, mid * counts).mean() < mean_sentences else (lo, mid)
    return (lo + hi) / 2


# --------------------------------------------------------------------------------------------------
# The domain
# --------------------------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _pools(source: Path, category: str) -> dict[str, Any]:
    """The real reviews, titles and body-field records to resample, and where each came from: the
    category's own when it has enough, else the category of ``source`` that has the most."""
    cats = sorted(
        p.name.removesuffix(".jsonl") for p in source.glob("*.jsonl") if not p.name.startswith("meta_")
    )
    reviews = {c: [r for r in iter_reviews(source / f"{c}.jsonl", ReadStats())] for c in cats}
    metas = {
        c: _read_jsonl(source / f"meta_{c}.jsonl") for c in cats if (source / f"meta_{c}.jsonl").is_file()
    }

    def n_sents(c: str) -> int:
        return sum(len(split_sentences_cheaply(r["text"])) for r in reviews.get(c, []))

    def n_titled(c: str) -> int:
        return sum(1 for r in metas.get(c, []) if r.get("title"))

    def n_bodied(c: str) -> int:
        return sum(1 for r in metas.get(c, []) if any(body_field(r, f) for f in BODY_FIELDS[1:]))

    def pick(score: Any, floor: int) -> str:
        if category in cats and score(category) >= floor:
            return category
        best = max(cats, key=lambda c: (score(c), c), default=None)
        if best is None or score(best) == 0:
            raise ValueError(f"{source}: no real reviews and metadata to resample")
        return best

    src = {"reviews": pick(n_sents, MIN_OWN_SENTENCES), "titles": pick(n_titled, MIN_OWN_RECORDS),
           "fields": pick(n_bodied, MIN_OWN_RECORDS)}  # fmt: skip
    return {"from": src, "reviews": reviews[src["reviews"]], "titles": metas[src["titles"]],
            "fields": metas[src["fields"]]}  # fmt: skip


README = """# LOAD TEST DATA, not a dataset source

`{category}.jsonl` ({reviews:,} reviews, {users:,} users `LOADTEST-U…`) and `meta_{category}.jsonl`
({products:,} products `LOADTEST-P…`) were made by `pqb.builders.source.loadtest_domain` (seed {seed},
scale {scale}) to measure the builders at the size of Amazon Reviews 2023's {category}
({full_users:,} users, {full_products:,} products, {full_reviews:,} reviews, {tokens} tokens a review).
Nothing in them is a real user's review: texts are real sentences of `{src_reviews}` recombined with
words replaced; reviews per user follow a power law (exponent {exponent:.3f}, mean {mean:.3f}); products
resample the real titles of `meta_{src_titles}` and the real fields of `meta_{src_fields}`.
Use it to measure the builders (time, memory), never to publish a benchmark. `loadtest.json` holds the
generator's counts, means and shares.
"""


def _write_text(path: Path, chunks: Iterator[str], gzip_level: int | None) -> None:
    """Write ``chunks`` to ``path`` atomically, gzip-compressed at ``gzip_level`` unless it is ``None``."""
    with atomic_path(path) as tmp:
        if gzip_level is None:
            with open(tmp, "w", encoding="utf-8") as f:
                f.writelines(chunks)
        else:
            with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=gzip_level) as f:
                f.writelines(chunks)


def generate_domain(source: Path, domain: str, out: Path, *, scale: float = 1.0, seed: int = 0,
                    gzip_level: int | None = None, progress: bool = True) -> dict[str, Any]:  # fmt: skip
    """Write a LOAD TEST source folder for ``domain`` (a key of :data:`DOMAIN_SIZES`) at ``scale``.

    Returns (and writes to ``loadtest.json``) the targets, the counts written, the realised means
    (reviews a user, whitespace tokens a review), the law and the shares it implies, and the shares
    of distinct texts and sentences. ``gzip_level`` writes ``<Category>.jsonl.gz`` instead.
    """
    if domain not in DOMAIN_SIZES:
        raise ValueError(f"unknown domain {domain!r}; one of {sorted(DOMAIN_SIZES)}")
    full = DOMAIN_SIZES[domain]
    size = full.scaled(scale)
    source, out = Path(source), Path(out)
    pools = _pools(source, size.category)
    rng = np.random.default_rng(seed)
    counts, exponent = reviews_per_user(size.users, size.reviews, rng)
    real = [r for r in pools["reviews"] if isinstance(r.get("text"), str)]
    pool = SentencePool([r["text"] for r in real])
    real_n = np.asarray([max(1, len(split_sentences_cheaply(r["text"]))) for r in real], np.int64)
    c = sentence_scale(real_n, size.tokens_per_review / pool.mean_tokens)
    fixed = [(json.dumps(r.get("rating") if isinstance(r.get("rating"), (int, float)) else 5.0),
              json.dumps(r.get("title") or "", ensure_ascii=False), int(r.get("helpful_vote") or 0),
              "true" if r.get("verified_purchase", True) else "false") for r in real]  # fmt: skip
    popularity = 1.0 / (np.arange(size.products) + POPULARITY_OFFSET)
    popularity_cdf = np.cumsum(popularity / popularity.sum())
    product_of_rank = rng.permutation(size.products)
    out.mkdir(parents=True, exist_ok=True)
    name = f"{size.category}.jsonl" + (".gz" if gzip_level is not None else "")
    text_hashes, sent_hashes, tokens, per_user_sents = [], [], 0, np.zeros(size.users, np.int64)

    def blocks() -> Iterator[str]:
        """The review lines of each block of users, recording the hashes and counts reported."""
        nonlocal tokens
        for u0 in bar(range(0, size.users, USER_BLOCK), disable=not progress, desc=f"LOAD TEST {size.category}",
                      unit="block"):  # fmt: skip
            k = counts[u0 : u0 + USER_BLOCK]
            n = int(k.sum())
            user = np.repeat(np.arange(u0, u0 + len(k)), k)
            tmpl = rng.integers(len(real), size=n)
            n_sent = np.maximum(1, np.floor(real_n[tmpl] * c + rng.random(n)).astype(np.int64))
            ends = np.cumsum(n_sent)
            last = np.zeros(int(ends[-1]), bool)
            last[ends - 1] = True
            sids = rng.integers(len(pool), size=int(ends[-1]))
            sents = pool.make(sids, last, rng)
            tokens += int(pool.tokens[sids].sum())
            np.add.at(per_user_sents, user, n_sent)
            rank = np.minimum(np.searchsorted(popularity_cdf, rng.random(n)), size.products - 1)
            stamp = 1_000_000_000_000 + rng.integers(700_000_000_000, size=n)
            sent_hashes.append(np.fromiter(map(hash, sents), np.int64, len(sents)))
            lines, hashes = [], np.empty(n, np.int64)
            rows = zip(np.r_[0, ends[:-1]].tolist(), ends.tolist(), tmpl.tolist(), user.tolist(),
                       product_of_rank[rank].tolist(), stamp.tolist(), strict=True)  # fmt: skip
            for i, (a, b, t, uid, pid, ts) in enumerate(rows):
                text = " ".join(sents[a:b])
                hashes[i] = hash(text)
                rating, title, votes, verified = fixed[t]
                lines.append(
                    f'{{"rating": {rating}, "title": {title}, "text": {json.dumps(text, ensure_ascii=False)}, '
                    f'"images": [], "asin": "{PRODUCT_PREFIX}{pid:07d}", "parent_asin": "{PRODUCT_PREFIX}{pid:07d}", '
                    f'"user_id": "{USER_PREFIX}{uid:07d}", "timestamp": {ts}, "helpful_vote": {votes}, '
                    f'"verified_purchase": {verified}}}\n'
                )
            text_hashes.append(hashes)
            yield "".join(lines)

    _write_text(out / name, blocks(), gzip_level)
    meta_rng = np.random.default_rng([seed, 1])
    records = resampled_meta_records(pools["titles"], pools["fields"], size.products, meta_rng)
    _write_text(out / f"meta_{size.category}.jsonl", (
        json.dumps({"parent_asin": f"{PRODUCT_PREFIX}{i:07d}", **rec}, ensure_ascii=False) + "\n"
        for i, rec in enumerate(bar(records, disable=not progress, total=size.products, desc="products"))), None)  # fmt: skip
    texts = np.concatenate(text_hashes)
    sent_all = np.concatenate(sent_hashes)
    per_review = np.maximum(
        1, np.floor(np.repeat(real_n, 50) * c + np.random.default_rng(seed).random(50 * len(real_n)))
    )
    law = user_law(exponent, per_review, thresholds=(10, 50)) if math.isfinite(exponent) else {}
    info = {
        "label": "LOAD TEST",
        "domain": domain, "category": size.category, "scale": scale, "seed": seed,
        "published": asdict(full), "target": asdict(size),
        "written": {"users": int(size.users), "products": int(size.products), "reviews": int(counts.sum()),
                    "files": [name, f"meta_{size.category}.jsonl"]},
        "means": {"reviews_per_user": float(counts.mean()), "tokens_per_review": tokens / int(counts.sum()),
                  "sentences_per_review": len(sent_all) / int(counts.sum())},
        "law": {"kind": "zeta (discrete power law) truncated", "max": MAX_REVIEWS_PER_USER,
                "popularity_offset": POPULARITY_OFFSET, "sentence_scale": c, **law},
        "realised": {"one_review": float(np.mean(counts == 1)), "ge10_reviews": float(np.mean(counts >= 10)),
                     "max_reviews": int(counts.max()), "ge50_sentences": float(np.mean(per_user_sents >= 50)),
                     "users_ge50_sentences": int((per_user_sents >= 50).sum())},
        "distinct": {"texts": len(np.unique(texts)) / len(texts), "sentences": len(np.unique(sent_all)) / len(sent_all)},
        "resampled_from": pools["from"],
    }  # fmt: skip
    atomic_write_json(out / "loadtest.json", info)
    atomic_write_text(out / "LOADTEST.md", README.format(
        category=size.category, reviews=int(counts.sum()), users=size.users, products=size.products, seed=seed,
        scale=scale, full_users=full.users, full_products=full.products, full_reviews=full.reviews,
        tokens=full.tokens_per_review, src_reviews=f"{pools['from']['reviews']}.jsonl",
        src_titles=f"{pools['from']['titles']}.jsonl", src_fields=f"{pools['from']['fields']}.jsonl",
        exponent=exponent, mean=float(counts.mean())))  # fmt: skip
    return info
