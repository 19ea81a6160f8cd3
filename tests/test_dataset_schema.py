"""The shared schema module: the term-matching rule behind lexical validity, edits, and the validator."""

from __future__ import annotations

import pytest

from pqb.dataset.schema import apply_edits, check_rows, count_term, edit_position, term_spans


def test_count_term_is_case_insensitive_whole_word() -> None:
    assert count_term("Sony pad, sony cable and a SONYX box", "sony") == 2
    assert count_term("Sony  Computer Entertainment", "Sony Computer Entertainment") == 1
    assert count_term("anything", "  ") == 0


def test_spans_index_the_original_text_even_when_lowercasing_changes_its_length() -> None:
    text = "İ bag for Nintendo switch"  # "İ".lower() is two code points
    [(start, end)] = term_spans(text, "nintendo")
    assert text[start:end] == "Nintendo"


def _row(**kw):
    base = {
        "id": "d:A1:u1", "asin": "A1", "user_id": "u1", "pair_id": "d:A1",
        "query": "I want a Sony pad in black", "error_query": "I wnat a Sony pad in black",
        "error_edits": [{"start": 2, "end": 6, "original": "want", "edited": "wnat", "mechanism": "transposition"}],
        "core_terms": ["Sony", "pad", "black", "I", "a"], "protected_terms": ["sony"],
    }  # fmt: skip
    base.update(kw)
    return base


def test_check_rows_reports_every_violation_of_a_row() -> None:
    good = _row()
    assert apply_edits(good["query"], good["error_edits"]) == good["error_query"]
    assert check_rows([good], release=True).ok  # no chain: only a release row may lack it
    assert set(check_rows([good]).by_rule()) == {"missing_chain"}
    bad = _row(
        error_query="I want a Sxny pad in black",
        error_edits=[{"start": 9, "end": 13, "original": "Sony", "edited": "Sxny", "mechanism": "nonsense"}],
    )
    rules = check_rows([bad], release=True).by_rule()
    assert set(rules) == {"unknown_mechanism"}  # a core term may carry a (readable) typo since issue 12
    bad = _row(
        query="I want a PS5 pad in black",
        error_query="I want a PS6 pad in bkack",
        error_edits=[
            {"start": 9, "end": 12, "original": "PS5", "edited": "PS6", "mechanism": "keyboard_adjacent"},
            {"start": 20, "end": 25, "original": "black", "edited": "bkack", "mechanism": "keyboard_adjacent",
             "location": "somewhere"},
        ],
        error_chain=[{"start": 20, "end": 25, "original": "black", "edited": "bkack", "mechanism": "keyboard_adjacent"}],
    )  # fmt: skip
    rules = check_rows([bad], require_core_terms=False).by_rule()
    assert {"protected_token_edited", "unknown_location", "edits_not_chain_prefix"} <= set(rules)
    spans = _row(
        error_query="I want a Sonypad in black",
        error_edits=[
            {"start": 9, "end": 17, "original": "Sony pad", "edited": "Sonypad", "mechanism": "deletion"}
        ],
    )
    assert "edit_not_one_word" in check_rows([spans], release=True).by_rule()


def test_null_query_is_a_violation_not_a_traceback() -> None:
    """A row whose ``query`` is null (an edited parquet) stopped ``validate`` and ``run`` with a TypeError
    from ``apply_edits`` (error rows) or ``count_term`` (a syntactic pair's core terms)."""
    other = _row(id="d:A1:u2", user_id="u2", error_query=None, error_edits=[])
    rules = check_rows([_row(query=None), other], release=True).by_rule()
    assert {"empty_query", "edit_offsets", "pair_core_term_frequency"} <= set(rules)


@pytest.mark.parametrize(
    ("intended", "written", "bucket"),
    [
        ("volume", "bolume", "first"),  # first letter replaced
        ("volume", "olume", "first"),  # first letter dropped
        ("volume", "ovlume", "first"),  # first two swapped
        ("volume", "xvolume", "first"),  # a letter typed before it
        ("volume", "vvolume", "interior"),  # a doubled first letter leaves it correct (prefix first)
        ("aardvark", "ardvark", "interior"),  # dropping one of a double: the first letter is still right
        ("volume", "volmue", "interior"),
        ("pattern", "patern", "interior"),
        ("volume", "volumr", "last"),  # last letter replaced
        ("volume", "volum", "last"),  # last letter dropped
        ("volume", "voluem", "last"),  # last two swapped
        ("volume", "volumee", "last"),  # a letter typed after it
        ("Although", "Althought", "last"),
        ("Volume", "Bolume", "first"),  # case is ignored
    ],
)
def test_edit_position_buckets_by_hand(intended: str, written: str, bucket: str) -> None:
    assert edit_position(intended, written) == bucket


def test_check_rows_verifies_edit_positions() -> None:
    edit = {"start": 21, "end": 26, "original": "black", "edited": "bkack", "mechanism": "keyboard_adjacent"}
    good = _row(error_query="I want a Sony pad in bkack", error_edits=[edit | {"position": "interior"}])
    good["error_chain"] = good["error_edits"]
    assert check_rows([good]).ok and check_rows([good]).checked["edit_positions"] == 2
    wrong = _row(error_query="I want a Sony pad in bkack", error_edits=[edit | {"position": "last"}])
    assert set(check_rows([wrong], release=True).by_rule()) == {"wrong_position"}
    # rows built by PQB's injector (they carry a chain) must record the position of every edit
    missing = _row(error_query="I want a Sony pad in bkack", error_edits=[edit], error_chain=[edit])
    assert check_rows([missing]).by_rule() == {"missing_position": 2}
    # edits recovered by diffing (the authors' release: no chain) may leave it out
    assert check_rows([_row(error_query="I want a Sony pad in bkack", error_edits=[edit])], release=True).ok
