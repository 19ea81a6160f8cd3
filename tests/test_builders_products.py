"""Document text, cleaning, and the one core-term selection function."""

from __future__ import annotations

from pqb.builders.source.descriptors import DescriptorModel
from pqb.builders.source.products import (
    Attribute,
    clean_attribute_value,
    clean_text,
    descriptor_model,
    document_body,
    document_text,
    product_row,
    protected_terms,
    select_core_terms,
    usable_attributes,
)

META = {
    "parent_asin": "B0TEST",
    "title": "Turtle Beach Recon 70 Gaming Headset &amp; Mic",
    "store": "Turtle Beach Store",
    "categories": ["Video Games", "PlayStation 4", "Accessories"],
    "details": {
        "Brand": "Turtle Beach",
        "Best Sellers Rank": {"Video Games": 12},
        "Item model number": "RECON70",
        "Date First Available": "March 1, 2019",
        "Product Dimensions": "7 x 3 x 9 inches",
        "Item Weight": "9.6 ounces",
        "Manufacturer": "Turtle Beach",
        "Is Discontinued By Manufacturer": "No",
        "Connectivity Technology": "Wired",
        "Color": "Black, White",
        "Special Feature": "Lightweight Design With Flip Mic",
        "Hardware Platform": "PlayStation 4",
        "Material": "Plastic",
    },
    "features": ["Turtle Beach Recon 70 Gaming Headset & Mic", "Flip-to-mute mic", "Glasses friendly"],
    "description": [
        "<p>Product Description</p> Built for gamers. See more at http://x.com. 7 x 3 x 9 inches box."
    ],
}


REVIEWS = (  # what real users would write about such a headset: the evidence the judgement reads
    "Love this black headset, the plastic feels fine.",
    "Wired, so no charging. The flip-to-mute mic is handy and it is glasses friendly.",
)


def model_for(*metas: dict, reviews: tuple[str, ...] = REVIEWS) -> DescriptorModel:
    """The core-term judgement learned on ``metas`` and ``reviews`` (the ingest stage learns it per domain)."""
    return descriptor_model(metas, reviews)


def test_clean_text_html_urls_mojibake_cjk() -> None:
    assert clean_text("Itâ€™s &amp;amp; <b>bold</b> www.a.com 日本語 Ωmega") == "It's & bold mega"
    assert clean_text(None) == ""


def test_attribute_filters_of_spec() -> None:
    assert clean_attribute_value("Black, White") == "Black"
    assert clean_attribute_value("PlayStation 4") is None  # digit
    assert clean_attribute_value("PlayStation 4", digits=True) == "PlayStation 4"  # a category node's name
    assert clean_attribute_value("Lightweight Design With Flip Mic") is None  # > 3 words
    assert clean_attribute_value("No") is None and clean_attribute_value("true") is None
    assert clean_attribute_value("Default") is None  # a form's unchanged default, not a colour ("in Default")
    assert clean_attribute_value("日本") is None and clean_attribute_value("---") is None
    assert clean_attribute_value("x" * 201) is None and clean_attribute_value(12) is None


def test_core_terms_priority_and_dedupe() -> None:
    core = select_core_terms(META, model=model_for(META))
    # brand first; Manufacturer dedupes against it; priority keys; then features
    assert core == [
        Attribute("Brand", "Turtle Beach"),
        Attribute("Color", "Black"),
        Attribute("Material", "Plastic"),
        Attribute("Connectivity Technology", "Wired"),
        Attribute("Feature 2", "Flip-to-mute mic"),
    ]
    names = {a.name for a in usable_attributes(META, model=model_for(META))}
    assert not names & {
        "Best Sellers Rank",
        "Item model number",
        "Date First Available",
        "Is Discontinued By Manufacturer",
    }


def test_fewer_than_five_is_not_a_target() -> None:
    meta = {"parent_asin": "A", "title": "Thing", "store": "Acme"}
    assert select_core_terms(meta) == []
    row = product_row(meta)
    assert (
        row["is_target"] is False
        and row["core_terms"] == []
        and row["attributes"] == [{"name": "Brand", "value": "Acme"}]
    )


def test_document_body_layout() -> None:
    text = document_body(META)
    lines = text.split("\n")
    assert lines[0] == "brand: Turtle Beach"  # the title is the corpus view's title field, never repeated
    assert lines[1] == "category: Video Games / PlayStation 4 / Accessories"
    assert lines[2:4] == ["dimensions: 7 x 3 x 9 inches", "weight: 9.6 ounces"]
    assert lines[4:10] == [  # informative details in record order; ranks, ids, dates, brand left out
        "manufacturer: Turtle Beach",
        "connectivity technology: Wired",
        "color: Black, White",
        "special feature: Lightweight Design With Flip Mic",
        "hardware platform: PlayStation 4",
        "material: Plastic",
    ]
    assert (
        lines[10] == "description: Built for gamers."
    )  # boilerplate, URL sentence and dimension repeat dropped
    assert lines[11:] == [
        "features:",
        "#1: Flip-to-mute mic",
        "#2: Glasses friendly",
    ]  # title-repeat feature dropped
    assert document_body(META) == text
    assert document_text(META) == "Turtle Beach Recon 70 Gaming Headset & Mic " + text  # MTEB/BEIR's join


def test_protected_terms_and_row() -> None:
    prot = protected_terms(META)
    assert {"turtle", "beach", "recon", "70", "headset", "mic"} <= set(prot) and prot == sorted(prot)
    row = product_row(META, model=model_for(META))
    assert row["is_target"] and len(row["core_terms"]) == 5 and row["brand"] == "Turtle Beach"
    assert row["attributes"][0] == {"name": "Brand", "value": "Turtle Beach"}
    assert row["core_kinds"] == ["brand", "color", "material", "adj_feature", "noun_feature"]
    # without the domain's evidence (a lone record, no reviews) nothing attests "Black" or "Plastic"
    assert product_row(META)["is_target"] is False


def test_details_as_json_string_like_the_hub_loader() -> None:
    import json

    meta = dict(META, details=json.dumps(META["details"]))
    assert select_core_terms(meta, model=model_for(meta)) == select_core_terms(META, model=model_for(META))


def test_nested_attribute_values_are_not_both_core_terms() -> None:
    """'Sony' inside 'Sony Computer Entertainment' would make 'each core term exactly once' impossible."""
    from pqb.builders.source.products import usable_attributes

    meta = {
        "parent_asin": "X1",
        "title": "Pad",
        "details": {"Brand": "Sony", "Manufacturer": "Sony Computer Entertainment", "Color": "Black"},
        "features": ["Wireless pad", "black finish"],
    }
    values = [a.value for a in usable_attributes(meta, model=model_for(meta, reviews=("black pad",)))]
    assert values[:2] == ["Sony", "Black"]
    assert "Sony Computer Entertainment" not in values
    assert all(v.lower() != "black finish" for v in values)  # contains the earlier "Black"
