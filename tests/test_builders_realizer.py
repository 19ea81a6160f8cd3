"""The compositional realizer: every role occurs, every core term once, hundreds of skeletons, habits."""

from __future__ import annotations

import random
import re

import pytest

from pqb.builders.queries.candidate import ProductSpec
from pqb.builders.queries.filters import lexical_ok
from pqb.builders.queries.realizer import (
    _PAST_OPENERS,
    OPENERS,
    ROLES,
    Part,
    RealizerGenerator,
    realize,
    skeleton,
    title_heads,
)
from pqb.builders.queries.surface import SurfaceHabits, apply_habits

SPEC = ProductSpec(  # B07ST9BST9 of the slice, as products.py selects and types it
    asin="B07ST9BST9",
    title="Olimoxi Wireless Switch Pro Controller",
    core=(
        ("Brand", "Olimoxi"),
        ("Color", "Black"),
        ("Compatible Devices", "PC"),
        ("Connectivity Technology", "Wireless"),
        ("Controller Type", "Gamepad"),
    ),
    kinds=("brand", "color", "platform", "adj_feature", "product"),
)
ODD = ProductSpec(  # unnamed attributes and values that start with a vowel
    asin="B000TEST02",
    title="x",
    core=(("", "Ergonomic"), ("Style", "Arcade"), ("Material", "Aluminum"), ("Language", "English"),
          ("Size", "Large")),
)  # fmt: skip
PREPOSITIONS = {"by", "from", "in", "for", "with", "of", "featuring", "rated", "color", "made", "compatible",
                "size", "my"}  # fmt: skip
NO_HABITS = SurfaceHabits(0, 0, 0, 0, 0, 0, 0)


def _sentence_of(text: str, value: str) -> str:
    i = text.lower().index(value.lower())
    start = max(
        text.rfind(". ", 0, i), text.rfind("? ", 0, i), text.rfind("; ", 0, i), text.rfind(" - ", 0, i)
    )
    ends = [j for j in (text.find(". ", i), text.find("? ", i)) if j >= 0]
    return text[start + 1 : min(ends) + 1 if ends else len(text)].strip(" -;")


def test_each_syntactic_role_is_produced_and_reads_as_that_role() -> None:
    parts = [Part(k, v, n) for k, (n, v) in zip(SPEC.kinds, SPEC.core, strict=True)]
    rng = random.Random(0)
    seen: dict[str, int] = dict.fromkeys(ROLES, 0)
    for _ in range(400):
        r = realize(parts, rng, ["controller"])
        assert lexical_ok(r.text, SPEC.core_terms), r.text
        for value, roles in r.roles.items():
            sent = _sentence_of(r.text, value)
            before = re.findall(r"[\w']+", r.text[: r.text.lower().index(value.lower())].lower())
            for role in roles:
                seen[role] += 1
                if role == "pp":
                    assert before and before[-1] in PREPOSITIONS | {"the", "a", "an"}, (value, r.text)
                elif role == "relative":
                    assert re.search(r"\b(that|which|that's)\b", sent.lower()), (value, r.text)
                elif role == "question":
                    assert sent.endswith("?"), (value, sent, r.text)
                elif role == "premodifier":
                    assert not before or before[-1] not in {"by", "from", "with", "for"}, (value, r.text)
    assert all(seen[role] > 0 for role in ROLES), seen


@pytest.mark.parametrize("spec", [SPEC, ODD])
def test_every_candidate_holds_each_core_term_exactly_once(spec: ProductSpec) -> None:
    cands = RealizerGenerator().generate(spec, n=300, seed=3)
    assert len(cands) == 300
    assert [c.text for c in cands if not lexical_ok(c.text, spec.core_terms)] == []
    # every opener occurs; a product with no noun for a head (ODD) takes none of the bare ones ("any one ...?")
    nouned = spec.title != "x"
    assert {c.frame for c in cands} >= {k for k, (_, _, dets) in OPENERS.items() if nouned or dets != "none"}
    if not nouned:
        assert not {c.frame for c in cands} & {k for k, (_, _, dets) in OPENERS.items() if dets == "none"}


def test_hundreds_of_distinct_skeletons() -> None:
    cands = RealizerGenerator().generate(SPEC, n=300, seed=0)
    skeletons = {skeleton(c.text, SPEC.core_terms) for c in cands}
    assert len(skeletons) >= 250
    assert skeleton("I want a Black Olimoxi pad.", ["black", "Olimoxi"]) == "i want a <T> <T> pad."


def test_articles_agree() -> None:
    cands = RealizerGenerator().generate(SPEC, n=300, seed=4)
    assert not [
        c.text
        for c in cands
        if re.search(r"\ban (one|usb)\b|\ba (?!one|uni|use|usb|eu)[aeiou]", c.text, re.I)
    ]


def test_only_the_word_a_takes_the_article_and_an_audience_is_a_person() -> None:
    """ "for adult use" and "an adults sweatproof headset" were round five's lowest audience phrasings:
    an age range names who the product is for ("for an adult", "for kids")."""
    from pqb.builders.queries.realizer import _fill

    assert _fill("connects via {v}", "NFC") == "connects via NFC"  # was "connects vian NFC"
    assert _fill("compatible with a {v}", "Xbox") == "compatible with an Xbox"
    assert _fill("for a {v}", "Adults") == "for Adults" and _fill("for a {v}", "adult") == "for an adult"


def test_one_stands_only_for_the_requested_noun_and_takes_no_bare_article() -> None:
    texts = [c.text for seed in range(3) for c in RealizerGenerator().generate(SPEC, n=300, seed=seed)]
    assert any(re.search(r"\bone\b", t) for t in texts)  # "Do you have one in black?" after the request
    assert not [t for t in texts if re.search(r"\b(a|some) one\b", t, re.I)]


def test_nothing_points_at_a_request_not_yet_made_nor_asks_in_the_present_after_the_past() -> None:
    """Round seven's lowest items: "Can you find me one, which is backlit" (a first mention has no noun
    for "one" to stand for), "It needs to be black. For Mac, I am looking for ..." (the "It" comes before
    its noun) and "I needed a non-slip pad; is it made from rubber?" (past, then present); round eight's
    raters marked "a non-slip black one" the same way. "one" never heads a request; only a statement
    without a pronoun may come first ("Ideally in black. I need ..."); a past-tense opener takes no
    question."""
    parts = [Part(k, v, n) for k, (n, v) in zip(SPEC.kinds, SPEC.core, strict=True) if k != "product"]
    rng = random.Random(7)
    fronted = past = 0
    for _ in range(1500):
        r = realize(parts, rng, [])
        template, _, _ = OPENERS.get(r.opener, ("", "", ""))
        opener = template.split("{np}")[0].strip().lower()
        low = r.text.lower()
        if opener and opener in low:
            start = low.index(opener)
            np = low[start + len(opener) :]
            assert not re.match(r"\s*(an? )?([\w-]+ ){0,3}one\b", np), r.text  # "find me one, which ..."
            before = r.text[:start]
            if re.search(r"[.?!]", before) and not re.match(r"I (play|game|have|use|do)\b|I'm a fan|I've always", before):
                fronted += 1
                assert not re.search(r"\b(it|they|one|ones)\b", before, re.I), r.text
        if r.opener in _PAST_OPENERS:
            past += 1
            assert "?" not in r.text, r.text
    assert fronted and past


def test_same_seed_same_candidates_and_different_seed_differs() -> None:
    gen = RealizerGenerator()
    a = gen.generate(SPEC, 50, seed=1)
    assert a == gen.generate(SPEC, 50, seed=1)
    assert a != gen.generate(SPEC, 50, seed=2)
    assert len({c.text for c in a}) == 50


def test_habits_follow_their_rates_and_spare_core_terms() -> None:
    rng = random.Random(5)
    text = "I'm looking for a Black pad that's by Olimoxi."
    assert apply_habits(text, ["Black", "Olimoxi"], NO_HABITS, rng) == text
    lower = [apply_habits(text, ["Black"], SurfaceHabits(1, 1, 0, 0, 0, 0, 0), rng) for _ in range(3)]
    assert set(lower) == {text.lower()}
    expanded = apply_habits(text, ["Black"], SurfaceHabits(0, 0, 0, 0, 1, 0, 0), rng)
    assert expanded == "I am looking for a Black pad that is by Olimoxi."
    bare = apply_habits(text, ["Black"], SurfaceHabits(0, 0, 0, 0, 0, 1, 1), rng)
    assert bare == "im looking for a Black pad thats by Olimoxi."
    # a contraction inside a core term is never expanded
    assert "Assassin's Creed" in apply_habits(
        "It's Assassin's Creed.", ["Assassin's Creed"], SurfaceHabits(0, 0, 0, 0, 1, 0, 0), rng
    )
    n = 4000
    dropped = sum(
        apply_habits(text, [], SurfaceHabits(0, 0, 0.3, 0.1, 0, 0, 0), rng)[-1:] not in ".!" for _ in range(n)
    )
    assert abs(dropped / n - 0.3) < 0.03


def test_habit_rates_are_measured_from_reviews() -> None:
    texts = ["great game!", "I'm happy. It is fine.", "dont buy this", "Works as expected."]
    h = SurfaceHabits.measure(texts)
    assert h.n_texts == 4 and h.all_lower == 0.5 and h.exclaim == 0.25
    assert h.no_final_punct == 0.25 and h.no_apostrophe == 0.5
    assert SurfaceHabits.measure([]) == SurfaceHabits()


ALL_KINDS = ProductSpec(  # one value of every kind, as the slice's products carry them
    asin="B000KINDS1",
    title="Gaming Headset",
    core=(
        ("Brand", "Corsair"), ("Controller Type", "Gamepad"), ("Color", "Black"), ("Material", "Silicone"),
        ("Hardware Platform", "PC"), ("Recommended Uses For Product", "Gaming"),
        ("Connectivity Technology", "USB"), ("Style", "Modern"), ("Size", "Large"), ("Rated", "Teen"),
        ("Age Range (Description)", "Adult"), ("Language", "English"), ("Special Feature", "Scratch Resistant"),
        ("Special Feature", "Noise Cancellation"), ("Special Feature", "Keycap Puller"),
    ),
    kinds=("brand", "product", "color", "material", "platform", "purpose", "connectivity", "style", "size",
           "age_rating", "audience", "language", "adj_feature", "noun_feature", "count_feature"),
)  # fmt: skip
COPULA = {"is", "be", "it", "that's"}
ALLOWED_BEFORE: dict[str, set[str]] = {
    "brand": {"by", "from", "of", "liked"},
    "color": {"in", "color"} | COPULA,
    "material": {"of", "from"},
    "platform": {"for", "with", "on"},
    "purpose": {"for", "of"},
    "connectivity": {"with", "supports", "support", "via", "has", "have"},
    "style": {"a"},
    "size": {"size", "in"},
    "age_rating": {"rated", "a"},
    "audience": {"a", "an", "for"},
    "language": {"in"},
    "noun_feature": {"with", "featuring", "has", "have"},
    "count_feature": {"a"},
    "adj_feature": COPULA,
    "product": {"a"} | COPULA,
}
"""The word right before a value placed after the head or in a clause, per kind (issue 43's frames:
adjectives after "that is", nouns after "with", materials after "made of", platforms after "for",
brands after "by"/"from", ratings "rated Teen", colours "in black"; round two's sentences before the
request: "I play on PC.", "I'm a fan of Corsair.", "I do a lot of gaming.")."""
NOUN_SLOT_WORDS = {"with", "featuring", "offering", "has", "have", "offers", "offer", "having"}


def test_each_kind_is_phrased_in_frames_that_fit_it() -> None:
    rng = random.Random(7)
    seen: dict[str, set[str]] = {k: set() for k in ALLOWED_BEFORE}
    kinds = dict(zip(ALL_KINDS.core_terms, ALL_KINDS.kinds, strict=True))
    for _ in range(600):
        chosen = rng.sample(range(len(ALL_KINDS.core)), 5)
        parts = [Part(ALL_KINDS.kinds[i], ALL_KINDS.core[i][1], ALL_KINDS.core[i][0]) for i in chosen]
        r = realize(parts, rng, ["headset"])
        assert lexical_ok(r.text, [p.value for p in parts]), r.text
        for value, roles in r.roles.items():
            kind = kinds[value]
            if kind == "product":  # a product kind of one or two words is the head noun
                assert roles == {"head"}, (value, r.text)
                continue
            if roles & {"premodifier", "head"}:
                # a nominal feature never premodifies, nor an audience ("an adults headset")
                assert kind not in ("noun_feature", "count_feature", "audience"), (value, r.text)
                continue
            before = re.findall(r"[\w']+", r.text[: r.text.lower().index(value.lower())].lower())[-1]
            assert before in ALLOWED_BEFORE[kind], (kind, value, before, r.text)
            seen[kind].add(before)
            if kind in ("adj_feature", "color", "product", "style", "age_rating"):
                assert before not in NOUN_SLOT_WORDS, (value, r.text)
    assert all(v for k, v in seen.items() if k != "product"), (
        seen
    )  # every other kind after the head or in a clause


def test_a_query_holds_at_most_one_question() -> None:
    """Issue 43: 21% of queries stacked two or more questions; a question opener now takes no question
    follow-up and a statement at most one."""
    from pqb.builders.reports.query_checks import count_questions

    rng = random.Random(11)
    parts = [Part(k, v, n) for k, (n, v) in zip(SPEC.kinds, SPEC.core, strict=True)]
    counts = [count_questions(realize(parts, rng, ["controller"]).text) for _ in range(2000)]
    assert max(counts) == 1
    assert 0.2 < sum(counts) / len(counts) < 0.8  # questions still occur: as opener or one follow-up


def test_pairs_of_candidates_still_differ_in_syntax() -> None:
    """What the pairing draws from: two candidates of one product rarely share a skeleton or the order
    in which they name the core terms (the committed pairs: 0 shared skeletons, 97% differing order)."""
    from pqb.dataset.schema import term_spans

    cands = [c.text for c in RealizerGenerator().generate(SPEC, n=300, seed=0)]
    rng = random.Random(3)
    pairs = [rng.sample(cands, 2) for _ in range(500)]

    def order(q: str) -> list[int]:
        return sorted(range(5), key=lambda i: term_spans(q, SPEC.core_terms[i])[0][0])

    assert sum(skeleton(a, SPEC.core_terms) == skeleton(b, SPEC.core_terms) for a, b in pairs) <= 5
    assert sum(order(a) != order(b) for a, b in pairs) >= 0.9 * len(pairs)


TYPED_BY_USE = ProductSpec(  # kinds read from how the domain's text uses each value (issue 43, round two)
    asin="B000KINDS2",
    title="MIGHTY SKINS Skin for Xbox Controller",
    core=(
        ("Brand", "MIGHTY SKINS"), ("Special Feature", "Dust Proof"), ("Compatible Devices", "Laptop"),
        ("Compatible Devices", "Game Consoles"), ("Movement Detection Technology", "Optical"),
    ),
    kinds=("brand", "modifier", "device", "device", "modifier"),
)  # fmt: skip


def test_a_modifier_only_premodifies_and_a_device_takes_an_article() -> None:
    """A modifier ("Dust Proof": the text writes "dust proof switches", never "with dust proof") is
    placed before a noun, never after with/that is; a device (a platform that is a common noun) reads
    "for a Laptop", and a plural one takes no article ("for Game Consoles")."""
    rng = random.Random(9)
    heads = ["skin", "controller"]
    parts = [Part(k, v, n) for k, (n, v) in zip(TYPED_BY_USE.kinds, TYPED_BY_USE.core, strict=True)]
    for _ in range(500):
        r = realize(parts, rng, heads)
        assert lexical_ok(r.text, TYPED_BY_USE.core_terms), r.text
        for value in ("Dust Proof", "Optical"):
            assert r.roles[value] <= {"premodifier", "coordination"}, (value, r.text)
            after = re.findall(r"[\w']+", r.text[r.text.index(value) + len(value) :])
            assert after and after[0] not in ("one", "something"), r.text  # a noun follows it
        for value, plural in (("Laptop", False), ("Game Consoles", True)):
            if r.roles[value] & {"pp", "relative", "sentence", "question"}:
                before = re.findall(r"[\w']+", r.text[: r.text.index(value)])[-1].lower()
                assert before in (("for", "with", "my", "have", "use") if plural else ("a", "my")), (
                    value,
                    r.text,
                )


ROUND_ONE_AWKWARD = re.compile(  # what a reader of round one's rebuild found awkward, by its own words
    r"(?i)\bwhat i need is\b|\bwanted$|\bone (for|with|in|by|from) .* if possible\b|\bwould it be\b|"
    r"\bcan it\b|\bin the color\b|\bcomes from\b|\b(need|want) the \w+ (?-i:one)\b|\bone one\b|^(with|in) \w+, i\b|"
    r"\bis for (pc|xbox|playstation|nintendo)\b|\bmake sure\b|(^|[.;?!-] )(needs to|must)\b|\bsome \w+ (pad|keyboard)\b"
)


def test_round_one_awkward_wordings_are_gone() -> None:
    """Issue 43, round two: the openers and connectives a reader found awkward ("What I need is a USB Xbox One
    one", "Need the TEWELL one", "Would it be a Gamepad?", "With USB, I need some", "One for Gaming if
    possible", "that is for PlayStation", "in the color Mercury White that comes from Razer") are not
    written any more; the product kind is the head noun, never asked about."""
    spec = ProductSpec(
        asin="B087CXBBMF",
        title="MMTE USB Charging Cable for Xbox One Controller",
        core=(("Brand", "MMTE"), ("Compatible Devices", "PlayStation"), ("Connectivity Technology", "USB"),
              ("Special Feature", "High Speed"), ("Compatible Phone Models", "Xbox One")),
        kinds=("brand", "platform", "connectivity", "noun_feature", "platform"),
    )  # fmt: skip
    texts = [c.text for s in range(3) for c in RealizerGenerator(NO_HABITS).generate(spec, 300, s)]
    texts += [c.text for s in range(3) for c in RealizerGenerator(NO_HABITS).generate(SPEC, 300, s)]
    assert not [t for t in texts if ROUND_ONE_AWKWARD.search(t)][:5]
    gamepad = [t for t in texts if "Gamepad" in t]
    assert gamepad and not [t for t in gamepad if re.search(r"(?i)\b(is|be) (a |an )?gamepad\b", t)]
    assert not [t for t in texts if re.search(r"\b(Xbox One|PlayStation|PC) one\b", t)]


def test_the_blinded_panels_notes_on_the_published_build_are_gone() -> None:
    """Issue 43's blinded panel (three raters, 30 published queries) marked "Is it from ACTIVISION?" (a
    brand asked about, not asked for), "a case which runs on Nintendo Switch" and "I would like it by
    Gtheos"; none is written any more, and the brand and platform are still phrased."""
    texts = [c.text for s in range(4) for c in RealizerGenerator(NO_HABITS).generate(SPEC, 300, s)]
    assert not [t for t in texts if re.search(r"(?i)\b(is|was) it (made )?(by|from) olimoxi\b", t)][:3]
    assert not [t for t in texts if re.search(r"(?i)\bruns? on\b", t)][:3]
    assert not [t for t in texts if re.search(r"(?i)\blike it (by|from|made by) olimoxi\b", t)][:3]
    assert all("Olimoxi" in t and "PC" in t for t in texts)
    assert [t for t in texts if re.search(r"(?i)\b(by|from) Olimoxi\b", t)]
    assert [t for t in texts if re.search(r"\b(works with|compatible with|for) PC\b", t)]


def test_a_plural_head_takes_plural_verbs_and_pronouns() -> None:
    """The panel's "over ear Xbox One headphones, which is wired" and "Is it wireless" (of headphones):
    with a plural head every verb and pronoun that speaks of it is plural; a singular head is unchanged."""
    spec = ProductSpec(
        asin="B0TESTHEAD",
        title="Anivia Wired Gaming Headphones with Mic",
        core=(("Brand", "Anivia"), ("Color", "Black"), ("Connectivity Technology", "Wired"),
              ("Special Feature", "Noise Cancelling"), ("Compatible Devices", "PC")),
        kinds=("brand", "color", "adj_feature", "noun_feature", "platform"),
    )  # fmt: skip
    texts = [c.text for s in range(3) for c in RealizerGenerator(NO_HABITS).generate(spec, 300, s)]
    plural = [t for t in texts if re.search(r"\bheadphones\b", t)]
    assert len(plural) > 100
    singular_about_them = r"(?i)headphones(,)? (that|which) (is|has|comes|works|offers|supports)\b|\b(is|does) it\b|\bit (should|has to|needs to)\b|\bideally it\b|\bif it\b"
    assert not [t for t in plural if re.search(singular_about_them, t)][:3]
    assert [t for t in plural if re.search(r"\b(Are|Do) they\b|\bthey\b", t)]
    assert [t for t in plural if re.search(r"headphones,? (that|which) (are|have|come|work)\b", t)]
    before = [c.text for c in RealizerGenerator(NO_HABITS).generate(SPEC, 50, 0)]  # a singular head
    assert any(re.search(r"\b(Is|Does) it\b|\bthat (is|has|comes)\b", t) for t in before)


def test_the_title_heads_with_the_product_noun() -> None:
    assert (
        title_heads("Wired Gaming Headset with Mic,Sades 709 Over Ear Headphone for PC", [])[0] == "headset"
    )
    assert title_heads("Skin Compatible for PS4 Controller Pandaren Soft Silicone", [])[0] == "skin"
    assert title_heads("Midnight Club: Los Angeles - Playstation 3", []) == []
    assert title_heads("Cybertech USB Charging Cable for PS4 Controller", ["USB"])[0] == "cable"
    assert title_heads("SteelSeries Rival 300, Optical Gaming Mouse - White", []) == ["mouse"]


def test_a_noun_the_title_names_after_for_is_what_the_product_serves() -> None:
    """ "I'm trying to find a Nintendo Switch cable from Lowepro" asked for a pouch's contents: a noun
    after "for", "compatible" or "fits" names the device served, never the product."""
    assert title_heads("Lowepro GearUp Pouch Mini: A Compact Travel Organizer Pouch for Smartphone Cables, "
                       "Adapters, Chargers", []) == []  # fmt: skip
    assert title_heads("Razer Doubleshot PBT Keycap Upgrade Set for Mechanical & Optical Keyboards", []) == []
    assert title_heads("Mcbazel Dust Cover for Xbox Series S Console", ["Cover"]) == []
    assert title_heads("Magece G1 USB Wired With 6 Buttons Gaming Mouse Mice for Computer PC", []) == ["mouse"]


def test_a_sentence_before_the_request_names_what_the_shopper_has() -> None:
    """ "I play on PC.", "I have a laptop.", "I'm a fan of Corsair.": the slice's reviewers say so before
    what they wanted; the value is then not repeated."""
    parts = [Part("platform", "PC"), Part("device", "Laptop"), Part("brand", "Corsair"),
             Part("color", "Black"), Part("adj_feature", "Wireless")]  # fmt: skip
    rng = random.Random(2)
    seen = set()
    for _ in range(400):
        r = realize(parts, rng, ["mouse"])
        assert lexical_ok(r.text, [p.value for p in parts]), r.text
        first = re.split(r"(?<=[.?!])\s", r.text)[0]
        for frame in ("I play on PC.", "I game on PC.", "I have a Laptop.", "I use a Laptop.",
                      "I'm a fan of Corsair.", "I've always liked Corsair."):  # fmt: skip
            if first == frame:
                seen.add(frame)
    assert len(seen) >= 4, seen


def test_the_realizer_writes_each_term_in_its_form_and_the_term_still_counts_once() -> None:
    from pqb.builders.queries.candidate import ProductSpec as Spec

    rec = {
        "parent_asin": "B0TEST0001",
        "title": "Skin for Xbox Controller",
        "core_terms": ["Skinit", "Dust Proof", "Red", "Vinyl", "Xbox One"],
        "core_kinds": ["brand", "modifier", "color", "material", "platform"],
        "core_forms": ["Skinit", "dust proof", "red", "vinyl", "Xbox One"],
        "attributes": [{"name": n, "value": v} for n, v in (("Brand", "Skinit"), ("Special Feature", "Dust Proof"),
                       ("Color", "Red"), ("Material", "Vinyl"), ("Hardware Platform", "Xbox One"))],
    }  # fmt: skip
    spec = Spec.from_record(rec)
    assert spec.forms == ("Skinit", "dust proof", "red", "vinyl", "Xbox One")
    assert Spec.from_record({**rec, "core_forms": ["x"] * 5}).forms == ()  # not the same terms: ignored
    cands = RealizerGenerator(NO_HABITS).generate(spec, 100, seed=0)
    assert all(lexical_ok(c.text, spec.core_terms) for c in cands)
    assert all("dust proof" in c.text.lower() and "Dust Proof" not in c.text for c in cands)


def test_no_question_comes_before_the_request() -> None:
    """ "Do you have one rated teen? I wanted a video game ..." read as a question about nothing yet named
    (round two's reading): a follow-up placed first is a statement."""
    rng = random.Random(5)
    parts = [Part(k, v, n) for k, (n, v) in zip(SPEC.kinds, SPEC.core, strict=True)]
    for _ in range(1500):
        r = realize(parts, rng, ["controller"])
        template, end, _ = OPENERS.get(r.opener, ("", "?", ""))
        first = re.split(r"(?<=[.?!])\s", r.text)[0]
        if end == "." and first.endswith("?"):  # a question first must be the request itself
            assert template.split("{np}")[0].strip().lower() in first.lower(), r.text


def test_one_platform_or_device_premodifies_a_noun_at_most() -> None:
    """ "a projector monitor console", "a gaming console PlayStation 4 joystick" (round two's reading): two
    platform or device names stacked before the head read as one long product name."""
    parts = [Part("platform", "PC"), Part("device", "Gaming Console"), Part("platform", "Mac"),
             Part("brand", "ArVin"), Part("color", "Black")]  # fmt: skip
    rng = random.Random(4)
    for _ in range(600):
        r = realize(parts, rng, ["joystick"])
        named = [v for v in ("PC", "Gaming Console", "Mac") if "premodifier" in r.roles.get(v, set())]
        assert len(named) <= 1, r.text


@pytest.mark.parametrize(
    ("phrase", "article"),
    [("Xbox One skin", "an"), ("MMTE cable", "an"), ("HDMI adapter", "an"), ("USB cable", "a"),
     ("SADES headset", "a"), ("Optical mouse", "an"), ("one", "a"), ("black pad", "a")],
)  # fmt: skip
def test_the_article_follows_the_sound(phrase: str, article: str) -> None:
    """ "A xbox one skin", "a MMTE cable" in round two's reading: an x reads "ex", a short acronym is spelled."""
    from pqb.builders.queries.realizer import _article

    assert _article(phrase) == article


def test_the_head_is_the_title_noun_most_of_the_time_and_never_item() -> None:
    """A shopper writes the product's noun ("a wireless mouse"); "one" and "something" stay for variety,
    "item" never (a catalogue word: no "looking for" sentence of the slice asks for an item)."""
    parts = [Part("brand", "Cougar"), Part("color", "Black"), Part("platform", "PC"),
             Part("adj_feature", "Optical"), Part("connectivity", "USB")]  # fmt: skip
    rng = random.Random(3)
    texts = [realize(parts, rng, ["mouse"]).text for _ in range(400)]
    assert not [t for t in texts if re.search(r"\bitems?\b", t)][:3]
    share = sum(bool(re.search(r"\bmouse\b", t)) for t in texts) / len(texts)
    assert 0.7 <= share <= 0.95, share  # six title nouns in seven draws
    bare = [realize(parts, rng, []).text for _ in range(200)]  # no noun in the title: one or something
    assert not [t for t in bare if re.search(r"\bitems?\b", t)][:3]


def test_named_platforms_are_asked_for_in_one_coordinated_phrase() -> None:
    """ "for PS4 and PC", never "For Mac ... any for PC?" (two slots read as two contradicting claims)."""
    parts = [Part("brand", "FYOUNG"), Part("platform", "Nintendo Switch"), Part("platform", "PlayStation"),
             Part("connectivity", "USB"), Part("noun_feature", "Fast Charging")]  # fmt: skip
    rng = random.Random(5)
    for _ in range(200):
        r = realize(parts, rng, ["cable"])
        assert lexical_ok(r.text, [p.value for p in parts]), r.text
        assert "Nintendo Switch and PlayStation" in r.text, r.text
        assert "coordination" in r.roles["Nintendo Switch"] and "coordination" in r.roles["PlayStation"]
        assert "Nintendo Switch and PlayStation" not in r.roles


def test_a_colour_name_is_never_a_predicate_and_prepositional_phrases_stack() -> None:
    """Round six's lowest items: "a vinyl skin ... that is Monroe Currency" (a seller's colour field that
    names a design) and "a keyboard with USB and by SADES". A colour written with capitals takes "in"
    only; a plain colour word is still a predicate ("is it black?"); at most two post-head phrases, joined
    by "and" only when they share their preposition."""
    parts = [Part("color", "Monroe Currency", "Color"), Part("brand", "SADES", "Brand"),
             Part("material", "vinyl", "Material"), Part("connectivity", "USB", "Connectivity Technology"),
             Part("noun_feature", "lighting", "Special Feature")]  # fmt: skip
    plain = [Part("color", "black", "Color"), *parts[1:]]
    rng = random.Random(5)
    named, predicates, stacked = set(), 0, 0
    for _ in range(400):
        r = realize(parts, rng, ["keyboard"])
        named.update(re.findall(r"[\w']+", r.text[: r.text.index("Monroe Currency")].lower())[-1:])
        pps = [p.value for p in parts if "pp" in r.roles[p.value]]
        if len(pps) >= 2:
            stacked += 1
            spans = sorted((r.text.index(v), v) for v in pps)
            assert len(pps) <= 2, r.text
            between = r.text[spans[0][0] : spans[-1][0]]
            # "and" only where both start alike: "made by SADES and made of vinyl", "with USB and with ..."
            assert not re.search(r"\band (?!made\b|with\b)", between), r.text
        q = realize(plain, rng, ["keyboard"]).text.lower()
        predicates += bool(re.search(r"\b(is|be|that's|are) black\b", q))
    assert "is" not in named and "be" not in named and "that's" not in named, named
    assert predicates > 0 and stacked > 0


def test_round_nines_notes_no_follow_up_begins_twice_one_made_a_count_feature_takes_an_article() -> None:
    """Round nine's raters marked one follow-up said twice ("I would like it in white. I would like it
    with USB-C connectivity."), "made by ... made of" in one query, "have zipper" and "I needed a
    keyboard ...". No follow-up begins as another did, "made" is said once (kept for the material), a
    count feature takes its article ("with a keycap puller", "has a keycap puller"), a mass noun none
    ("with noise cancellation"), and no request is in the past but "I was looking for"."""
    rng = random.Random(13)
    idx = {k: i for i, k in enumerate(ALL_KINDS.kinds)}
    pick = ("brand", "material", "color", "count_feature", "noun_feature")
    parts = [Part(k, ALL_KINDS.core[idx[k]][1], ALL_KINDS.core[idx[k]][0]) for k in pick]
    follow_ups = 0
    for _ in range(1500):
        text = realize(parts, rng, ["headset"]).text
        assert len(re.findall(r"\bmade\b", text)) <= 1, text  # the material's, unless it premodifies
        assert re.search(r"\b(a|an) Keycap Puller\b", text), text
        assert not re.search(r"\b(a|an) Noise Cancellation\b", text), text
        assert not re.search(r"\bI (needed|wanted)\b", text), text
        leads = [m.group(1).capitalize().replace("i'd", "I'd") for m in re.finditer(
            r"(?:^|[.?!;-] |, and |\band )((?:[Ii]t|I'd) \w+|\w+)", text)]  # fmt: skip
        leads = [w for w in leads if w in ("Ideally", "Preferably", "It should", "It has", "It needs", "I'd prefer",
                                           "I'd like", "It would")]  # fmt: skip
        follow_ups += len(leads)
        assert len(leads) == len(set(leads)), text
    assert follow_ups > 300  # follow-ups are still said
    assert not {"needed", "wanted"} & set(OPENERS)
