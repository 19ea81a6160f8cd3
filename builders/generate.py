"""Candidate query generation: many attribute-constrained queries per target product, behind one interface.

PQB personalises *by selection*, not by prompting (reference spec §6): a pool of candidate queries is
generated from the product's 5 core attributes with no user information, and each user later gets the
candidate that lies in their syntactic region (``builders.pairing``). So the pool must vary in
*structure* while keeping the same 5 core terms, each exactly once. Three back-ends share
:class:`CandidateGenerator`:

* ``realizer`` (offline default, no model): a grammar-based surface realizer with ~25 syntactic frames
  (declarative, request, questions, relative clauses, fronted PPs, coordination, ellipsis, imperative,
  cleft, conditional, two-sentence) and seeded choices of attribute order, determiners, adjective
  placement and casing. Every frame places each core term once by construction.
* ``llm``: a ``transformers`` causal LM (Hub id or local path), prompted as in the authors' code with the
  *same* 5 attributes the filter checks (their code prompted with one 5 and filtered with another, §8.7).
* ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint (``base_url`` + ``model``).

:func:`run_generate` is the ``generate`` stage: candidates for every target product, the validity
filters of :mod:`builders.filters`, and ``candidates.parquet`` in the work dir.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from builders.filters import FilterConfig, filter_candidates
from builders.workdir import WorkDir, read_parquet, write_parquet
from pqb_dataset.progress import bar

CANDIDATES_FILE = "candidates.parquet"
CANDIDATES_SCHEMA = pa.schema(
    [
        ("asin", pa.string()),
        ("cand_idx", pa.int32()),
        ("text", pa.string()),
        ("frame", pa.string()),
        ("backend", pa.string()),
    ]
)


@dataclass(frozen=True)
class Candidate:
    """One generated query. ``frame`` names the realizer frame (``llm``/``openai`` for model output)."""

    text: str
    frame: str
    backend: str


@dataclass(frozen=True)
class ProductSpec:
    """What generation sees of a product: its id, title and the 5 core attributes (name, value)."""

    asin: str
    title: str
    core: tuple[tuple[str, str], ...]

    @property
    def core_terms(self) -> list[str]:
        return [v for _, v in self.core]

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> ProductSpec:
        """Pair each core term with the name of the attribute it came from (``""`` when unknown)."""
        names = {}
        for a in rec.get("attributes") or []:
            names.setdefault(str(a["value"]).strip().lower(), str(a["name"]))
        core = tuple((names.get(t.strip().lower(), ""), t) for t in rec.get("core_terms") or [])
        return cls(asin=str(rec["parent_asin"]), title=str(rec.get("title") or ""), core=core)


@runtime_checkable
class CandidateGenerator(Protocol):
    """``generate(product, n, seed)`` returns up to ``n`` candidates; same inputs and seed, same output."""

    name: str

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]: ...


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (e.g. global seed, asin, user): stable across runs and platforms."""
    h = hashlib.sha256(json.dumps([str(p) for p in parts]).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") >> 1


# --------------------------------------------------------------------------------------------------
# The grammar realizer
# --------------------------------------------------------------------------------------------------

_ROLE_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("brand", ("brand", "manufacturer", "store", "publisher", "author", "label")),
    ("color", ("color", "colour")),
    ("platform", ("platform", "compatible", "operating system", "console", "system")),
    ("material", ("material", "fabric")),
    ("rating", ("rated", "esrb", "rating")),
    ("language", ("language",)),
    ("age", ("age",)),
    ("size", ("size",)),
    ("connect", ("connectivity", "connector", "interface")),
    ("kind", ("type", "style", "form", "edition", "format", "genre", "category", "model name")),
)


def attribute_role(name: str) -> str:
    """Coarse grammatical role of an attribute from its name; ``feature`` when nothing matches."""
    low = name.lower()
    for role, keys in _ROLE_KEYS:
        if any(k in low for k in keys):
            return role
    return "feature"


# Per role: postnominal phrases (after the head noun) and verb phrases (3rd person, after "that"/"it").
_POST: dict[str, tuple[str, ...]] = {
    "brand": ("by {v}", "from {v}", "made by {v}"),
    "color": ("in {v}", "in the color {v}"),
    "platform": ("for {v}", "compatible with {v}"),
    "material": ("made of {v}", "in {v}"),
    "rating": ("rated {v}",),
    "language": ("in {v}",),
    "age": ("for {v}", "suitable for {v}"),
    "size": ("in size {v}", "in the {v} size"),
    "connect": ("with {v}", "with {v} connectivity"),
    "kind": ("of the {v} type", "in the {v} style"),
    "feature": ("with {v}", "featuring {v}", "offering {v}"),
}
_VP: dict[str, tuple[str, ...]] = {
    "brand": ("is made by {v}", "comes from {v}", "is from {v}"),
    "color": ("comes in {v}", "is {v}"),
    "platform": ("works with {v}", "is for {v}", "runs on {v}"),
    "material": ("is made of {v}",),
    "rating": ("is rated {v}",),
    "language": ("is in {v}",),
    "age": ("is for {v}", "suits {v}"),
    "size": ("comes in size {v}", "is size {v}"),
    "connect": ("has {v}", "supports {v}"),
    "kind": ("is a {v}", "is the {v} kind"),
    "feature": ("has {v}", "offers {v}", "includes {v}"),
}
_BASE_FORM = {"is": "be", "comes": "come", "works": "work", "runs": "run", "has": "have"} | {
    "supports": "support", "offers": "offer", "includes": "include", "suits": "suit",
}  # fmt: skip
_PRE_ROLES = frozenset({"brand", "color", "kind", "material", "connect"})
_HEADS = ("product", "item")
_FRONTABLE = frozenset({"brand", "color", "platform", "language", "feature", "connect", "age"})


@dataclass(frozen=True)
class _Part:
    role: str
    value: str


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _join(items: Sequence[str], conj: str = "and", oxford: bool = False) -> str:
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    comma = "," if oxford else ""
    return ", ".join(items[:-1]) + f"{comma} {conj} {items[-1]}"


class _Realize:
    """Seeded phrase builders shared by the frames (one instance per candidate)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.oxford = rng.random() < 0.5

    def post(self, p: _Part) -> str:
        return self.rng.choice(_POST[p.role]).format(v=p.value)

    def vp(self, p: _Part, base: bool = False) -> str:
        """A verb phrase, 3rd person ("comes in Black") or bare after a modal ("come in Black")."""
        verb, _, rest = self.rng.choice(_VP[p.role]).format(v=p.value).partition(" ")
        return f"{_BASE_FORM.get(verb, verb) if base else verb} {rest}"

    def head(self) -> str:
        return self.rng.choice(_HEADS)

    def np(self, parts: Sequence[_Part], det: str | None = None, max_pre: int | None = None) -> str:
        """``a Black Sony item for PS4 with Wireless and rated Everyone``: pre- and postnominal parts."""
        budget = self.rng.choice((0, 1, 2)) if max_pre is None else max_pre
        pre = [p for p in parts if p.role in _PRE_ROLES and len(p.value.split()) <= 2][:budget]
        post = [self.post(p) for p in parts if p not in pre]
        words = [p.value for p in pre] + [self.head()]
        body = " ".join(words)
        if det is None:
            det = self.rng.choice(("a", "a", "the"))
        if det == "a":
            det = _article(body)
        phrase = f"{det} {body}".strip()
        if post:
            phrase += " " + _join(post, oxford=self.oxford)
        return phrase

    def vps(self, parts: Sequence[_Part], base: bool = False) -> str:
        return _join([self.vp(p, base) for p in parts], oxford=self.oxford)


Frame = Callable[[_Realize, list[_Part]], str]


def _fronted_pp(r: _Realize, ps: list[_Part]) -> str:
    front = next((p for p in ps if p.role in _FRONTABLE), None)
    if front is None:  # nothing reads well fronted: front a "with" phrase
        front = _Part("feature", ps[0].value)
        ps = [front, *ps[1:]]
    rest = [p for p in ps if p is not front]
    pp = f"from {front.value}" if front.role == "brand" else r.post(front)
    return f"{pp[0].upper()}{pp[1:]}, I need {r.np(rest)}."


FRAMES: dict[str, Frame] = {
    "declarative_want": lambda r, ps: f"I want {r.np(ps)}.",
    "declarative_looking": lambda r, ps: f"I'm looking for {r.np(ps)}.",
    "declarative_would_like": lambda r, ps: f"I would like to buy {r.np(ps)}.",
    "request_can_you": lambda r, ps: f"Can you find me {r.np(ps)}?",
    "request_help": lambda r, ps: f"Could you help me find {r.np(ps)}?",
    "question_where": lambda r, ps: f"Where can I buy {r.np(ps)}?",
    "question_is_there": lambda r, ps: f"Is there {r.np(ps, det='a')}?",
    "question_do_you_sell": lambda r, ps: f"Do you sell {r.np(ps)}?",
    "question_which": lambda r, ps: f"Which {r.head()} {r.vps(ps)}?",
    "relative_that": lambda r, ps: f"I need {r.np(ps[:1], det='a')} that {r.vps(ps[1:])}.",
    "relative_which_is": lambda r, ps: (
        f"I'm after {r.np(ps[:2], det='a', max_pre=1)}, which {r.vps(ps[2:])}."
    ),
    "fronted_pp": _fronted_pp,
    "coordination_clauses": lambda r, ps: (
        f"I want {r.np(ps[:2])} and it should be {r.post(ps[2])}, " + f"{r.post(ps[3])} and {r.post(ps[4])}."
    ),
    "coordination_vp": lambda r, ps: (
        f"I need something that {r.vp(ps[0])} and {r.vp(ps[1])}, "
        + f"and I also want it {r.post(ps[2])}, {r.post(ps[3])} and {r.post(ps[4])}."
    ),
    "ellipsis_list": lambda r, ps: ", ".join(p.value for p in ps),
    "ellipsis_head": lambda r, ps: f"{r.head()}: " + ", ".join(p.value for p in ps),
    "ellipsis_np": lambda r, ps: r.np(ps, det=""),
    "imperative_show": lambda r, ps: f"Show me {r.np(ps)}.",
    "imperative_find": lambda r, ps: f"Find {r.np(ps)}.",
    "imperative_recommend": lambda r, ps: f"Please recommend {r.np(ps)}.",
    "subjectless_need": lambda r, ps: f"Need {r.np(ps)}.",
    "subjectless_looking": lambda r, ps: f"Looking for {r.np(ps)}",
    "cleft_what": lambda r, ps: f"What I need is {r.np(ps, det='a')}.",
    "preferably": lambda r, ps: f"I'd like {r.np(ps[:3])}, preferably {r.post(ps[3])} and {r.post(ps[4])}.",
    "conditional": lambda r, ps: f"If you have {r.np(ps, det='a')}, please show it to me.",
    "two_sentences": lambda r, ps: f"I want {r.np(ps[:2], det='a')}. It should {r.vps(ps[2:], base=True)}.",
    "any_question": lambda r, ps: f"Any {r.np(ps, det='')}?",
}


class RealizerGenerator:
    """Offline grammar-based realizer: frames x attribute orders x determiners x placement x casing.

    Candidates are produced round-robin over the frames (shuffled by the seed), so even a small ``n``
    covers many different parse structures; duplicates are skipped.
    """

    name = "realizer"

    def __init__(self, frames: Sequence[str] | None = None, lowercase_prob: float = 0.15) -> None:
        unknown = sorted(set(frames or ()) - set(FRAMES))
        if unknown:
            raise ValueError(f"Unknown realizer frame(s) {unknown}. Known: {', '.join(sorted(FRAMES))}.")
        self.frames = list(frames or FRAMES)
        self.lowercase_prob = lowercase_prob

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]:
        if len(product.core) != 5:
            return []
        rng = random.Random(derive_seed(seed, product.asin, "realizer"))
        parts = [_Part(attribute_role(name), value) for name, value in product.core]
        frames = self.frames[:]
        rng.shuffle(frames)
        out: list[Candidate] = []
        seen: set[str] = set()
        attempts = 0
        while len(out) < n and attempts < 20 * n:
            frame = frames[attempts % len(frames)]
            attempts += 1
            order = parts[:]
            rng.shuffle(order)
            text = FRAMES[frame](_Realize(rng), order)
            text = " ".join(text.split())
            if rng.random() < self.lowercase_prob:
                text = text.lower()
            if text not in seen:
                seen.add(text)
                out.append(Candidate(text=text, frame=frame, backend=self.name))
        return out


# --------------------------------------------------------------------------------------------------
# Model back-ends
# --------------------------------------------------------------------------------------------------


def build_prompt(product: ProductSpec) -> str:
    """The authors' generation prompt (reference spec §6), listing exactly the 5 core attributes."""
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
    ``OSError`` that names the path tried. Sampling settings follow the authors' code
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
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError('The llm generator needs transformers: pip install "pqb[llm]"') from exc
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForCausalLM.from_pretrained(model).to(device).eval()
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

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]:
        torch = self._torch
        prompt = build_prompt(product)
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
    *,
    backend: str = "realizer",
    n: int = 50,
    seed: int = 0,
    filter_config: FilterConfig | None = None,
    generator_kwargs: Mapping[str, Any] | None = None,
    embed: Callable[[list[str]], Any] | None = None,
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The ``generate`` stage: ``products.parquet`` -> ``candidates.parquet`` (+ per-gate counts)."""
    filter_config = filter_config or FilterConfig()
    config = {
        "backend": backend,
        "n": n,
        "seed": seed,
        "filters": filter_config.as_dict(),
        "generator": dict(generator_kwargs or {}),
    }
    stage = workdir.stage("generate", [workdir.file("products.parquet")], config, [CANDIDATES_FILE])
    if stage.is_fresh() and not force:
        return dict(workdir.manifest["stages"]["generate"]["stats"], skipped=True)
    generator = get_generator(backend, **dict(generator_kwargs or {}))
    if embed is None and filter_config.semantic:
        from builders.filters import minilm_embedder

        embed = minilm_embedder(filter_config.semantic_model)
    specs = target_products(read_parquet(workdir.file("products.parquet")))
    table, gates = generate_candidates(
        specs, generator, n=n, seed=seed, filter_config=filter_config, embed=embed, progress=progress
    )
    write_parquet(table, workdir.file(CANDIDATES_FILE))
    stats = {"targets": len(specs), "candidates_kept": table.num_rows, "gates": dict(sorted(gates.items()))}
    stage.done(stats)
    return stats


def load_candidates(path: Path) -> dict[str, list[Candidate]]:
    """``candidates.parquet`` grouped by asin, in ``cand_idx`` order."""
    out: dict[str, list[Candidate]] = {}
    for rec in read_parquet(path).to_pylist():
        out.setdefault(rec["asin"], []).append(Candidate(rec["text"], rec["frame"], rec["backend"]))
    return out
