"""Which attribute values describe the product, and what kind of thing each one is (docs/design.md §5).

A core term is something a shopper would name. Before issue 43 any cleaned value the document
contained could be one, and 37% of the queries built on them put a value where its kind does not fit
("offering Scratch Resistant", "featuring Introduces", "with With in-game success"). A longer stop list
would only move the problem; here each value is judged on three kinds of evidence, all read from the
domain's own data:

* **its own parse** (spaCy, the value alone in "it is ___."): a noun phrase, an adjective phrase or a
  name is a descriptor; a value that starts with a present-tense verb ("Play as Alien", "Improves
  accuracy") is an **instruction verb**; one that starts with a function word and goes on past one
  word ("With in-game success", "For the Xbox", "A New Hero") or ends in one ("Hints too", "Sold
  Out") is a **fragment**; a negation, a symbol or a lone closed-class pronoun ("not null", "language _
  tag", "All") is a **placeholder**;
* **attestation**: the product's own title, description or features say it again (outside the line
  it was taken from), or other products' own text does, or real users write it in the domain's
  reviews, each at least once per :data:`ATTESTATION_PER` documents (so the rule means the same on the
  slice and on a whole category). A value no seller repeats and no reviewer writes ("Rating Pending",
  "Corded Electric", "Male-to-Male") is **unattested**. The brand is exempt: naming the maker is
  what shoppers do, and a small slice's reviews rarely name it;
* **its key**: a key carries product descriptors when at least half of its values across the domain
  pass the two rules above (:data:`MIN_DESCRIPTOR_SHARE`). On the Video_Games slice, unkeyed feature
  lines (``Feature i``: the first comma segment of a marketing sentence) pass 126 of 275 times and are
  not a descriptor key ("Introduces", "Short vowels", "Classic characters" go with them); 72 of the
  89 keys are.

The same parses type each value (:func:`kind_of`, :mod:`pqb.builders.kinds`) from its key and its
phrase (adjective or noun, read in "the ___ one."), so the realizer can phrase each kind in the frames
that fit it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pqb.builders.kinds import key_kind
from pqb.dataset.schema import count_term

ATTESTATION_PER = 100_000
"""A phrase is attested in a body of text when at least one in ``ATTESTATION_PER`` of its documents
(rounded up) contain it (and at least 1 review, or 2 products: the product's own text is the echo):
on the slice that is any review of its 1,345 and any other product of its 1,488; on the 4.6M reviews
of a whole category it is 46, so a placeholder a few writers quote out of millions does not pass."""
MIN_DESCRIPTOR_SHARE = 0.5
"""A key carries product descriptors when at least this share of its values in the domain pass the
value rules (parse and attestation): "more often than not"."""
REJECTIONS: tuple[str, ...] = (
    "placeholder",
    "instruction_verb",
    "fragment",
    "unattested",
    "not_descriptor_key",
)
"""Why a value is not a core term, in the order they are judged (the first that applies is counted)."""

_JOINERS = frozenset("-&+/'.")
_FUNCTION_POS = frozenset({"ADP", "SCONJ", "CCONJ", "DET", "PRON", "PART", "AUX"})
_PRESENT_VERB = frozenset({"VB", "VBZ", "VBP"})
_ADJ_TAGS = frozenset({"JJ", "JJR", "JJS", "VBN", "VBD"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_CARRIER = "it is "
_NP_CARRIER = ("the ", " one.")


class Candidate(NamedTuple):
    """One attribute value a product offers: where it came from, its canonical key, and whether the
    product's own title/description/features repeat it (``echo``)."""

    name: str
    key: str
    value: str
    echo: bool


@dataclass(frozen=True)
class Reading:
    """What the value's own parse says: ``form`` (``ok`` or a rejection kind) and ``phrase``
    (``adjective`` when its head reads as an adjective or participle, else ``noun``)."""

    form: str
    phrase: str
    tags: tuple[str, ...] = ()


def parser_form(value: str) -> str:
    """The value as the parser sees it: lower-cased except acronyms and inner capitals ("USB",
    "PlayStation"); title case makes spaCy read every word as a proper noun."""
    out = []
    for w in value.split():
        letters = [c for c in w if c.isalpha()]
        keep = len(letters) >= 2 and (all(c.isupper() for c in letters) or any(c.isupper() for c in w[1:]))
        out.append(w if keep else w.lower())
    return " ".join(out)


def carrier_texts(value: str) -> tuple[str, str]:
    """The two sentences the value is parsed in: "it is ___." (its form: does it start with a verb, a
    function word?) and "the ___ one." (adjective or noun: on 60 slice values labelled by the
    implementer, an LLM agent, the premodifier slot tells them apart in 54, the copula in 45, because a
    bare noun after "is" reads as an adjective: "it is joystick")."""
    v = parser_form(value)
    return f"{_CARRIER}{v}.", f"{_NP_CARRIER[0]}{v}{_NP_CARRIER[1]}"


def _span(doc: Any, start: int, value: str) -> list[Any]:
    end = start + len(parser_form(value))
    return [t for t in doc if start <= t.idx < end]


def _phrase(doc: Any, value: str) -> str:
    toks = _span(doc, len(_NP_CARRIER[0]), value)
    if not toks:
        return "noun"
    inside = {t.i for t in toks}
    heads = [t for t in toks if t.head.i not in inside or t.head.i == t.i]
    head = heads[-1] if heads else toks[-1]
    return "adjective" if head.tag_ in _ADJ_TAGS else "noun"


def read_doc(doc: Any, value: str, kind_hint: str = "", np_doc: Any = None) -> Reading:
    """:class:`Reading` of the value from its parses in :func:`carrier_texts` (``doc``: "it is ___.",
    ``np_doc``: "the ___ one."; without it the phrase type is read from ``doc``)."""
    toks = _span(doc, len(_CARRIER), value)
    tags = tuple(t.tag_ for t in toks)
    words = [t for t in toks if any(c.isalnum() for c in t.text)]
    if not words or any(not any(c.isalnum() for c in t.text) and not set(t.text) <= _JOINERS for t in toks):
        return Reading("placeholder", "noun", tags)
    phrase = _phrase(np_doc, value) if np_doc is not None else "noun"
    if phrase == "adjective" and words[-1].tag_ in _NOUN_TAGS:  # both parses must agree ("flip-to-mute mic")
        phrase = "noun"
    first, last = words[0], words[-1]
    if kind_hint == "brand":  # a name: only what no name can be
        if first.pos_ == "ADP" and len(words) >= 2:
            return Reading("fragment", "noun", tags)
        return Reading("ok", "noun", tags)
    if first.dep_ == "neg" or (first.lower_ == "no" and first.tag_ == "DT"):
        return Reading("placeholder", phrase, tags)
    if len(words) == 1 and first.is_stop and first.pos_ in ("PRON", "DET") and kind_hint != "age_rating":
        return Reading("placeholder", phrase, tags)  # "All", "Any": a closed-class word, not a property
    if first.tag_ in _PRESENT_VERB and (first.whitespace_ or len(words) == 1):  # not "flip-to-mute mic"
        return Reading("instruction_verb", phrase, tags)
    if len(words) >= 2 and first.pos_ in _FUNCTION_POS:
        second = words[1]
        if len(words) >= 3 or second.pos_ in ("DET", "PRON", "ADP", "ADV"):
            return Reading("fragment", phrase, tags)
    if len(words) >= 2 and (last.pos_ in _FUNCTION_POS | {"ADV"} or last.tag_ == "RP"):
        return Reading("fragment", phrase, tags)
    return Reading("ok", phrase, tags)


def read_values(values: Iterable[tuple[str, str]], nlp: Any) -> dict[tuple[str, str], Reading]:
    """:class:`Reading` of every distinct (value, key kind) pair, parsed in one batch."""
    items = sorted(set(values))
    texts = [t for v, _ in items for t in carrier_texts(v)]
    docs = list(nlp.pipe(texts, batch_size=256))
    return {(v, k): read_doc(docs[2 * i], v, k, docs[2 * i + 1]) for i, (v, k) in enumerate(items)}


def kind_of(key: str, reading: Reading) -> str:
    """The value's kind from its key and its parse: a product kind, a connectivity value or a feature
    that reads as an adjective ("Over Ear", "Wired", "Scratch Resistant") is an adjectival feature;
    any other feature is nominal ("Noise Cancellation", "Kickstand")."""
    kind = key_kind(key)
    adjectival = reading.phrase == "adjective" or reading.tags[:1] == ("IN",)
    if kind in ("product", "connectivity", "feature") and adjectival:
        return "adj_feature"
    if kind == "feature":
        return "noun_feature"
    return kind


def attestation_threshold(n_documents: int, minimum: int = 1) -> int:
    """Documents a phrase must occur in to count as attested among ``n_documents``
    (:data:`ATTESTATION_PER`, at least ``minimum``); integer arithmetic, the same on every machine."""
    return max(minimum, -(-n_documents // ATTESTATION_PER))


class PhraseCounter:
    """Counts, per candidate value, the documents (reviews, or products' own text) that contain it,
    exactly as :func:`~pqb.dataset.schema.count_term` matches (whole words, any case), checking only the
    values whose first word the document has: linear in the text, whatever the number of values."""

    _TOKEN = re.compile(r"\w+")

    def __init__(self, values: Iterable[str]) -> None:
        self.by_first: dict[str, list[str]] = {}
        for v in sorted({" ".join(v.split()) for v in values if v.strip()}):
            first = self._TOKEN.findall(v.lower())
            if first:
                self.by_first.setdefault(first[0], []).append(v)
        self.df: Counter[str] = Counter()
        self.documents = 0

    def add(self, text: str) -> None:
        self.documents += 1
        if not text:
            return
        for tok in set(self._TOKEN.findall(text.lower())) & self.by_first.keys():
            for v in self.by_first[tok]:
                if count_term(text, v):
                    self.df[v.lower()] += 1

    def attested(self, value: str, minimum: int = 1) -> bool:
        return self.df[" ".join(value.split()).lower()] >= attestation_threshold(self.documents, minimum)


@dataclass
class DescriptorModel:
    """What the domain's data says about its attribute values: each value's reading, which reviews
    attest it, and which keys carry descriptors. :meth:`learn` builds it; :meth:`judge` applies it."""

    readings: dict[tuple[str, str], Reading]
    attested: frozenset[str]
    key_counts: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def learn(
        cls,
        products: Sequence[Sequence[Candidate]],
        reviews: PhraseCounter | None = None,
        catalogue: PhraseCounter | None = None,
        nlp: Any = None,
    ) -> DescriptorModel:
        """Read every distinct value, note which ones the domain's ``reviews`` or its ``catalogue`` (the
        products' own titles, descriptions and features) attest, then count per key how many of its
        values pass on their own."""
        pairs = {(c.value, key_kind(c.key)) for cands in products for c in cands}
        if nlp is None and pairs:  # a domain whose records offer no attribute never loads spaCy
            from pqb.builders.nlp import load_spacy

            nlp = load_spacy()
        readings = read_values(pairs, nlp) if pairs else {}
        attested = frozenset(
            " ".join(v.split()).lower()
            for v, _ in pairs
            if (reviews is not None and reviews.attested(v, 1))
            or (catalogue is not None and catalogue.attested(v, 2))
        )
        model = cls(readings, attested)
        counts: dict[str, list[int]] = {}
        for cands in products:
            for c in cands:
                entry = counts.setdefault(c.key, [0, 0])
                entry[1] += 1
                entry[0] += model.value_verdict(c) == "ok"
        model.key_counts = {k: (h, n) for k, (h, n) in sorted(counts.items())}
        return model

    def reading(self, c: Candidate) -> Reading:
        return self.readings[(c.value, key_kind(c.key))]

    def value_verdict(self, c: Candidate) -> str:
        """``ok`` or the first rejection kind of the value on its own (parse, then attestation)."""
        r = self.reading(c)
        if r.form != "ok":
            return r.form
        if (
            key_kind(c.key) != "brand"
            and not c.echo
            and " ".join(c.value.split()).lower() not in self.attested
        ):
            return "unattested"
        return "ok"

    def descriptor_key(self, key: str) -> bool:
        passing, n = self.key_counts.get(key, (0, 0))
        return n > 0 and passing >= MIN_DESCRIPTOR_SHARE * n

    def judge(self, c: Candidate) -> str:
        """``ok`` or why ``c`` is not a core term (:data:`REJECTIONS`)."""
        verdict = self.value_verdict(c)
        if verdict == "ok" and not self.descriptor_key(c.key):
            return "not_descriptor_key"
        return verdict

    def kind(self, c: Candidate) -> str:
        return kind_of(c.key, self.reading(c))

    def summary(self) -> dict[str, Any]:
        """The learned key rule, for the stage's stats: keys that do not carry descriptors (with their
        passing/total counts), most frequent first."""
        rejected = {k: list(v) for k, v in self.key_counts.items() if not self.descriptor_key(k)}
        top = sorted(rejected.items(), key=lambda kv: (-kv[1][1], kv[0]))[:20]
        return {
            "descriptor_keys": sum(self.descriptor_key(k) for k in self.key_counts),
            "keys": len(self.key_counts),
            "not_descriptor_keys": dict(top),
        }


def rejection_report(judged: Iterable[tuple[Candidate, str]], examples: int = 3) -> dict[str, Any]:
    """Counts (and the first ``examples`` distinct values) of each rejection kind over judged candidates."""
    counts: Counter[str] = Counter()
    seen: dict[str, list[str]] = {k: [] for k in REJECTIONS}
    total = 0
    for c, verdict in judged:
        total += 1
        if verdict == "ok":
            continue
        counts[verdict] += 1
        label = f"{c.name}: {c.value}"
        if len(seen[verdict]) < examples and label not in seen[verdict]:
            seen[verdict].append(label)
    return {
        "values": total,
        "rejected": sum(counts.values()),
        "by_kind": {k: counts[k] for k in REJECTIONS},
        "examples": {k: v for k, v in seen.items() if v},
    }
