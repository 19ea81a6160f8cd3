"""The card's saturation figures (builders/reports/lexical_ceiling.py): the harness's tie rule and Hit@K."""

from __future__ import annotations

import numpy as np

from pqb.builders.reports.lexical_ceiling import lexical_ceiling, render
from pqb.dataset.rules import target_ranks


def test_ranks_follow_the_harness_tie_rule() -> None:
    scores = np.array([[3.0, 2.0, 2.0 * (1 + 1e-7), 1.0], [3.0, 2.0, 2.0 * (1 + 1e-7), 1.0]])
    # target 2 ties (within 1e-6) with doc 1, which comes earlier: rank 3; target 1: doc 2 comes later
    assert target_ranks(scores, np.array([2, 1]))[0].tolist() == [3, 2]
    assert target_ranks(np.array([[0.0, 0.0, 0.0]]), np.array([2]))[0].tolist() == [3]  # zero scores tie too


def test_the_report_reads_the_shared_rules_and_keeps_no_copy() -> None:
    """Issue 44: the report kept its own K values, threshold and tie rule, and its tie floor had drifted
    (np.finfo.tiny against the harness's 1e-12)."""
    import inspect

    import pqb.builders.reports.lexical_ceiling as report
    from pqb.dataset import rules

    source = inspect.getsource(report)
    assert (
        "finfo" not in source
        and "1e-6" not in source
        and "0.95" not in source
        and "(1, 5, 10, 20)" not in source
    )
    assert report.K_VALUES is rules.K_VALUES and report.target_ranks is rules.target_ranks
    # a target scoring 1e-19 beside documents at exactly 0: within the floor's 1e-18 of them, so a tie
    assert target_ranks(np.array([[0.0, 1e-19, 0.0]]), np.array([1]))[0].tolist() == [2]


def test_lexical_ceiling_hits_and_saturation() -> None:
    corpus = [
        {"id": "b", "title": "Racing wheel", "text": "with pedals and force feedback"},
        {"id": "a", "title": "Controller", "text": "wireless controller for the switch, long battery"},
        {"id": "c", "title": "Headset", "text": "gaming headset with microphone"},
    ]
    rows = [
        {"query": "wireless controller battery", "asin": "a", "error_query": "wireles controller battery"},
        {"query": "racing wheel pedals", "asin": "b", "error_query": "zzz qqq"},
        {"query": "gaming headset microphone", "asin": "c", "error_query": None},
    ]
    c = lexical_ceiling(corpus, rows)
    assert c["documents"] == 3 and c["hits"]["syntactic"]["n"] == 3 and c["hits"]["error, clean"]["n"] == 2
    assert c["hits"]["syntactic"]["hit@1"] == 1.0 and c["hits"]["error, clean"]["hit@1"] == 1.0
    # "zzz qqq" scores 0 everywhere: rank 2 ("a" and "b" tie at 0; "a" comes first), a Hit@1 of 1/2
    assert c["hits"]["error, typo'd"]["hit@1"] == 0.5 and c["hits"]["error, typo'd"]["hit@5"] == 1.0
    assert c["saturated_at"] == {"syntactic": [1, 5, 10, 20], "error": [5, 10, 20]}
    assert "K = 1, 5, 10, 20 on syntactic pairs and K = 5, 10, 20 on error pairs" in render("toy", c)


def test_ranks_in_query_blocks_equal_ranks_at_once(monkeypatch) -> None:
    """The report scores a block of queries at a time (a paper-scale corpus times every query at once was
    ~10 GB); a rank depends on its own query only, so blocks of 3 give the ranks of one block of all."""
    from pqb.builders.reports import lexical_ceiling as lc

    words = [
        "wireless",
        "controller",
        "racing",
        "wheel",
        "headset",
        "battery",
        "pedals",
        "cable",
        "switch",
        "charger",
    ]
    corpus = [{"id": f"d{i:02d}", "title": f"{words[i % 10]} {words[(3 * i) % 10]}", "text": words[(7 * i) % 10]}
              for i in range(40)]  # fmt: skip
    queries = [f"{words[i % 10]} {words[(i * i) % 10]}" for i in range(11)]
    targets = [f"d{(5 * i) % 40:02d}" for i in range(11)]
    whole = lc.bm25_ranks(corpus, queries, targets)
    monkeypatch.setattr(lc, "QUERY_BLOCK", 3)
    assert lc.bm25_ranks(corpus, queries, targets).tolist() == whole.tolist()
    assert whole.max() > 1  # the targets are not all first: the ranks say something
