"""A deterministic naturalness check of published queries: wrong-kind phrasings, stacked questions,
core terms that describe nothing, and the variety of openings (issue 43; the card's "Query
naturalness" section).

It judges the **output text**, never the realizer's own labels (roles, kinds), which would make it
circular: each query is parsed by spaCy as written (casing normalised so that title-case values do not
all read as proper nouns), and each core term is read where it stands:

* a **wrong-kind phrasing** is a core term in a slot built for another kind: an adjective, a colour, a
  rating, a design name or a fragment right after a noun slot ("offering Scratch Resistant", "has
  Wired", "offering Ocean", "with With in-game success"); an adjective or colour after "made of",
  "for" or "by"; anything but a rating after "rated"; a fragment anywhere. A term that premodifies a
  noun ("with a Space design") is not in the slot. What a term is comes from the query's own parse (the
  term's head tagged as an adjective or participle) and from the attribute's published name (colour,
  rating, brand, theme/style keys), read with a small table of this module's own;
* a **stacked question** is a query with two or more questions (a sentence ending in "?", or a final
  sentence that lost its "?" to a surface habit but opens like a question);
* a **core-term fault**: a term whose first word the query's parse tags as a present-tense verb
  (instruction verb), that starts or ends with a function word (fragment), or that is a symbol, a
  negation or a lone pronoun (placeholder), in any of its queries;
* **openings**: distinct first-two-word openings of a seeded sample of 200 queries.

The figures are counts over the rows, so the report is the same bytes wherever it runs (spaCy's
parse is deterministic for a given model version, which the card's provenance records).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pqb.dataset.schema import term_spans

NOUN_SLOTS = frozenset(
    {"with", "offering", "offers", "offer", "featuring", "features", "feature", "has", "have", "having",
     "includes", "include", "including"}
)  # fmt: skip
"""Words after which a noun phrase is expected ("with rumble", "offering fast charging")."""
_PLATFORM_WITH = frozenset({"compatible", "works", "work", "working"})
"""``with`` after these is a platform slot ("compatible with PC"), not a noun slot."""
_QUALITY_BLOCKED = {
    "made of": "material",
    "made from": "material",
    "for": "purpose",
    "by": "maker",
    "made by": "maker",
}
"""Slots where an adjective or a colour does not fit ("made of Black", "for Wireless", "by Backlit")."""
_NAME_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("color", ("color", "colour")),
    ("rating", ("rated", "esrb", "rating")),
    ("brand", ("brand", "manufacturer")),
    ("design", ("theme", "pattern", "style", "design")),
    ("platform", ("platform", "compatible", "operating system")),
    ("material", ("material",)),
)
"""What an attribute's published name says its value is (this module's own reading of the keys)."""
_QUESTION_OPENING = re.compile(
    r"^(do|does|did|is|are|was|were|can|could|would|will|should|any|anyone|what|what's|where|which|how|who)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.?!;])\s+|\s+-\s+")
_ADJ_TAGS = frozenset({"JJ", "JJR", "JJS", "VBN"})
_FUNCTION_POS = frozenset({"ADP", "SCONJ", "CCONJ", "DET", "PRON", "PART", "AUX"})
_CARRIERS = ("the {} ones are here.", "it seems {}.")
"""Where a term is read on its own, adjective or noun: an adjective when its head is one in both. In a
query the slot coerces the tag ("featuring wireless" reads as a noun), so the slot cannot tell what
the value is. On 60 slice values labelled by the implementer (an LLM agent) the pair reads 53 right
("microphone", "kickstand" and "rumble" read as adjectives); the core-term selection types values with
other frames ("the ___ one.", "it is ___."), so the two readings seldom share an error ("Dust Proof",
read as a noun by both, is one they share)."""
SAMPLE = 200
"""Queries in the openings sample (the issue's "distinct first-two-word openings, of 200")."""


def name_kind(name: str) -> str:
    """``color``, ``rating``, ``brand``, ``design``, ``platform``, ``material`` or ``""`` from an
    attribute's published name (a name is never read as an adjective: "by THQ Nordic", "for Nintendo")."""
    low = name.lower()
    for kind, keys in _NAME_KINDS:
        if any(re.search(rf"\b{k}\b", low) for k in keys):
            return kind
    return ""


def count_questions(query: str) -> int:
    """Questions in a query: sentences ending in "?", plus a final sentence without end punctuation
    that opens like a question ("Does it come in black" with its "?" dropped)."""
    sentences = [s.strip() for s in _SENTENCE_END.split(query.strip()) if s.strip()]
    n = sum(s.endswith("?") for s in sentences)
    if sentences and not re.search(r"[.?!]$", sentences[-1]) and _QUESTION_OPENING.match(sentences[-1]):
        n += 1
    return n


def opening(query: str) -> str:
    """The first two words, lower-cased, without punctuation."""
    return " ".join(re.findall(r"[\w']+", query.lower())[:2])


def parser_casing(text: str) -> str:
    """Title-case words lower-cased (acronyms and inner capitals kept), so spaCy reads "Scratch
    Resistant" as words, not as a name; the length and offsets of the text are unchanged."""

    def fix(m: re.Match[str]) -> str:
        w = m.group(0)
        letters = [c for c in w if c.isalpha()]
        keep = len(letters) >= 2 and (all(c.isupper() for c in letters) or any(c.isupper() for c in w[1:]))
        return w if keep else w.lower()

    return re.sub(r"\S+", fix, text)


@dataclass
class TermReading:
    """How one core term reads in one query: its tokens' tags, the words before it, whether it
    premodifies a noun, and whether its head reads as an adjective."""

    value: str
    before: tuple[str, ...]
    words: tuple[tuple[str, str, str, bool], ...]
    """(text, fine tag, coarse POS, stop word) of each of the term's tokens with a letter or digit."""
    premodifier: bool
    adjective: bool
    stop_pronoun: bool = False


def _head_tag(doc: Any, start: int, length: int) -> str:
    toks = [t for t in doc if start <= t.idx < start + length]
    if not toks:
        return ""
    inside = {t.i for t in toks}
    heads = [t for t in toks if t.head.i not in inside or t.head.i == t.i]
    return (heads[-1] if heads else toks[-1]).tag_


def adjectives(terms: Iterable[str], nlp: Any) -> dict[str, bool]:
    """Whether each term, read alone in each of :data:`_CARRIERS`, has an adjective or participle as its
    head in all of them."""
    items = sorted({t for t in terms if t.strip()})
    texts = [c.format(parser_casing(t)) for t in items for c in _CARRIERS]
    docs = list(nlp.pipe(texts))
    out = {}
    for i, term in enumerate(items):
        tags = []
        for j, carrier in enumerate(_CARRIERS):
            doc = docs[i * len(_CARRIERS) + j]
            tags.append(_head_tag(doc, carrier.index("{}"), len(term)))
        out[term] = all(t in _ADJ_TAGS for t in tags)
    return out


def read_terms(
    doc: Any, query: str, terms: Sequence[str], adjective: Mapping[str, bool] | None = None
) -> list[TermReading]:
    """Each core term's reading in the parsed query ``doc`` (first occurrence; the lexical rule makes it
    the only one); ``adjective`` is :func:`adjectives` of the terms (else the query's own tags say)."""
    out = []
    for term in terms:
        spans = term_spans(query, term)
        if not spans:
            continue
        a, b = spans[0]
        toks = [t for t in doc if a <= t.idx < b]
        if not toks:
            continue
        inside = {t.i for t in toks}
        heads = [t for t in toks if t.head.i not in inside or t.head.i == t.i]
        head = heads[-1] if heads else toks[-1]
        before = tuple(w.lower() for w in re.findall(r"[\w']+", query[:a])[-2:])
        words = [t for t in toks if any(c.isalnum() for c in t.text)]
        out.append(
            TermReading(
                value=term,
                before=before,
                words=tuple((t.text, t.tag_, t.pos_, t.is_stop) for t in words),
                premodifier=head.dep_ in ("amod", "compound", "nmod") and head.head.i > head.i,
                adjective=adjective[term]
                if adjective is not None and term in adjective
                else head.tag_ in _ADJ_TAGS,
                stop_pronoun=len(words) == 1 and words[0].is_stop and words[0].pos_ in ("PRON", "DET"),
            )
        )
    return out


def term_fault(r: TermReading, kind: str = "") -> str:
    """``instruction_verb``, ``fragment``, ``placeholder`` or ``""`` for a term as it reads in a query."""
    tags = [t for _, t, _, _ in r.words]
    pos = [p if p != "ADV" or stop else "X" for _, _, p, stop in r.words]  # "too", "only"; not "clear"
    if re.search(r"(^|\s)[^\w\s&+/'.-]+(\s|$)", r.value) or re.match(r"(?i)(not|no|none)\b", r.value):
        return "placeholder"
    if r.stop_pronoun and kind != "rating":
        return "placeholder"
    if tags and tags[0] in ("VB", "VBZ", "VBP"):
        return "instruction_verb"
    n = len(tags)
    if n >= 2 and pos[0] in _FUNCTION_POS and (n >= 3 or pos[1] in ("DET", "PRON", "ADP", "ADV")):
        return "fragment"
    if n >= 2 and (pos[-1] in _FUNCTION_POS | {"ADV"} or tags[-1] == "RP"):
        return "fragment"
    return ""


def wrong_kind(r: TermReading, kind: str) -> str:
    """Why a term sits in a slot built for another kind (``""`` when it fits), from its reading ``r``
    and what its attribute's published name says it is (:func:`name_kind`)."""
    if term_fault(r, kind) == "fragment":
        return "fragment"
    if r.premodifier:
        return ""
    last = r.before[-1] if r.before else ""
    two = " ".join(r.before[-2:])
    quality = kind == "color" or (r.adjective and kind not in ("brand", "platform", "material", "rating"))
    if last in NOUN_SLOTS and not (last == "with" and len(r.before) > 1 and r.before[-2] in _PLATFORM_WITH):
        if quality:
            return f"{'colour' if kind == 'color' else 'adjective'} after '{last}'"
        if kind in ("rating", "design", "brand"):
            return f"{kind} after '{last}'"
        return ""
    for slot in (two, last):
        if slot in _QUALITY_BLOCKED and quality:
            return f"{'colour' if kind == 'color' else 'adjective'} after '{slot}'"
    if last == "rated" and kind != "rating":
        return "not a rating after 'rated'"
    return ""


@dataclass
class NaturalnessReport:
    queries: int = 0
    wrong_kind: int = 0
    stacked: int = 0
    openings: int = 0
    sample: int = 0
    terms: int = 0
    term_faults: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "wrong_kind": self.wrong_kind,
            "stacked_questions": self.stacked,
            "openings": self.openings,
            "openings_sample": self.sample,
            "core_terms": self.terms,
            "core_term_faults": dict(sorted(self.term_faults.items())),
            "examples": self.examples,
        }


def _note(examples: dict[str, list[str]], key: str, text: str, limit: int) -> None:
    got = examples.setdefault(key, [])
    if len(got) < limit and text not in got:
        got.append(text)


def check_queries(
    rows: Iterable[Mapping[str, Any]], nlp: Any = None, *, seed: int = 0, examples: int = 3
) -> NaturalnessReport:
    """The report over ``rows`` (each with ``query``, ``core_terms`` and ``attributes`` name/value)."""
    rows = list(rows)
    if nlp is None and rows:
        from pqb.builders.nlp import load_spacy

        nlp = load_spacy()
    rep = NaturalnessReport(queries=len(rows))
    ex: dict[str, list[str]] = {}
    docs = nlp.pipe([parser_casing(r["query"]) for r in rows], batch_size=128) if rows else []
    adjective = adjectives((t for r in rows for t in r.get("core_terms") or []), nlp) if rows else {}
    faults: dict[str, str] = {}
    for r, doc in zip(rows, docs, strict=True):
        query, terms = r["query"], list(r.get("core_terms") or [])
        kinds = {str(a["value"]).lower(): name_kind(str(a["name"])) for a in r.get("attributes") or []}
        wrong = []
        for reading in read_terms(doc, query, terms, adjective):
            kind = kinds.get(reading.value.lower(), "")
            if why := wrong_kind(reading, kind):
                wrong.append(f"{why}: {reading.value!r}")
            if kind != "brand" and (fault := term_fault(reading, kind)):  # a maker's name is a name
                faults.setdefault(reading.value.lower(), fault)
                _note(ex, f"term_{fault}", reading.value, examples)
        if wrong:
            rep.wrong_kind += 1
            _note(ex, "wrong_kind", f"{query} [{'; '.join(wrong)}]", examples)
        if count_questions(query) >= 2:
            rep.stacked += 1
            _note(ex, "stacked_questions", query, examples)
    rep.terms = len({t.lower() for r in rows for t in r.get("core_terms") or []})
    rep.term_faults = Counter(faults.values())
    queries = [r["query"] for r in rows]
    sample = random.Random(seed).sample(queries, SAMPLE) if len(queries) > SAMPLE else queries
    rep.sample, rep.openings = len(sample), len({opening(q) for q in sample})
    rep.examples = {k: ex[k] for k in sorted(ex)}
    return rep
