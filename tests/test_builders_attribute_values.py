"""Attribute-value normalisation on meta records copied from real ``meta_Video_Games.jsonl`` lines: the
values a record offers (:func:`attribute_candidates`), before the data-learned judgement of which ones
describe the product (tests/test_builders_descriptors.py).

Each record below keeps the fields of the real line that matter (title, store, details, features),
trimmed of long descriptions; the ASIN names the line.
"""

from __future__ import annotations

from collections import Counter

from pqb.builders.source.products import (
    attribute_candidates,
    brand_value,
    clean_attribute_value,
    document_text,
    product_row,
    split_keyed,
)
from pqb.dataset.schema import count_term

NBA_LIVE = {  # B00006JN5L: keyed features, and a details rating that contradicts the feature's
    "parent_asin": "B00006JN5L",
    "title": "NBA Live 2003",
    "store": "Electronic Arts",
    "details": {
        "Package Dimensions": "7.4 x 5.5 x 0.5 inches; 4.96 Ounces",
        "Type of item": "CD-ROM",
        "Rated": "Mature",
        "Is Discontinued By Manufacturer": "No",
        "Item Weight": "5 ounces",
        "Manufacturer": "Electronic Arts",
        "Date First Available": "November 29, 2002",
    },
    "features": ["Platform: Nintendo GameCube", "ESRB Rating: Everyone", "Genre: Sports"],
}
NISOTIEB = {  # B09WLHBXZH: a one-letter colour code and a parenthetical split by a comma
    "parent_asin": "B09WLHBXZH",
    "title": "NiSotieb Game Card Case for Switch",
    "details": {
        "Special features": "Heavy Duty Protection",
        "Other display features": "Video Games",
        "Form Factor": "Case",
        "Color": "B",
        "Manufacturer": "Nisotieb",
        "Brand": "NiSotieb",
        "Material": "Polycarbonate (PC), rubber",
        "Shell Type": "Hard",
    },
    "features": ["Handy cartridge holders for easily slipping game cards in and out"],
}
OLIMOXI = {  # B07ST9BST9: a manufacturer name with a comma inside its legal form
    "parent_asin": "B07ST9BST9",
    "title": "Olimoxi Wireless Switch Pro Controller",
    "details": {
        "Manufacturer": "Olisen ShenZhenShi ShenZhiJia Electronic Co.,Ltd",
        "Compatible Devices": "PC, Nintendo Switch, Windows",
        "Controller Type": "Gamepad",
        "Connectivity Technology": "Wireless,Usb",
        "Color": "Black",
    },
}
VASYITSO = {  # B0B873Z1T2: a two-letter variant code as the colour
    "parent_asin": "B0B873Z1T2",
    "title": "VASYITSO Game Card Case",
    "details": {"Special features": "Magnetic", "Form Factor": "Case", "Color": "ZD", "Brand": "VASYITSO",
                "Shell Type": "Hard", "Special Feature": "Magnetic"},
}  # fmt: skip


def test_keys_are_stripped_from_values() -> None:
    assert split_keyed("Platform: Nintendo GameCube") == ("Platform", "Nintendo GameCube")
    assert split_keyed("ESRB Rating: Everyone") == ("ESRB Rating", "Everyone")
    # a marketing heading is not a key/value line
    assert (
        split_keyed("Set the Perfect Mood: Choose from game, music or movie mode via the audio box") is None
    )
    values = {a.name: a.value for a in attribute_candidates(NBA_LIVE)}
    assert values["Platform"] == "Nintendo GameCube" and values["Genre"] == "Sports"
    assert not any(":" in v for v in values.values())


def test_contradictory_ratings_cancel() -> None:
    stats: Counter[str] = Counter()
    attrs = attribute_candidates(NBA_LIVE, stats)
    assert stats["rating_conflict"] == 1
    assert not {"Mature", "Everyone"} & {a.value for a in attrs}
    agreeing = dict(NBA_LIVE, features=["Platform: Nintendo GameCube", "ESRB Rating: Mature"])
    assert "Mature" in {a.value for a in attribute_candidates(agreeing)}


def test_one_value_per_attribute_and_no_fragments() -> None:
    values = [a.value for a in attribute_candidates(NISOTIEB)]
    assert "B" not in values  # one-letter variant code
    assert "Polycarbonate" in values and "Polycarbonate (PC" not in values
    assert clean_attribute_value("ZD") is None and clean_attribute_value("PC") == "PC"
    assert "ZD" not in [a.value for a in attribute_candidates(VASYITSO)]
    # the comma inside "Co.,Ltd" is part of the name: the brand is rejected whole, never split
    assert brand_value(OLIMOXI) is None
    olimoxi = [a.value for a in attribute_candidates(OLIMOXI)]
    assert olimoxi[:2] == ["Black", "PC"] and "Olisen ShenZhenShi ShenZhiJia Electronic Co." not in olimoxi
    assert brand_value({"store": "Mad Catz, Inc."}) == "Mad Catz"
    names = [a.name for a in attribute_candidates(NBA_LIVE)]
    assert len(names) == len(set(names))


def test_core_terms_are_in_the_document() -> None:
    for meta in (NBA_LIVE, NISOTIEB, OLIMOXI, VASYITSO):
        doc = document_text(meta)
        row = product_row(meta)
        assert all(count_term(doc, a["value"]) for a in row["attributes"])
    assert "type of item: CD-ROM" in document_text(NBA_LIVE).splitlines()
