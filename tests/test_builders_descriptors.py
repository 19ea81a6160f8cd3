"""Which attribute values become core terms (issue 43), judged on the domain's data, and their kinds.

The meta records are real ``meta_Video_Games.jsonl`` lines (trimmed: ranks, dates, dimensions and long
descriptions dropped; the ASIN names the line). The review lines are written for this test: short
sentences of the kind the slice's reviews contain, standing in for a domain's review text.
"""

from __future__ import annotations

import pytest

from pqb.builders.kinds import CATEGORY_KEY, key_kind
from pqb.builders.nlp import load_spacy
from pqb.builders.source.descriptors import (
    Candidate,
    DescriptorModel,
    PhraseCounter,
    attestation_threshold,
    catalogue_phrases,
    count_phrases,
    kind_of,
    read_values,
    rejection_report,
)
from pqb.builders.source.products import (
    attribute_candidates,
    descriptor_model,
    finish_row,
    product_base,
    product_row,
)
from pqb.dataset.schema import count_term

SUDOKU = {  # B002JTX8A4: unkeyed feature lines "Introduces -", "Short vowels", ... (issue 43's example)
    "parent_asin": "B002JTX8A4",
    "title": "Sudoku Ball - Detective - PC",
    "store": "Playlogic International",
    "features": ["Introduces -", "Short vowels", "Phonics skills", "Word recognition", "Reading basics"],
    "details": {"Type of item": "Video Game", "Rated": "Everyone", "Manufacturer": "Playlogic International"},
    "description": ["Take the role of a detective in a small town where a murder has been committed."],
}
BATTLEFIELD = {  # B001ELJFNW: "With in-game success" is the first comma segment of a marketing sentence
    "parent_asin": "B001ELJFNW",
    "title": "Battlefield 2 The Complete Collection DVD - PC",
    "store": "Electronic Arts",
    "features": [
        "With in-game success, players increase their rank from recruit all the way to General",
        "Head online for award-winning Battlefield franchise multiplayer action with up to 64 players",
    ],
    "details": {
        "Type of item": "DVD-ROM",
        "Language": "English",
        "Rated": "Teen",
        "Manufacturer": "Electronic Arts",
    },
    "description": [
        "Lock and load, soldier! The Battlefield 2 Complete Collection puts you on the frontlines."
    ],
}
BATTLE_CARS = {  # B000035XYV: "Rating Pending", said by no one
    "parent_asin": "B000035XYV",
    "title": "Battle Cars",
    "store": "Namco",
    "details": {"Type of item": "Video Game", "Rated": "Rating Pending", "Manufacturer": "Namco"},
    "description": [
        "Battle Cars is an Action game, developed and published by Namco, which was released in 1993."
    ],
}
UUSHOP = {  # B07MFQX2QP: a skin with Theme "Space", Special Feature "Scratch Resistant"
    "parent_asin": "B07MFQX2QP",
    "title": "UUShop Vinyl Skin Sticker Decal Cover for Playstation4 PS4 Controller Purple Starry Galaxy",
    "store": "UUShop",
    "features": ["Professional decals making and design.", "Will not Scratch, Fade (UV Resistant) or Peel."],
    "details": {"Manufacturer": "UUShop", "Brand": "UUShop", "Compatible Devices": "Controller",
                "Material": "Vinyl", "Special Feature": "Scratch Resistant", "Theme": "Space"},
}  # fmt: skip
CYBERTECH = {  # B00ICQ8FNS: "Connector Gender: Male-to-Male", a form field nobody writes
    "parent_asin": "B00ICQ8FNS",
    "title": "Cybertech USB Charging Charger 5' Feet Cables Cord for PS4 DualShock 4 Playstation 4 Controller",
    "store": "CyberTech",
    "features": ["Reliable, affordable USB charging cable for PS4 controller"],
    "details": {"Brand": "CyberTech", "Compatible Devices": "Gaming Console", "Connector Gender": "Male-to-Male",
                "Connectivity Technology": "USB", "Rated": "Rating Pending", "Manufacturer": "CyberTech"},
}  # fmt: skip
METAS = (SUDOKU, BATTLEFIELD, BATTLE_CARS, UUSHOP, CYBERTECH)
REVIEWS = (  # written for this test (see the module docstring)
    "Fun video game for everyone in the family.",
    "My son is a teen and loves it. English manual included.",
    "The vinyl skin is scratch resistant and the space design looks great on my controller.",
    "The USB cable charges my gaming console controller fast.",
    "Great for learning short vowels, he plays it every day.",
)


def learn(metas=METAS, reviews=REVIEWS) -> tuple[DescriptorModel, dict[str, list[Candidate]]]:
    """The model the ingest stage learns (candidates, review and catalogue phrase counts, readings)."""
    return descriptor_model(metas, reviews), {m["parent_asin"]: attribute_candidates(m) for m in metas}


def verdicts(model: DescriptorModel, cands: dict[str, list[Candidate]]) -> dict[str, str]:
    return {c.value: model.judge(c) for cs in cands.values() for c in cs}


def test_the_issue_examples_are_rejected_and_real_descriptors_kept() -> None:
    model, cands = learn()
    v = verdicts(model, cands)
    assert v["With in-game success"] == "fragment"
    assert v["Rating Pending"] == "unattested" and v["Male-to-Male"] == "unattested"
    # "Introduces" reads as a plural noun on its own ("introduces/NNS"): what rejects it is the data:
    # nobody writes it, and unkeyed feature lines do not carry descriptors in this domain
    assert v["Introduces"] in ("unattested", "not_descriptor_key")
    # reviewers do write "short vowels": it passes on its own, but its key (an unkeyed feature line)
    # is not one whose values describe products here (1 of the domain's 6 feature values passes)
    assert model.value_verdict(next(c for c in cands["B002JTX8A4"] if c.value == "Short vowels")) == "ok"
    assert v["Short vowels"] == "not_descriptor_key"
    assert not model.descriptor_key("feature") and model.descriptor_key("rated")
    for kept in ("Playlogic International", "Video Game", "Everyone", "Teen", "English", "UUShop", "Vinyl",
                 "Scratch Resistant", "Space", "USB", "Gaming Console"):  # fmt: skip
        assert v[kept] == "ok", (kept, v[kept])


def test_a_core_term_is_attested_by_the_product_its_reviews_or_other_products() -> None:
    """'Everyone' needs a review that says it; with none, nothing attests it (the product never repeats
    it, no other product's text says it) and the rating key carries no descriptor."""
    model, cands = learn(reviews=())
    v = verdicts(model, cands)
    assert v["Everyone"] == "unattested" and v["Teen"] == "unattested"
    # the seller's own text attests what it repeats: "Vinyl" is in UUShop's title
    assert next(c for c in cands["B07MFQX2QP"] if c.value == "Vinyl").echo and v["Vinyl"] == "ok"


def test_candidates_handed_in_give_the_model_the_records_give() -> None:
    """The paper-scale bench hands in the candidates it already has: the same judgement, kinds and forms."""
    model, cands = learn()
    given = descriptor_model(METAS, REVIEWS, [attribute_candidates(m) for m in METAS])
    assert verdicts(given, cands) == verdicts(model, cands)
    assert given.key_counts == model.key_counts and given.usage == model.usage


def test_the_key_rule_is_learned_from_the_share_of_passing_values() -> None:
    """The same value is a descriptor under a key whose values mostly pass and not under one whose values
    mostly fail: the rule is the data's, not a list of keys."""
    good = [[Candidate("Finish", "finish", v, True)] for v in ("Black", "Blue", "Red")]
    bad = [[Candidate("Series", "series", v, v == "Black")] for v in ("Black", "Zorblax", "Quuxish")]
    model = DescriptorModel.learn(good + bad)
    assert model.judge(good[0][0]) == "ok"
    assert model.judge(Candidate("Series", "series", "Black", True)) == "not_descriptor_key"
    assert model.key_counts == {"finish": (3, 3), "series": (1, 3)}


@pytest.mark.parametrize(
    ("value", "kind", "form"),
    [
        ("Play as Alien", "feature", "instruction_verb"),
        ("Improves accuracy", "feature", "instruction_verb"),
        ("Includes The Sims", "feature", "instruction_verb"),
        ("With in-game success", "feature", "fragment"),
        ("For the Xbox", "feature", "fragment"),
        ("A New Hero", "feature", "fragment"),
        ("Hints too", "feature", "fragment"),
        ("Accessory Only", "feature", "fragment"),
        ("not null", "feature", "placeholder"),
        ("language _ tag", "product", "placeholder"),
        ("No Operating System", "platform", "placeholder"),
        ("All", "platform", "placeholder"),
        ("BU+RE+PI", "color", "placeholder"),  # a pack's variants, not a colour
        ("Red Camo+Blue Camo", "color", "placeholder"),
        ("White & Pink", "color", "ok"),
        ("Disney+", "brand", "ok"),
        ("Everyone", "age_rating", "ok"),  # a rating's name, though a pronoun elsewhere
        ("Flip-to-mute mic", "feature", "ok"),  # a hyphenated compound, not the verb "flip"
        ("Over Ear", "product", "ok"),
        ("Scratch Resistant", "feature", "ok"),
        ("Noise Cancellation", "feature", "ok"),
        ("Black", "color", "ok"),
        ("By Ubisoft", "brand", "fragment"),
        ("The Image People", "brand", "ok"),  # a name may start with "The"
    ],
)
def test_each_value_is_read_by_its_own_parse(value: str, kind: str, form: str) -> None:
    assert read_values([(value, kind)], load_spacy())[(value, kind)].form == form


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        ("Color", "Black", "color"),
        ("Connectivity Technology", "Wired", "adj_feature"),
        ("Connectivity Technology", "USB", "connectivity"),
        ("Special Feature", "Scratch Resistant", "adj_feature"),
        ("Special Feature", "Noise Cancellation", "noun_feature"),
        ("Form Factor", "Over Ear", "adj_feature"),
        ("Controller Type", "Gamepad", "product"),
        ("Rated", "Teen", "age_rating"),
        ("Age Range (Description)", "Adult", "audience"),
        ("Material", "Silicone", "material"),
        ("Hardware Platform", "PC", "platform"),
        ("Operating System", "Windows", "platform"),
        ("Recommended Uses For Product", "Gaming", "purpose"),
        ("Theme", "Space", "style"),
        ("Size", "Large", "size"),
        ("Brand", "Sony", "brand"),
        ("Language", "English", "language"),
    ],
)
def test_each_core_term_is_typed_from_its_key_and_parse(key: str, value: str, kind: str) -> None:
    k = key_kind(key)
    reading = read_values([(value, k)], load_spacy())[(value, k)]
    assert kind_of(key.lower(), reading) == kind


def test_phrase_counts_match_the_lexical_rule_and_the_threshold_scales() -> None:
    counter = PhraseCounter(["USB", "Scratch Resistant", "Male-to-Male"])
    texts = [
        "usb-c is not USB?",
        "Scratch   resistant, yes",
        "scratch resistantly",
        "male-to-male cable",
        "x",
    ]
    for t in texts:
        counter.add(t)
    for v in ("USB", "Scratch Resistant", "Male-to-Male"):
        assert counter.df[v.lower()] == sum(bool(count_term(t, v)) for t in texts)
    assert counter.documents == 5
    assert attestation_threshold(1345) == 1 and attestation_threshold(4_600_000) == 46
    assert attestation_threshold(10, minimum=2) == 2


def test_counts_of_chunks_merged_equal_one_pass_and_every_word_must_be_present() -> None:
    """Ingest counts the reviews chunk by chunk on the executor (paper scale: 4.6M reviews); the merged
    counts, their order of first occurrence included, are those of one pass. A value is looked for only
    where the text has all of its words, which is what a whole-word match needs."""
    values = ("USB", "USB C", "Scratch Resistant", "Dust Proof", "Windows", "male-to-male")
    texts = [
        "usb-c is not USB?",
        "Dust proof switches, scratch resistant shell.",
        "It works with Windows and USB C.",
        "",
        "usb only here; proof of purchase",
        "A male-to-male USB cable for Windows.",
    ]
    whole = PhraseCounter(values)
    for t in texts:
        whole.add(t)
    merged = PhraseCounter(values)
    for part in (texts[:2], texts[2:3], texts[3:]):
        merged.merge(count_phrases((values, part)))
    assert merged.counts() == whole.counts()
    assert list(merged.usage) == list(whole.usage) and list(merged.df) == list(whole.df)
    for v in values:
        assert whole.df[v.lower()] == sum(bool(count_term(t, v)) for t in texts)
    assert whole.df["dust proof"] == 1 and whole.documents == 6


def test_a_product_row_carries_the_kinds_of_its_core_terms() -> None:
    model, _ = learn()
    row = product_row(UUSHOP, model=model)
    assert row["is_target"] and row["core_terms"] == [
        "UUShop",
        "Vinyl",
        "Controller",
        "Scratch Resistant",
        "Space",
    ]
    # "controller" is written in lower case by the reviews: a device, phrased "for a controller"
    assert row["core_kinds"] == ["brand", "material", "device", "adj_feature", "style"]


def test_uses_are_read_from_the_words_around_each_occurrence() -> None:
    """Issue 43, round two: how the domain's text writes a value (the slot before it, whether its phrase
    ends with it, whether it is capitalised inside running text) is counted per occurrence."""
    counter = PhraseCounter(["Dust Proof", "Gaming", "Windows", "controller"])
    for text in (
        "Gateron dust proof switches feel smooth.",  # premodifier
        "Great for gaming. I bought it for gaming keyboards too.",  # bare "for" ending, then a premodifier
        "It works with Windows, and it is compatible with Windows 10.",  # capitalised, after works/compatible with
        "Nice skin for the controller.",  # "for" + determiner, phrase ends, lower case
        "WIRELESS GAMING HEADSET FOR WINDOWS",  # all caps: says nothing about case
    ):
        counter.add(text)
    dust, gaming, windows, controller = (
        counter.use_of(v) for v in ("dust proof", "Gaming", "windows", "Controller")
    )
    assert (dust.uses, dust.premodifier, dust.head, dust.after_with, dust.predicate) == (1, 1, 0, 0, 0)
    assert (gaming.uses, gaming.bare_for, gaming.after_for, gaming.premodifier) == (3, 1, 2, 2)
    assert (windows.capitalised, windows.lower, windows.after_compatible, windows.after_for) == (2, 0, 2, 1)
    assert windows.name() and windows.platform()
    assert (controller.determined, controller.bare_for, controller.lower) == (1, 0, 1)
    assert controller.common_noun() and controller.count_noun()
    assert counter.df["gaming"] == 2  # documents, each counted once whatever the case of the value


SLICE_USES = {  # sentences in the manner of the slice's own text (docs/design.md §5 gives the slice's counts)
    "Dust Proof": ["Gateron dust proof switches feel smooth.", "Its dust proof switches last."],
    "Gaming": ["Great for gaming.", "Perfect for gaming, light and fast.", "My gaming keyboard died."],
    "Windows": ["Works with Windows fine.", "It is compatible with Windows and Mac.", "I use Windows daily."],
    "Controller": ["The skin fits my controller well.", "Buttons on the controller stick."],
    "Wired": ["A wired controller.", "The keyboard is wired, so no lag."],
    "Variety Pack": ["I ordered the variety pack.", "This variety pack, though, lacked red."],
    "LED Backlighting": ["A keyboard with LED backlighting.", "LED backlighting looks great."],
    "Monitor": ["I hooked it up to the monitor.", "It sits under my monitor."],
    "Optical": ["An optical mouse.", "Great optical sensor."],
    "Space": ["The space design is cool.", "It saves space."],
    "Travel": ["Good for travel.", "Perfect for travel and work."],
    "Noise Cancellation": ["The noise cancellation is weak.", "A headset with noise cancellation."],
}


@pytest.mark.parametrize(
    ("key", "value", "without_use", "with_use"),
    [
        ("Special Feature", "Dust Proof", "noun_feature", "modifier"),  # "featuring Dust Proof" before
        ("Keyboard Description", "Gaming", "noun_feature", "purpose"),  # "with Gaming"
        ("Controller Type", "Windows", "product", "platform"),  # "is it a Windows?"
        ("Compatible Devices", "Controller", "platform", "device"),  # "for Controller"
        ("Style", "Wired", "adj_feature", "adj_feature"),  # was "with a Wired design" (style) in round one
        ("Pattern", "Variety Pack", "style", "product"),  # "in a Variety Pack style"
        ("Style", "LED Backlighting", "style", "noun_feature"),  # "in an LED Backlighting style"
        ("Specific Uses For Product", "Monitor", "purpose", "device"),  # "for Monitor"
        ("Movement Detection Technology", "Optical", "adj_feature", "modifier"),  # "that is Optical"
        ("Theme", "Space", "style", "style"),
        ("Special Feature", "Travel", "noun_feature", "purpose"),  # "with Travel"
        ("Special Feature", "Noise Cancellation", "noun_feature", "noun_feature"),
    ],
)
def test_kinds_follow_how_the_domain_writes_each_value(
    key: str, value: str, without_use: str, with_use: str
) -> None:
    """The key and the parse alone type the reader's round-one faults wrong (``without_use``); the
    domain's own use of each value types them as a reader would (``with_use``)."""
    k = key_kind(key)
    reading = read_values([(value, k)], load_spacy())[(value, k)]
    counter = PhraseCounter([value])
    for text in SLICE_USES[value]:
        counter.add(text)
    assert kind_of(key.lower(), reading) == without_use
    assert kind_of(key.lower(), reading, counter.use_of(value)) == with_use


MIDNIGHT_CLUB = {  # B000WQ3838, trimmed: four descriptors (publisher, item type, rating, language)
    "parent_asin": "B000WQ3838",
    "title": "Midnight Club: Los Angeles - Playstation 3",
    "store": "Rockstar Games",
    "categories": ["Video Games", "Legacy Systems", "PlayStation Systems", "PlayStation 3", "Games"],
    "details": {"Type of item": "Video Game", "Language": "English", "Rated": "Teen", "Manufacturer": "Rockstar Games"},
    "features": ["Incredible selection of licensed muscle cars, tuners, exotics, motorcycles and luxury cars"],
    "description": ["The entire city of Los Angeles is your playground as you speed through the streets."],
}  # fmt: skip
GAME_REVIEWS = (  # written for this test, in the manner of the slice's reviews
    "Fun video game for teens, my son plays it for hours.",
    "Bought it for PlayStation 3 and it runs fine. English voices.",
    "The best games are racing games, and this one is great on PlayStation 3.",
    "Rated teen but fine for everyone.",
)


def test_a_category_node_the_text_uses_as_a_platform_is_a_fifth_core_term() -> None:
    """A game's attributes give four descriptors; its category path names its platform. Only a node the
    domain's text writes as a name after "for"/"compatible with" is offered, digits kept."""
    model = descriptor_model([MIDNIGHT_CLUB], GAME_REVIEWS)
    cands = attribute_candidates(MIDNIGHT_CLUB)
    nodes = {c.value: model.judge(c) for c in cands if c.key == CATEGORY_KEY}
    assert nodes == {
        "Legacy Systems": "unattested",
        "PlayStation Systems": "unattested",
        "PlayStation 3": "ok",
        "Games": "category_not_platform",  # common noun: "racing games"
    }
    row = product_row(MIDNIGHT_CLUB, model=model)
    assert row["is_target"] and row["core_terms"] == [
        "Rockstar Games",
        "Video Game",
        "Teen",
        "English",
        "PlayStation 3",
    ]
    assert row["core_kinds"][-1] == "platform"
    assert {"name": "Category", "value": "PlayStation 3"} in row["attributes"]
    judged: list = []
    finish_row(product_base(MIDNIGHT_CLUB), cands, model, judged)
    report = rejection_report(judged)
    assert report["values"] == len(cands) - 4 and report["category_nodes"]["offered"] == 4
    assert report["category_nodes"]["accepted"] == 1
    assert report["category_nodes"]["by_kind"] == {"unattested": 2, "category_not_platform": 1}


def test_a_value_starting_with_a_preposition_is_a_fragment_where_the_text_ends_phrases_with_it() -> None:
    """ "How to install: with adhesive" read as a premodifier ("Show me a with adhesive sticker"); the
    text writes it as a phrase of its own, unlike "over ear" ("over ear headphones")."""
    counter = PhraseCounter(["with adhesive", "Over Ear"])
    for text in (
        "Sticks on with adhesive.",
        "Install it with adhesive, then press.",
        "Soft over ear cushions.",
    ):
        counter.add(text)
    cands = [Candidate("How to install", "how to install", "with adhesive", True),
             Candidate("Form Factor", "form factor", "Over Ear", True)]  # fmt: skip
    model = DescriptorModel.learn([cands], counter)
    assert model.value_verdict(cands[0]) == "fragment" and model.value_verdict(cands[1]) == "ok"


def test_a_query_writes_a_common_word_in_lower_case_and_a_name_as_it_stands() -> None:
    """ "a dust proof skin for a video game", not "a Dust Proof skin for a Video Game": the domain's running
    text writes these in lower case; names, acronyms and brands keep their capitals (issue 43, round two)."""
    counter = PhraseCounter(["Dust Proof", "Windows", "USB", "Mountain", "Video Game"])
    for text in ("Gateron dust proof switches feel smooth.", "It works with Windows and Mac fine.",
                 "The USB cable is short.", "We hiked a mountain.", "A fun video game for kids."):  # fmt: skip
        counter.add(text)
    cands = [Candidate("Special Feature", "special feature", "Dust Proof", True),
             Candidate("Operating System", "operating system", "Windows", True),
             Candidate("Connectivity Technology", "connectivity technology", "USB", True),
             Candidate("Brand", "brand", "Mountain", True),
             Candidate("Type of item", "type of item", "Video Game", True)]  # fmt: skip
    model = DescriptorModel.learn([cands], counter)
    forms = [model.written_form(c) for c in cands]
    assert forms == ["dust proof", "Windows", "USB", "Mountain", "video game"]


class _KindsOnly:
    """A stand-in for :class:`DescriptorModel` that accepts every value and types it from a table: the
    rule under test is the choice among accepted values, not the judgement."""

    def __init__(self, kinds: dict[str, str]) -> None:
        self.kinds = kinds

    def judge(self, c: Candidate) -> str:
        return "ok"

    def kind(self, c: Candidate) -> str:
        return self.kinds[c.value]


def test_a_device_gives_way_to_a_named_platform_and_named_platforms_stay() -> None:
    from pqb.builders.source.products import select_candidates

    model = _KindsOnly({"Sony": "brand", "Gaming Console": "device", "Controller": "device",
                        "PlayStation 4": "platform", "PC": "platform", "Black": "color"})  # fmt: skip
    cand = [
        Candidate("Brand", "brand", "Sony", True),
        Candidate("Compatible Devices", "compatible devices", "Gaming Console", True),
        Candidate("Controller Type", "controller type", "Controller", True),
        Candidate("Platform", "platform", "PlayStation 4", False),
        Candidate("Feature 1", "feature", "PC", True),
        Candidate("Color", "color", "Black", False),
    ]
    got = select_candidates(cand, model)  # type: ignore[arg-type]
    assert [c.value for c in got] == ["Sony", "PlayStation 4", "PC", "Black"]
    # no named platform: the first device alone
    assert [c.value for c in select_candidates(cand[:3] + cand[5:], model)] == ["Sony", "Gaming Console", "Black"]  # type: ignore[arg-type]


def test_a_product_has_one_maker_one_colour_one_material() -> None:
    from pqb.builders.source.products import select_candidates

    model = _KindsOnly({"Hotline Games": "brand", "HGLO": "brand", "Silver": "color", "Bronze": "color",
                        "Nickel": "material", "Brass": "material", "Wired": "adj_feature",
                        "Backlit": "adj_feature"})  # fmt: skip
    cand = [Candidate(k, k.lower(), v, True) for k, v in [
        ("Brand", "Hotline Games"), ("Color", "Silver"), ("Manufacturer", "HGLO"), ("Material", "Nickel"),
        ("Style", "Bronze"), ("Feature 1", "Wired"), ("Material Type", "Brass"), ("Feature 2", "Backlit")]]  # fmt: skip
    got = [c.value for c in select_candidates(cand, model)]  # type: ignore[arg-type]
    assert got == ["Hotline Games", "Silver", "Nickel", "Wired", "Backlit"]  # two features of a kind stay


def test_an_adjective_the_text_never_capitalises_is_written_in_lower_case() -> None:
    """ "a holder that is Ambidextrous" read as a name to round seven's panel: a seller's Title Case
    adjective the domain's running text never writes is a common word; one the text capitalises
    ("Japanese") and a colour name ("Monroe Currency") keep their capitals."""
    counter = PhraseCounter(["Ambidextrous", "Japanese", "Monroe Currency"])
    for text in ("The menus are all in Japanese sadly.", "It came with a Japanese manual."):
        counter.add(text)
    cands = [Candidate("Hand Orientation", "hand orientation", "Ambidextrous", True),
             Candidate("Language", "language", "Japanese", True),
             Candidate("Color", "color", "Monroe Currency", True)]  # fmt: skip
    model = DescriptorModel.learn([cands], counter)
    assert model.kind(cands[0]) == "adj_feature"
    assert [model.written_form(c) for c in cands] == ["ambidextrous", "Japanese", "Monroe Currency"]


def test_a_value_that_names_an_attribute_or_repeats_a_word_is_a_placeholder() -> None:
    """ "Connectivity Technology: Type" (a truncated "Type-C") passed every rule, and "a stand ... that has
    type" scored 2.0 with round eight's panel: a value that is the last word of one of the domain's keys
    names an attribute, and "a white white wds case" repeats a seller's slip. Values that hold such a word
    among others stay ("USB Type C")."""
    counter = PhraseCounter(["Type", "USB Type C", "Black", "White White"])
    for text in ("What type of cable is it?", "The USB Type C port is loose.", "The black one is nice.",
                 "White white everywhere."):  # fmt: skip
        counter.add(text)
    cands = [Candidate("Connectivity Technology", "connectivity technology", "Type", True),
             Candidate("Connector Type", "connector type", "USB Type C", True),
             Candidate("Color", "color", "Black", True), Candidate("Color", "color", "White White", True)]  # fmt: skip
    model = DescriptorModel.learn([cands], counter)
    assert [model.value_verdict(c) for c in cands] == ["placeholder", "ok", "ok", "placeholder"]


def test_the_audience_nearly_all_of_a_keys_products_give_is_a_default_not_a_core_term() -> None:
    """ "for an adult" read as odd to all three raters of rounds seven to nine: "Age Range: Adult" is given
    by 21 of the slice's 23 products that give an age range, so it narrows nothing. An audience four in
    five of a key's products give (of ten or more) is its default; a less common one stays ("Kid"), and so
    do other kinds' common values ("in English" is asked for), and a key of fewer than ten products has
    no majority to speak of."""
    def product(*pairs: tuple[str, str]) -> list[Candidate]:
        return [Candidate(k, k.lower(), v, True) for k, v in pairs]

    products = [
        product(("Age Range (Description)", "Adult" if i < 8 else "Kid"), ("Language", "English"),
                ("Type of item", "Video Game"))
        for i in range(10)
    ] + [product(("Age Range", "Teen")) for _ in range(9)]  # fmt: skip
    counter = PhraseCounter(["Adult", "Kid", "Video Game", "English", "Teen"])
    for text in ("Great for an adult.", "My kid loves it.", "A fun video game.", "In English.", "A teen game."):
        counter.add(text)
    model = DescriptorModel.learn(products, counter)
    verdict = {(c.key, c.value): model.judge(c) for cands in products for c in cands}
    assert set(verdict.values()) == {"ok", "default_value"}
    assert [kv for kv, v in verdict.items() if v != "ok"] == [("age range (description)", "Adult")]
    report = rejection_report((c, model.judge(c)) for cands in products for c in cands)
    assert report["by_kind"]["default_value"] == 8
    assert report["examples"]["default_value"] == ["Age Range (Description): Adult"]


def test_a_feature_the_text_writes_after_a_or_an_takes_an_article() -> None:
    """ "have zipper" and "come with ergonomic design" read as broken English to round nine's raters: a
    nominal feature the domain's text writes after "a"/"an" (the value; or its last word where the
    phrase is rare, in the products' own text) is a count feature ("with a zipper"); one it never does
    stays bare ("with lighting", though "the lighting" is written: "the" does not tell). The reviews'
    counter counts values only: a head word there would not count."""
    cands = [Candidate("Special Feature", "special feature", v, True)
             for v in ("Zipper", "Ergonomic Design", "Lighting", "Noise Cancellation", "Cute Design")]  # fmt: skip
    phrases = catalogue_phrases([cands])
    assert {"design", "cancellation"} <= set(phrases) and "cute" not in phrases
    values = sorted(c.value for c in cands)
    reviews, catalogue = PhraseCounter(values), PhraseCounter(phrases)
    for text in ("It has a zipper.", "Comes with a zipper, nice.", "Love the lighting.", "Noise cancellation works."):
        reviews.add(text)
    for text in ("I like a design that is simple.", "It is a design.", "The lighting is great.",
                 "The ergonomic design is good."):  # fmt: skip
        catalogue.add(text)
    model = DescriptorModel.learn([cands], reviews, catalogue)
    assert [model.kind(c) for c in cands] == ["count_feature", "count_feature", "noun_feature", "noun_feature",
                                              "count_feature"]  # fmt: skip
    # the same head-noun evidence in the reviews alone is not counted
    reviews, catalogue = PhraseCounter(values), PhraseCounter(phrases)
    for text in ("I like a design that is simple.", "It is a design."):
        reviews.add(text)
    model = DescriptorModel.learn([cands], reviews, catalogue)
    assert model.kind(cands[1]) == "noun_feature"


def test_a_property_key_the_products_own_words_rarely_repeat_is_a_form_default() -> None:
    """ "a case ... that is wireless", "a vinyl skin ... it should be wireless": the slice's "Other display
    features: Wireless" is on 16 of 19 products, skins and cases among them, and their own words repeat
    it on 1. A property key that fewer than one in five of its (ten or more) products echo is a form
    field, not what the products are; one echoed more often stays, and so does a classification no
    description repeats (a rating) and a key too rare to judge."""
    def product(echo: bool, *pairs: tuple[str, str]) -> list[Candidate]:
        return [Candidate(k, k.lower(), v, echo) for k, v in pairs]

    display = [product(i == 0, ("Other display features", "Wireless")) for i in range(10)]
    special = [product(i < 2, ("Special Feature", "Backlit")) for i in range(10)]
    rated = [product(False, ("Rated", "Teen")) for _ in range(10)]
    rare = [product(False, ("Hand Orientation", "Ambidextrous")) for _ in range(9)]
    products = display + special + rated + rare
    counter = PhraseCounter(["Wireless", "Backlit", "Teen", "Ambidextrous"])
    for text in ("It is wireless.", "It is backlit.", "Rated teen.", "It is ambidextrous."):
        counter.add(text)
    model = DescriptorModel.learn(products, counter)
    verdicts = {c.key: model.judge(c) for cands in products for c in cands}
    assert verdicts == {"other display features": "unechoed_key", "special feature": "ok", "rated": "ok",
                        "hand orientation": "ok"}  # fmt: skip
    report = rejection_report((c, model.judge(c)) for cands in products for c in cands)
    assert report["by_kind"]["unechoed_key"] == 10
    # a product counts once per key, echoing when any of its values there is echoed (the unkeyed feature
    # lines share one key): the key's share is 10 of 10 here, whichever line comes last
    lines = [[Candidate("Feature 1", "feature", "Backlit", True), Candidate("Feature 2", "feature", "Wireless", False)]
             for _ in range(10)]  # fmt: skip
    assert DescriptorModel.learn(lines, counter).unechoed_keys == frozenset()


def test_a_colour_field_that_names_another_attribute_is_not_a_colour() -> None:
    """ "come in Red Switch" (round ten's raters), "It needs to be floral design": sellers put a switch, a
    backlight or a design in the colour field. A colour value one of whose parts ends in a word that is no
    one-word colour of the domain and heads another key's values is rejected ("Blue Switch-White"); a
    design name no other key uses stays, and
    keeps its capitals (a name is never a bare predicate), while a colour of colour words is written as
    the text writes it ("black grey")."""
    def product(*pairs: tuple[str, str]) -> list[Candidate]:
        return [Candidate(k, k.lower(), v, True) for k, v in pairs]

    colours = ("Black", "Grey", "Red Switch", "Floral Design", "Blue Nebula", "Black Grey", "Rainbow Backlit",
               "Blue Switch-White", "Black-White")
    products = [product(("Color", v)) for v in colours] + [
        product(("Hardware Platform", "Nintendo Switch"), ("Special Feature", "Ergonomic Design"),
                ("Special Feature 2", "Backlit")),
    ]  # fmt: skip
    values = [*colours, "Nintendo Switch", "Ergonomic Design", "Backlit"]
    counter = PhraseCounter(values)
    for text in ("It is black grey, a floral design.", "I love the blue nebula one.", "the red switch is",
                 "rainbow backlit keys", "black and grey", "blue switch-white and black-white"):  # fmt: skip
        counter.add(text)
    model = DescriptorModel.learn(products, counter)
    verdict = {c.value: model.judge(c) for cands in products[:-1] for c in cands}
    assert [v for v, j in verdict.items() if j == "not_a_colour"] == ["Red Switch", "Floral Design",
                                                                      "Rainbow Backlit", "Blue Switch-White"]  # fmt: skip
    assert verdict["Blue Nebula"] == verdict["Black Grey"] == verdict["Black-White"] == "ok"
    forms = {c.value: model.written_form(c) for cands in products[:-1] for c in cands}
    assert forms["Black Grey"] == "black grey" and forms["Blue Nebula"] == "Blue Nebula"
    assert forms["Floral Design"] == "Floral Design"
