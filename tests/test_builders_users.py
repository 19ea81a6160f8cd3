"""Review cleaning, spaCy sentences, the hash split, qualification and product links."""

from __future__ import annotations

import pytest

from pqb.builders.config import UserConfig
from pqb.builders.source.users import (
    clean_review_text,
    count_splits,
    link_rows,
    sentence_rows,
    split_bucket,
    split_of,
    users_from_counts,
)


def test_clean_review_text() -> None:
    assert clean_review_text("Fun &amp;amp; fast.<br />Works <i>great</i>!  ") == "Fun & fast. Works great !"


def test_split_is_salted_sha1_of_normalised_sentence() -> None:
    import hashlib

    s = "  This Game Is FUN.  "
    expect = int(hashlib.sha1(b"pcfg_lopo_v1|this game is fun.").hexdigest(), 16) % 10
    assert split_bucket(s) == expect == split_bucket("this game is fun.")
    assert split_of(s) == ("profile" if expect < 8 else "heldout")
    share = sum(split_of(f"sentence number {i}") == "profile" for i in range(2000)) / 2000
    assert 0.77 < share < 0.83


def test_user_rows_thresholds() -> None:
    cfg = UserConfig(min_sentences=3, min_profile=2, min_heldout=1)
    sents = [{"user_id": "a", "split": s} for s in ("profile", "profile", "heldout")]
    sents += [{"user_id": "b", "split": "profile"}] * 3
    counts: dict[str, list[int]] = {}
    count_splits(sents, counts)
    rows = {r["user_id"]: r for r in users_from_counts(counts, cfg)}
    assert rows["a"] == {"user_id": "a", "n_sentences": 3, "n_profile": 2, "n_heldout": 1, "qualified": True}
    assert rows["b"]["qualified"] is False  # no held-out sentence


def test_links_reviewers_and_any_are_deterministic() -> None:
    qualified = [f"u{i}" for i in range(10)]
    reviewers = {"A": {"u3", "x"}, "B": set()}
    assert link_rows(["A", "B"], reviewers, qualified, UserConfig()) == [{"asin": "A", "user_id": "u3"}]
    cfg = UserConfig(link="any", link_users_per_product=3, seed=7)
    links = link_rows(["B", "A"], reviewers, qualified, cfg)
    assert links == link_rows(["A", "B"], reviewers, qualified, cfg)
    by = {a: [lk["user_id"] for lk in links if lk["asin"] == a] for a in "AB"}
    assert "u3" in by["A"] and len(by["A"]) == 3 and len(by["B"]) == 3
    other = link_rows(
        ["A", "B"], reviewers, qualified, UserConfig(link="any", link_users_per_product=3, seed=8)
    )
    assert other != links  # the seed matters
    with pytest.raises(ValueError, match="link mode"):
        link_rows(["A"], reviewers, qualified, UserConfig(link="bogus"))  # type: ignore[arg-type]


def test_sentence_rows_with_spacy() -> None:
    reviews = [
        {
            "user_id": "u",
            "parent_asin": "P",
            "review_idx": 4,
            "text": "I love this game. Ok. It runs fast<br/>on my PC!",
        },
    ]
    rows = sentence_rows(reviews, UserConfig())
    assert [r["text"] for r in rows] == ["I love this game.", "It runs fast on my PC!"]  # "Ok." < 3 tokens
    assert [r["sentence_id"] for r in rows] == ["r4s0", "r4s1"] and all(
        r["split"] in {"profile", "heldout"} for r in rows
    )
    assert sentence_rows(reviews, UserConfig()) == rows  # cache hit gives the same rows
