"""A corrector checkpoint is identified by its content, not its path: a GECToR or seq2seq checkpoint
replaced at the same path once kept serving the old one's cached corrections (the path string was the
correction-cache key and the fingerprint's only trace of the model), even with ``--force``; and the
errors stage's freshness shortcut trusted the id it had recorded. All offline, on tiny checkpoints the
tests build themselves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pqb.builders.writing_errors.detection import CachedCorrector, get_corrector


def _tiny_gector(out: Path, tag: str) -> Path:
    """A 2-layer BERT token classifier whose bias forces one GECToR tag (``tag`` or ``$KEEP``) on every
    word, saved over whatever ``out`` held (the replacement in place the bug needs)."""
    torch = pytest.importorskip("torch")
    from tiny_models import _bert_config, _bert_tokenizer
    from transformers import BertForTokenClassification

    tags = ["$KEEP", tag]
    tok = _bert_tokenizer(out)
    cfg = _bert_config(len(tok))
    cfg.num_labels, cfg.id2label, cfg.label2id = 2, dict(enumerate(tags)), {t: i for i, t in enumerate(tags)}
    torch.manual_seed(0)
    model = BertForTokenClassification(cfg)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([10.0, 0.0] if tag == "$KEEP" else [0.0, 10.0]))
    model.save_pretrained(out)
    return out


@pytest.mark.neural
def test_a_gector_checkpoint_replaced_in_place_is_not_served_from_the_cache(tmp_path: Path) -> None:
    ckpt, cache = tmp_path / "model", tmp_path / "gec_cache.sqlite"
    name = f"gector:{_tiny_gector(ckpt, '$KEEP')}"
    first = CachedCorrector(get_corrector(name, cache=False, iterations=1), cache)
    assert first.correct(["the red mouse ."]) == ["the red mouse."]
    _tiny_gector(ckpt, "$TRANSFORM_CASE_UPPER")  # same path, other weights
    second = CachedCorrector(get_corrector(name, cache=False, iterations=1), cache)
    assert second.correct(["the red mouse ."]) == ["THE RED MOUSE."]  # not the cached "the red mouse."
    from pqb.builders.writing_errors.detection import corrector_id_prefix

    assert second.backend_id != first.backend_id
    assert first.backend_id.startswith(corrector_id_prefix(name) or "?") is False  # the old weights' id
    assert second.backend_id.startswith(corrector_id_prefix(name) or "?")


@pytest.mark.neural
def test_a_seq2seq_id_names_its_checkpoint_content(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tiny_models import tiny_seq2seq

    from pqb.builders.writing_errors.detection import corrector_id_prefix

    ckpt = tiny_seq2seq(tmp_path / "m", favour="mouse")
    name = f"seq2seq:{ckpt}"
    before = get_corrector(name, cache=False).backend_id
    assert before.startswith(corrector_id_prefix(name) or "?")
    tiny_seq2seq(ckpt, favour="red")
    after = get_corrector(name, cache=False).backend_id
    assert after != before and after.startswith(corrector_id_prefix(name) or "?")


def test_checkpoint_identity_is_the_folders_content(tmp_path: Path) -> None:
    from pqb.builders.workdir import checkpoint_identity
    from pqb.builders.writing_errors.detection import corrector_id_prefix

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"id2label": {"0": "$KEEP"}}')
    (ckpt / "model.safetensors").write_bytes(b"weights v1")
    first = checkpoint_identity(str(ckpt))
    assert first.startswith("sha256=")
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    for p in ckpt.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    assert checkpoint_identity(str(copy)) == first  # the content, not the path
    (ckpt / "model.safetensors").write_bytes(b"weights v2")
    os.utime(ckpt / "model.safetensors", ns=(1, 1))  # even an mtime moved back: size+ctime+inode change
    assert checkpoint_identity(str(ckpt)) != first
    assert checkpoint_identity("some-org/not-in-any-cache") == "rev=unresolved"
    assert corrector_id_prefix("symspell") == "symspell:"


def test_the_errors_stage_shortcut_recomputes_the_checkpoint_identity(tmp_path: Path) -> None:
    """``_recorded_corrector_fresh`` trusted the recorded id when it started with ``gector:<path>:``; it
    must say "not fresh" once the checkpoint at that path has other content (no model is loaded)."""
    from pqb.builders.workdir import EDITS, PROFILES, SENTENCES, WorkDir, hash_inputs
    from pqb.builders.writing_errors.detection import corrector_id_prefix
    from pqb.builders.writing_errors.profiles import _recorded_corrector_fresh

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    (ckpt / "model.safetensors").write_bytes(b"weights v1")
    backend = f"gector:{ckpt}"
    wd = WorkDir(tmp_path / "work", "toy")
    for name in (SENTENCES, EDITS, PROFILES):
        wd.file(name).write_text(name)
    inputs = [wd.path / SENTENCES]

    def config(backend_id: str) -> dict:
        return {"backend": backend_id, "version": 0}

    recorded = f"{corrector_id_prefix(backend)}3:0.0"  # what GectorCorrector.backend_id is
    wd.stage("errors", inputs, config(recorded), [EDITS, PROFILES]).done({"edits": 2})
    assert _recorded_corrector_fresh(wd, inputs, config, backend, hash_inputs(inputs)) == {"edits": 2, "skipped": True}
    (ckpt / "model.safetensors").write_bytes(b"weights v2, another model")
    assert _recorded_corrector_fresh(wd, inputs, config, backend, hash_inputs(inputs)) is None
    old_style = f"{backend}:3:0.0"  # an id recorded before the content digest: never trusted
    wd.stage("errors", inputs, config(old_style), [EDITS, PROFILES]).done({"edits": 2})
    assert _recorded_corrector_fresh(wd, inputs, config, backend, hash_inputs(inputs)) is None
