"""Candidate generation: filters, prompts and the model back-ends (the realizer: test_builders_realizer)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from pqb.builders.config import FilterConfig
from pqb.builders.queries.filters import filter_candidates
from pqb.builders.queries.generate import (
    Candidate,
    OpenAIGenerator,
    ProductSpec,
    attribute_role,
    build_prompt,
    first_line,
    get_generator,
)
from pqb.builders.seeds import derive_seed

# FIXTURES ------------------------------------------------------------------------------------------

SPEC = ProductSpec(
    asin="B000TEST01",
    title="Wireless Controller",
    core=(
        ("Brand", "PowerA"),
        ("Color", "Midnight Blue"),
        ("Hardware Platform", "Nintendo Switch"),
        ("Feature 1", "Wireless Bluetooth"),
        ("Rated", "Everyone"),
    ),
)

# TESTS ---------------------------------------------------------------------------------------------


def test_filter_gates_are_counted() -> None:
    cands = [
        Candidate("", "x", "t"),
        Candidate("PowerA Midnight Blue Nintendo Switch Wireless Bluetooth", "x", "t"),  # no 'Everyone'
        Candidate("PowerA PowerA Midnight Blue Nintendo Switch Wireless Bluetooth Everyone", "x", "t"),  # twice
        Candidate("PowerA, Midnight Blue, Nintendo Switch, Wireless Bluetooth, Everyone", "x", "t"),
        Candidate("powera,  midnight blue, nintendo switch, wireless bluetooth, everyone.", "x", "t"),  # dup
        Candidate("I want a PowerA pad in Midnight Blue for Nintendo Switch with Wireless Bluetooth rated "
                  "Everyone and " + "very " * 40, "x", "t"),  # too long
    ]  # fmt: skip
    kept, counts = filter_candidates(cands, SPEC, FilterConfig(max_words=30))
    assert [c.text for c in kept] == [cands[3].text]
    assert counts == {
        "generated": 6, "kept": 1, "rejected_empty": 1, "rejected_lexical": 2, "rejected_duplicate": 1,
        "rejected_length": 1,
    }  # fmt: skip


def test_semantic_gate_uses_injected_embedder() -> None:
    texts = {"PowerA, Midnight Blue, Nintendo Switch, Wireless Bluetooth, Everyone": [1.0, 0.0]}
    good = Candidate("PowerA, Midnight Blue, Nintendo Switch, Wireless Bluetooth, Everyone", "x", "t")
    off = Candidate("Everyone, Wireless Bluetooth, Nintendo Switch, Midnight Blue, PowerA", "x", "t")

    def embed(batch: list[str]) -> list[list[float]]:
        # description -> (1, 0); the 'good' text is aligned with it, the other orthogonal
        return [[1.0, 0.0] if i == 0 else texts.get(t, [0.0, 1.0]) for i, t in enumerate(batch)]

    kept, counts = filter_candidates(
        [good, off], SPEC, FilterConfig(semantic=True, semantic_threshold=0.5), embed=embed
    )
    assert kept == [good] and counts["rejected_semantic"] == 1


def test_attribute_roles() -> None:
    """The key-only fallback (a products file without ``core_kinds``): kinds from the key's words."""
    assert attribute_role("Brand") == "brand"
    assert attribute_role("Hardware Platform") == "platform"
    assert attribute_role("Operating System") == "platform"  # contains "rating", is not a rating
    assert attribute_role("ESRB Rating") == "age_rating" and attribute_role("Rated") == "age_rating"
    assert attribute_role("Age Range (Description)") == "audience"
    assert (
        attribute_role("Connector Type") == "connectivity" and attribute_role("Controller Type") == "product"
    )
    assert attribute_role("Feature 3") == "noun_feature"


def test_from_record_pairs_core_terms_with_attribute_names() -> None:
    rec = {
        "parent_asin": "A1", "title": "t", "core_terms": ["Sony", "Black"],
        "attributes": [{"name": "Brand", "value": "Sony"}, {"name": "Color", "value": "black"}],
    }  # fmt: skip
    assert ProductSpec.from_record(rec).core == (("Brand", "Sony"), ("Color", "Black"))
    assert ProductSpec.from_record(rec).kinds == ()  # a products file without typed core terms
    typed = ProductSpec.from_record({**rec, "core_kinds": ["brand", "color"]})
    assert typed.kinds == ("brand", "color")


def test_prompt_lists_exactly_the_filter_attributes() -> None:
    prompt = build_prompt(SPEC)
    for name, value in SPEC.core:
        assert f"- {name}: {value}" in prompt
    assert prompt.endswith("Query:")
    assert first_line('\n  "Find PowerA pads"\nsecond') == "Find PowerA pads"


def test_openai_generator_posts_chat_completions(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class FakeResponse(io.BytesIO):
        def __enter__(self) -> FakeResponse:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def fake_urlopen(req: Any, timeout: float) -> FakeResponse:
        payload = json.loads(req.data)
        calls.append({"url": req.full_url, "payload": payload, "auth": req.get_header("Authorization")})
        choices = [{"message": {"content": f"query {i}\nextra"}} for i in range(payload["n"])]
        return FakeResponse(json.dumps({"choices": choices}).encode())

    monkeypatch.setattr("urllib.request.urlopen", fake_urlopen)
    gen = get_generator("openai", model="m", base_url="http://x/v1/", api_key="k", batch_size=4)
    assert isinstance(gen, OpenAIGenerator)
    out = gen.generate(SPEC, n=6, seed=7)
    assert [c.text for c in out] == ["query 0", "query 1", "query 2", "query 3", "query 0", "query 1"]
    assert [c["payload"]["n"] for c in calls] == [4, 2]
    assert calls[0]["url"] == "http://x/v1/chat/completions" and calls[0]["auth"] == "Bearer k"
    assert "- Brand: PowerA" in calls[0]["payload"]["messages"][0]["content"]
    assert calls[0]["payload"]["seed"] == derive_seed(7, SPEC.asin, "openai", 0) % (2**31)


def test_unknown_generator_raises() -> None:
    with pytest.raises(ValueError, match="Available: realizer"):
        get_generator("gpt9")


@pytest.mark.neural
def test_transformers_generator_with_a_tiny_random_model(tmp_path: Any) -> None:
    """Plumbing only: a randomly initialised 2-layer GPT-2 with a word-level tokenizer, built here."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = dict.fromkeys(["[PAD]", "[UNK]", "<eos>", *build_prompt(SPEC).split(), "a", "b"])
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", eos_token="<eos>", unk_token="[UNK]"
    )
    fast.save_pretrained(tmp_path)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_layer=2,
        n_head=2,
        n_embd=16,
        n_positions=256,
        bos_token_id=2,
        eos_token_id=2,
        pad_token_id=0,
    )
    GPT2LMHeadModel(config).save_pretrained(tmp_path)
    gen = get_generator("llm", model=str(tmp_path), batch_size=3, max_new_tokens=5)
    a = gen.generate(SPEC, n=5, seed=1)
    assert a == gen.generate(SPEC, n=5, seed=1)
    assert all(c.backend == "llm" for c in a)


def test_missing_llm_path_names_the_fix(tmp_path: Any) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(OSError, match="local directory"):
        get_generator("llm", model=str(tmp_path / "absent"))
