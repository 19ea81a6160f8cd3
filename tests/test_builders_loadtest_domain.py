"""LOAD TEST domains at the published sizes (issue 46): counts exact, means within 2%, texts distinct,
labelled, seeded; the per-user law has the published mean and a heavy tail."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pqb.builders.source.amazon import ReadStats, iter_meta, iter_reviews
from pqb.builders.source.loadtest_domain import (
    DOMAIN_SIZES,
    MAX_REVIEWS_PER_USER,
    PRODUCT_PREFIX,
    USER_PREFIX,
    SentencePool,
    generate_domain,
    power_law_exponent,
    reviews_per_user,
    sentence_scale,
)
from pqb.dataset import settings

SCALE = {"video_games": 0.002, "musical_instruments": 0.002, "baby_products": 0.001}
"""Small enough for a fast test (5,600 / 3,600 / 3,400 users), large enough for the 2% bounds."""


def _real_slice() -> Path:
    if not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file():
        pytest.skip("needs the offline slice at $PQB_AMAZON_DIR")
    return settings.PQB_AMAZON_DIR


@pytest.mark.parametrize("domain", sorted(DOMAIN_SIZES))
def test_generator_meets_counts_and_means_within_two_percent(tmp_path: Path, domain: str) -> None:
    size = DOMAIN_SIZES[domain].scaled(SCALE[domain])
    info = generate_domain(
        _real_slice(), domain, tmp_path / "lt", scale=SCALE[domain], seed=7, progress=False
    )
    folder = tmp_path / "lt"
    stats = ReadStats()
    reviews = list(iter_reviews(folder / f"{size.category}.jsonl", stats))
    meta = list(iter_meta(folder / f"meta_{size.category}.jsonl", ReadStats()))
    assert (
        stats.lines == stats.records == len(reviews) == size.reviews
    )  # nothing dropped, nothing deduplicated
    per_user = Counter(r["user_id"] for r in reviews)
    assert len(per_user) == size.users and len(meta) == size.products
    assert info["written"] == {"users": size.users, "products": size.products, "reviews": size.reviews,
                               "files": [f"{size.category}.jsonl", f"meta_{size.category}.jsonl"]}  # fmt: skip
    assert all(u.startswith(USER_PREFIX) for u in per_user)
    assert all(m["parent_asin"].startswith(PRODUCT_PREFIX) for m in meta)
    assert {r["parent_asin"] for r in reviews} <= {m["parent_asin"] for m in meta}
    tokens = np.mean([len(r["text"].split()) for r in reviews])
    assert tokens == pytest.approx(size.tokens_per_review, rel=0.02)
    assert tokens == pytest.approx(info["means"]["tokens_per_review"])  # what it reports is what it wrote
    full = DOMAIN_SIZES[domain]
    assert len(reviews) / len(per_user) == pytest.approx(full.reviews / full.users, rel=0.02)
    assert max(per_user.values()) <= MAX_REVIEWS_PER_USER
    assert len({r["text"] for r in reviews}) / len(reviews) > 0.99  # distinct, as the slice-shaped ones
    assert "LOAD TEST" in (folder / "LOADTEST.md").read_text(encoding="utf-8")
    assert json.loads((folder / "loadtest.json").read_text())["label"] == "LOAD TEST"


def test_generator_is_seeded(tmp_path: Path) -> None:
    src = _real_slice()
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        generate_domain(src, "video_games", tmp_path / name, scale=0.0005, seed=seed, progress=False)
    read = {n: (tmp_path / n / "Video_Games.jsonl").read_bytes() for n in "abc"}
    assert read["a"] == read["b"] != read["c"]
    meta = {n: (tmp_path / n / "meta_Video_Games.jsonl").read_bytes() for n in "ab"}
    assert meta["a"] == meta["b"]


def test_products_have_real_length_documents(tmp_path: Path) -> None:
    """The products resample real fields: their documents are as long as the real records' and a share
    of them are targets (five core terms), close to the real slice's."""
    from pqb.builders.source.products import document_text, product_row

    src = _real_slice()
    generate_domain(src, "video_games", tmp_path / "lt", scale=0.01, seed=0, progress=False)
    made = list(iter_meta(tmp_path / "lt" / "meta_Video_Games.jsonl", ReadStats()))
    real = list(iter_meta(src / "meta_Video_Games.jsonl", ReadStats()))

    def mean_len(recs: list[dict]) -> float:
        return float(np.mean([len(document_text(r)) for r in recs]))

    def targets(recs: list[dict]) -> float:
        return float(np.mean([product_row(r)["is_target"] for r in recs]))

    assert mean_len(made) == pytest.approx(mean_len(real), rel=0.15)
    assert targets(made) == pytest.approx(targets(real), abs=0.05)


@pytest.mark.parametrize("mean", [1.643, 1.667, 1.765])
def test_power_law_has_the_mean_and_a_heavy_tail(mean: float) -> None:
    n = 200_000
    counts, a = reviews_per_user(n, round(mean * n), np.random.default_rng(0))
    assert counts.sum() == round(mean * n) and counts.min() >= 1
    assert a == pytest.approx(power_law_exponent(mean), abs=1e-3)
    k = np.arange(1, MAX_REVIEWS_PER_USER + 1)
    p = k**-a
    p /= p.sum()
    assert float(k @ p) == pytest.approx(mean, rel=1e-6)
    assert np.mean(counts == 1) == pytest.approx(p[0], abs=0.005)  # the body of the law is as drawn
    assert np.mean(counts >= 10) == pytest.approx(p[9:].sum(), rel=0.1)  # and so is the tail
    assert counts.max() >= 100  # heavy-tailed: a geometric law of this mean would give ~20 at most


def test_sentence_scale_meets_the_mean_with_a_floor_of_one() -> None:
    counts = np.array([1, 1, 2, 5, 9])
    c = sentence_scale(counts, 2.5)
    assert np.maximum(1, c * counts).mean() == pytest.approx(2.5)
    with pytest.raises(ValueError, match="at least one sentence"):
        sentence_scale(counts, 0.5)


def test_sentence_pool_replaces_a_word_per_sentence_in_its_case_shape() -> None:
    pool = SentencePool(["The Game is FUN. it {broke} fast", "Nothing"])
    rng = np.random.default_rng(0)
    ids = np.array([0, 1, 0, 1, 2] * 50)
    out = pool.make(ids, np.array([True, False, False, True, True] * 50), rng)
    templates = ["The Game is FUN.", "it {broke} fast", "Nothing"]
    changed = 0
    for sid, s, last in zip(ids, out, [True, False, False, True, True] * 50, strict=True):
        template = templates[sid]
        assert len(s.split()) == len(template.split())
        changed += s.rstrip(".") != template.rstrip(".")
        shape = [("Aa", "Aa", "a", "AA"), ("a", "a", "a"), ("Aa",)][sid]
        got = re.findall(r"[A-Za-z]+", s)
        assert [
            ("AA" if w.isupper() and len(w) > 1 else "Aa" if w[0].isupper() else "a") for w in got
        ] == list(shape)
        assert s.endswith(".") or last or template.endswith(".")
    assert changed > 0.8 * len(out)  # a word of every sentence is redrawn (rarely as itself)
    assert "{" in out[1] and "}" in out[1]  # literal braces survive the templates
