"""Model registry: lazy map, unknown names, model_args parsing, device/batch_size plumbing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pqb.harness import registry as R
from pqb.harness.errors import MissingDependencyError, ModelArgsError, RegistryError, UnknownModelError
from pqb.harness.models import MODEL_MAPPING
from pqb.harness.retrievers.base import Retriever

EXPECTED = {
    "bm25", "random", "dense", "splade", "bge-m3", "bge-m3-dense", "colbertv2", "bm25-pyserini",
    "llm-rerank", "cross-encoder", "hybrid",
}  # fmt: skip


def test_mapping_has_exactly_the_fixed_names():
    assert set(MODEL_MAPPING) == EXPECTED
    assert MODEL_MAPPING["bm25"] == "pqb.harness.retrievers.lexical.bm25:BM25Retriever"


def test_ls_models_imports_no_backend():
    code = textwrap.dedent(
        """
        import sys
        from pqb.harness.cli import main
        assert main(["ls", "models"]) == 0
        heavy = [m for m in ("torch", "transformers", "sentence_transformers", "bm25s", "pqb.harness.retrievers.lexical.bm25")
                 if m in sys.modules]
        assert not heavy, heavy
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "bm25-pyserini" in out.stdout and "pqb-benchmark[pyserini]" in out.stdout


def test_unknown_model_did_you_mean():
    with pytest.raises(UnknownModelError) as exc:
        R.resolve_model("bm52")
    msg = str(exc.value)
    assert "Did you mean 'bm25'" in msg and "Available:" in msg and "colbertv2" in msg
    assert isinstance(exc.value, KeyError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("k1=0.9,b=0.4,stemmer=english", {"k1": 0.9, "b": 0.4, "stemmer": "english"}),
        ("n=3,flag=True,x=none,path=/a=b", {"n": 3, "flag": True, "x": None, "path": "/a=b"}),
        ("", {}),
    ],
)
def test_parse_model_args(text, expected):
    assert R.parse_model_args(text) == expected


def test_parse_model_args_malformed():
    with pytest.raises(ModelArgsError, match="not key=value"):
        R.parse_model_args("k1=0.9,oops")


def test_create_retriever_passes_args_and_sets_unaccepted_flags():
    r = R.create_retriever("bm25", "k1=0.9,b=0.4", device="cuda", batch_size=8)
    assert (r.k1, r.b) == (0.9, 0.4)
    assert r.device == "cuda" and r.batch_size == 8  # BM25 does not take them: set as attributes
    with pytest.raises(ModelArgsError, match="nope: not accepted by model 'bm25'; accepted: b, chunk_size"):
        R.create_retriever("bm25", "nope=1")  # refused before construction, naming what is accepted


def test_decorator_registration_and_conflict():
    reg = R.Registry("model")

    @reg.register("toy", "toy-alias")
    class Toy(Retriever):
        def __init__(self, device: str = "cpu") -> None:
            super().__init__()
            self.device = device

    assert reg.get("toy-alias") is Toy
    reg.register("toy")(Toy)  # same class again: fine
    with pytest.raises(RegistryError, match="already registered"):

        @reg.register("toy")
        class Other(Retriever):
            pass


def test_missing_optional_dependency_gives_install_hint(tmp_path, monkeypatch):
    (tmp_path / "pqb_fake_backend.py").write_text("import torch_that_is_not_installed\nclass X: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = R.Registry("model", {"dense": "pqb_fake_backend:X"})
    with pytest.raises(MissingDependencyError) as exc:
        reg.get("dense")
    assert 'pip install "pqb-benchmark[neural]"' in str(exc.value) and isinstance(exc.value, ImportError)


def test_preset_resolves_to_base_with_overrides(monkeypatch):
    from pqb.harness import model_presets

    monkeypatch.setitem(model_presets.PRESETS, "bm25-tuned", {"model": "bm25", "args": {"k1": 0.9, "b": 0.4}})
    base, _cls, kwargs = R.resolve_model("bm25-tuned", {"b": 0.5})
    assert base == "bm25" and kwargs == {"k1": 0.9, "b": 0.5}
    assert "bm25-tuned" in R.all_model_names()
