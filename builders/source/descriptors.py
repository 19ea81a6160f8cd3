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
  Out") is a **fragment**; a negation, a symbol, a lone closed-class pronoun or a list of variants
  joined by "+" ("not null", "language _ tag", "All", "BU+RE+PI") is a **placeholder**, and so is a
  value that is the last word of one of the domain's keys ("Type", "Color": it names an attribute) or
  one word repeated ("White White", a seller's slip);
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
phrase (adjective or noun, read in "the ___ one."), and, since issue 43's second round, from how the
domain's own text uses it (:class:`Usage`, counted by :class:`PhraseCounter` in the same pass as
attestation: "works with Windows", "for gaming", "dust proof switches"), so the realizer can phrase each
kind in the frames that fit it. The same counts decide which nodes of a product's category path are
platforms (:data:`~pqb.builders.kinds.CATEGORY_KEY`: "PlayStation 3", not "Games") and the casing a
query writes a value in (:meth:`DescriptorModel.written_form`).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field
from typing import Any, NamedTuple

from pqb.builders.kinds import CATEGORY_KEY, key_kind
from pqb.dataset.schema import term_spans

ATTESTATION_PER = 100_000
"""A phrase is attested in a body of text when at least one in ``ATTESTATION_PER`` of its documents
(rounded up) contain it (and at least 1 review, or 2 products: the product's own text is the echo):
on the slice that is any review of its 1,345 and any other product of its 1,488; on the 4.6M reviews
of a whole category it is 46, so a placeholder a few writers quote out of millions does not pass."""
MIN_DESCRIPTOR_SHARE = 0.5
"""A key carries product descriptors when at least this share of its values in the domain pass the
value rules (parse and attestation): "more often than not"."""
PLATFORM_SHARE = 0.05
"""A name is used as a platform when "for ___" / "compatible with ___" hold at least this share of its
uses. On the Video_Games slice the names listed under platform keys and used 20 times or more put 7-62%
of their uses there (median 20%: PC 15%, Xbox 24%, Mac 10%, Windows 13%; only "Vista" none of 80), the
names under product, feature, connectivity and style keys at most 4.8% ("Toy" 1 of 21, "English" 3.4%,
USB 6 of 422, Bluetooth 1 of 131) unless they are platforms ("Windows" as a controller type, "NES")."""
MODIFIER_RATIO = 2
"""A value is a premodifier only when it premodifies a noun at least this many times as often as it ends
a phrase (and never ends one after with/has/...): "dust proof" 4 to 1, "laser" 19 to 6, "multimedia" 31
to 6; "fast charging" (6 to 9) and "lighting" (55 to 54, after "with" once) stay nouns."""
MIN_SLOT_USES = 2
"""The fewest uses in a slot that count as evidence for a kind (one occurrence is not a habit)."""
DEFAULT_SHARE = 0.8
"""An audience at least this share of its key's products give is the key's default (:meth:`DescriptorModel.default`):
four in five, so that the other values are exceptions; less is a choice a shopper makes."""
MIN_KEY_PRODUCTS = 10
"""The fewest products giving a key for a share of them to count (its default, :data:`DEFAULT_SHARE`; its
echo, :data:`MIN_ECHO_SHARE`): at 10 products a share near one half has a 95% interval of ±31 points,
and below that a "majority" is two or three sellers."""
MIN_ECHO_SHARE = 0.2
"""A property key (:data:`ECHO_KINDS`) whose value fewer than one in five of its products' own words
(title, description, features) repeat is a form field the sellers leave at a default, not what their
products are (:attr:`DescriptorModel.unechoed_keys`). On the Video_Games slice "Other display features"
("Wireless" on 16 of 19 products: skins, cases, head straps, games) is echoed by 1 of 19; every other
property key given by ten or more products by half or more ("Special Feature" 56 of 110, "Connectivity
Technology" 86 of 116, "Material" 61 of 74)."""
ECHO_KINDS = frozenset({"feature", "connectivity", "material"})
"""Keys of what a product has or is made of, which its seller's own words say when it is true; not a
classification the record states once (a game's rating, language or type is not repeated in its
description: "Rated" 13 of 264, "Language" 1 of 49)."""
_WORD = re.compile(r"[^\W_]+")
"""A word of a value, for the colour rule: "Blue Switch-White" is blue, switch, white."""
_COLOUR_PARTS = re.compile(r"[-/+&_]")
"""Where a colour field joins two colours or a colour and something else ("Black-White", "Blue Switch-White")."""
REJECTIONS: tuple[str, ...] = (
    "placeholder",
    "instruction_verb",
    "fragment",
    "unattested",
    "not_descriptor_key",
    "default_value",
    "unechoed_key",
    "not_a_colour",
    "category_not_platform",
)
"""Why a value is not a core term, in the order they are judged (the first that applies is counted).
``default_value``: the audience nearly all the key's products give (:meth:`DescriptorModel.default`).
``unechoed_key``: a property key the products' own words rarely repeat (:data:`MIN_ECHO_SHARE`).
``not_a_colour``: a colour field that names another attribute (:meth:`DescriptorModel.not_a_colour`).
``category_not_platform``: a node of the product's category path that the domain's text does not use as
a platform (:data:`~pqb.builders.kinds.CATEGORY_KEY`)."""

_JOINERS = frozenset("-&+/'.")
_VARIANT_LIST = re.compile(r"[^\W\d_]\s*\+\s*[^\W\d_]")
"""Words joined by "+": a seller's list of a pack's variants ("White+Black+Blue+Red", "BU+RE+PI", "Red
Camo+Blue Camo"), not one value a shopper asks for (read as codes, not colours, in the review of issue
43's third build). A brand keeps its "+" (a name is what it is)."""
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


def _folded(value: str) -> str:
    """A value as the counters key it: lower-cased, runs of spaces as one."""
    return " ".join(value.split()).lower()


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
    if first.dep_ == "neg" or (first.lower_ == "no" and first.tag_ == "DT") or _VARIANT_LIST.search(value):
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


def kind_of(key: str, reading: Reading, use: Usage | None = None, head_use: Usage | None = None) -> str:
    """The value's kind from its key, its parse and how the domain's text uses it (:class:`Usage`).

    From the key and the parse (issue 43): a product kind, a connectivity value, a style or a feature
    that reads as an adjective ("Over Ear", "Wired", "Scratch Resistant") is an adjectival feature; any
    other feature is nominal ("Noise Cancellation", "Kickstand"). The text's own use then corrects what
    the key and the parse cannot see (issue 43, round two; docs/design.md §5):

    * a product kind, feature or category node that is a name used as a platform ("works with Windows",
      :meth:`Usage.platform`) is a **platform**; a platform-key value the text writes in lower case is a
      **device**, a common noun that takes an article ("for a controller", "compatible with a laptop");
    * a nominal feature or style used after a bare "for" more than after with/has and copulas is a
      **purpose** ("for gaming", "for travel"), or a **device** when it is a count noun (after a
      determiner more often than not, :meth:`Usage.count_noun`); a purpose-key value the text never
      writes after a bare "for" is a device too ("Specific Uses For Product: Monitor": "for a monitor");
    * a value written only before a noun, never after with/has/... nor as a predicate, is a
      **modifier**, phrased only as a premodifier (:meth:`Usage.modifier`): adjectives ("an optical
      mouse", "over ear headphones", "a modern keyboard": never "that is over ear") and nouns that
      premodify far more than they head ("dust proof switches", "a laser mouse"); a nominal feature used
      as a predicate more than after with/has is an **adjectival feature**;
    * a style the text writes after with/has is a nominal feature ("with LED backlighting"), and one it
      never writes before a noun is a product kind ("a variety pack"): neither is "a ___ design";
    * a nominal feature that the text writes after "a"/"an" (:data:`MIN_SLOT_USES` times or more, the
      value or its last word, ``head_use``) is a **count feature**, which takes an article ("has a
      zipper", "comes with an ergonomic design"; "have zipper" read as broken English to round nine's
      raters); one the text never writes so stays bare ("with lighting", "has noise cancellation").
    """
    kind = key_kind(key)
    u = use if use is not None else Usage()
    adjectival = reading.phrase == "adjective" or reading.tags[:1] == ("IN",)
    if kind in ("product", "feature", "category") and u.platform():
        return "platform"
    if kind == "category":  # not a kind a query can phrase: the judgement rejects the node
        return "category"
    if kind == "platform":
        return "device" if u.common_noun() else "platform"
    if kind == "purpose":
        return "purpose" if not u.uses or (u.purpose() and not u.count_noun()) else "device"
    if kind in ("feature", "style") and not adjectival and u.purpose():
        return "device" if u.count_noun() else "purpose"
    if kind in ("product", "connectivity", "feature", "style") and adjectival:
        return "modifier" if u.modifier(adjective=True) else "adj_feature"
    counted = u.indefinite + (head_use.indefinite if head_use is not None else 0) >= MIN_SLOT_USES
    nominal = "count_feature" if counted else "noun_feature"
    if kind == "feature":
        if u.predicate >= MIN_SLOT_USES and u.predicate > u.after_with:
            return "adj_feature"
        return "modifier" if u.modifier() else nominal
    if kind == "style" and u.uses:
        if u.after_with:
            return nominal
        if not u.premodifier:
            return "product"
    return kind


def attestation_threshold(n_documents: int, minimum: int = 1) -> int:
    """Documents a phrase must occur in to count as attested among ``n_documents``
    (:data:`ATTESTATION_PER`, at least ``minimum``); integer arithmetic, the same on every machine."""
    return max(minimum, -(-n_documents // ATTESTATION_PER))


FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "my", "your", "our", "his", "her", "its", "their",
        "some", "any", "no", "every", "each", "all", "both", "and", "or", "but", "nor", "so", "yet", "if",
        "than", "then", "as", "at", "by", "for", "from", "in", "into", "of", "off", "on", "onto", "out", "over",
        "to", "up", "with", "without", "about", "after", "before", "under", "through", "between", "against",
        "during", "via", "per", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did",
        "have", "has", "had", "will", "would", "can", "could", "should", "may", "might", "must", "it", "it's",
        "they", "them", "he", "she", "we", "you", "i", "me", "us", "him", "who", "which", "what", "when",
        "where", "how", "not", "too", "very", "also", "just", "only", "even", "more", "most"
    }
)  # fmt: skip
"""Words after which a value ends its phrase (its head position, :class:`Usage`): this module's own
short list, so the ingest stage that counts uses never imports spaCy."""
_DETERMINERS = frozenset({"a", "an", "the", "this", "that", "these", "those", "my", "your", "our", "his", "her",
                          "its", "their", "some", "any"})  # fmt: skip
_COMPATIBLE = frozenset({"compatible", "works", "work", "working", "fits", "fit"})
_NOUN_SLOT = frozenset(
    {"with", "has", "have", "having", "featuring", "features", "feature", "includes", "include", "including",
     "offers", "offering"}
)  # fmt: skip
_PREDICATE = frozenset(
    {"is", "are", "was", "were", "be", "been", "being", "very", "so", "too", "not", "fully", "totally",
     "really", "quite", "extremely", "pretty"}
)  # fmt: skip
_WORD_TOKEN = re.compile(r"[\w'+-]+")
_NEXT = re.compile(r"\s*([\w'+-]+|\S)?")
_NOT_MID = frozenset('.!?:;"(-*#[')


@dataclass
class Usage:
    """How the domain's own text writes one value (every occurrence, in reviews and in sellers' text):
    what comes right before it and whether its phrase ends with it.

    ``premodifier``: a content word follows ("dust proof switches", "a wired controller"); ``head``: the
    phrase ends with it (punctuation, a function word or the end follows), ``determined`` of these right
    after a determiner. The slots, read from the
    word before (a determiner between is skipped): ``after_for`` "for (the) ___", ``after_compatible``
    "compatible with / works with ___", ``after_with`` "with / has / featuring / includes / offers ___"
    ending its phrase, ``predicate`` "is / are / very ___" ending its phrase. ``capitalised`` / ``lower``:
    occurrences inside running text (not at a sentence start, not in a title-cased or all-caps line)
    written with a capital letter or without one: names are written capitalised ("Windows", "iOS"),
    common nouns are not ("controller", "gaming")."""

    uses: int = 0
    premodifier: int = 0
    head: int = 0
    after_for: int = 0
    after_compatible: int = 0
    after_with: int = 0
    predicate: int = 0
    capitalised: int = 0
    lower: int = 0
    bare_for: int = 0
    """Of ``after_for``, the uses with no determiner that end the phrase ("for gaming.", not "for the
    cable." nor "for gaming keyboards")."""
    determined: int = 0
    """Of ``head``, the uses right after a determiner ("the monitor.", "a console,"): a count noun."""
    indefinite: int = 0
    """Of ``determined``, the uses right after "a" or "an" ("a zipper.", "an ergonomic design"): only a
    count noun takes one ("the lighting" does not tell; "a lighting" is not written)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def name(self) -> bool:
        """Written capitalised in at least half of its running-text occurrences (a name)."""
        return self.capitalised > 0 and self.capitalised >= self.lower

    def common_noun(self) -> bool:
        """Written in lower case in most of its running-text occurrences."""
        return self.lower > self.capitalised

    def platform(self) -> bool:
        """A name the text puts after "for" or "compatible with" in at least :data:`PLATFORM_SHARE` of
        its uses: what products are for ("for PC", "works with Windows"), not a name of a part ("USB")."""
        slots = self.after_for + self.after_compatible
        return self.name() and slots >= 1 and slots >= PLATFORM_SHARE * self.uses

    def purpose(self) -> bool:
        """Ends a phrase right after "for" (no determiner) more often than after noun slots and copulas
        together, at least :data:`MIN_SLOT_USES` times: an activity the product serves ("for gaming",
        "for travel"), not a thing ("for the cable")."""
        return self.bare_for >= MIN_SLOT_USES and self.bare_for > self.after_with + self.predicate

    def count_noun(self) -> bool:
        """Heads a phrase after a determiner more often than without one ("the monitor", "a console"):
        a thing, which takes an article, not an activity ("gaming")."""
        return self.determined * 2 > self.head

    def modifier(self, adjective: bool = False) -> bool:
        """Written before a noun (at least :data:`MIN_SLOT_USES` times) and never after with/has/... nor as
        a predicate: a premodifier only ("dust proof switches", "an optical mouse", "laser mouse"). A noun
        must also premodify at least :data:`MODIFIER_RATIO` times as often as it heads a phrase ("fast
        charging" heads as often as it premodifies: "with fast charging"); an ``adjective`` heads none."""
        return (
            self.after_with == 0
            and self.predicate == 0
            and self.premodifier >= MIN_SLOT_USES
            and (adjective or self.premodifier >= MODIFIER_RATIO * self.head)
        )


def read_use(text: str, start: int, end: int) -> tuple[str, bool, str, bool | None]:
    """(slot, ends its phrase, the determiner right before it or ``""``, capitalised) of the occurrence
    ``text[start:end]``: the slot is ``for``, ``compatible``, ``with``, ``predicate`` or ``""``
    (:class:`Usage`); capitalised is ``None`` where the occurrence says nothing about case (a sentence
    start, a title-cased or all-caps line)."""
    before = [w.lower() for w in _WORD_TOKEN.findall(text[max(0, start - 48) : start])]
    det = before[-1] if before and before[-1] in _DETERMINERS else ""
    if det:
        before = before[:-1]
    last = before[-1] if before else ""
    nxt = _NEXT.match(text, end)
    token = nxt.group(1) if nxt else None
    ends = token is None or not token[0].isalnum() or token.lower() in FUNCTION_WORDS
    if last == "for":
        slot = "for"
    elif last == "with" and len(before) > 1 and before[-2] in _COMPATIBLE:
        slot = "compatible"
    elif last in _NOUN_SLOT and ends:
        slot = "with"
    elif last in _PREDICATE and ends and not det:
        slot = "predicate"
    else:
        slot = ""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    lead = text[line_start:start].rstrip()
    cased: bool | None = None
    if lead and lead[-1] not in _NOT_MID and not _headline(line):
        cased = any(ch.isupper() for ch in text[start:end])
    return slot, ends, det, cased


@functools.lru_cache(maxsize=4096)
def _headline(line: str) -> bool:
    """A title-cased or all-caps line (a title, a heading): its capitals say nothing about names."""
    ws = [w for w in _WORD_TOKEN.findall(line) if w[0].isalpha()]
    return bool(ws) and sum(w[0].isupper() for w in ws) * 2 > len(ws)


def head_words(values: Iterable[str]) -> set[str]:
    """The last word of each value of two words or more, lower-cased ("design" of "Ergonomic Design"):
    counted beside the values in the products' own text (:func:`catalogue_phrases`), so that a
    feature's head noun shows whether it takes an article (:func:`kind_of`) where the whole phrase is
    too rare to."""
    return {v.split()[-1].lower() for v in values if len(v.split()) > 1}


def catalogue_phrases(candidates: Iterable[Iterable[Candidate]]) -> list[str]:
    """What a domain's catalogue counter (the products' own text) counts: every candidate value and the
    head word of each feature value (:func:`head_words`), sorted. The reviews' counter counts the values
    only: a head word is a common word ("design", "light"), and counting them in the reviews made the
    count 1.58x slower on the slice's reviews (about four more minutes at the full Video_Games size),
    while the products' text grows with the products, not the reviews. On the slice that costs 3 of
    15 count features ("cute design", "lightweight design", "fast charger" stay bare)."""
    cands = [c for cs in candidates for c in cs]
    values = {c.value for c in cands}
    return sorted(values | head_words(c.value for c in cands if key_kind(c.key) == "feature"))


class PhraseCounter:
    """Counts, per candidate value, the documents (reviews, or products' own text) that contain it,
    exactly as :func:`~pqb.dataset.schema.count_term` matches (whole words, any case), and how each
    occurrence is used (:class:`Usage`), checking only the values whose first word the document has:
    linear in the text, whatever the number of values."""

    _TOKEN = re.compile(r"\w+")

    def __init__(self, values: Iterable[str]) -> None:
        self.by_first = _first_word_index(tuple(values))
        self.df: Counter[str] = Counter()
        self.usage: dict[str, Usage] = {}
        self.documents = 0

    def merge(self, part: tuple[Counter[str], dict[str, Usage], int]) -> None:
        """Add the counts of :func:`count_phrases` over the next texts: the same counts, and the same
        order of first occurrence, as :meth:`add` over those texts here."""
        df, usage, documents = part
        self.df.update(df)
        for v, u in usage.items():
            self.usage[v] = self.usage[v] + u if v in self.usage else u
        self.documents += documents

    def add(self, text: str) -> None:
        self.documents += 1
        if not text:
            return
        tokens = set(self._TOKEN.findall(text.lower()))
        for tok in tokens & self.by_first.keys():
            for v, needs in self.by_first[tok]:
                # a whole-word match's word runs are word runs of the text: a value one of whose words
                # the text lacks cannot match (the same test as the first word's, for every word)
                if not needs <= tokens:
                    continue
                spans = term_spans(text, v)
                if not spans:
                    continue
                self.df[v] += 1
                u = self.usage.setdefault(v, Usage())
                for a, b in spans:
                    slot, ends, det, cased = read_use(text, a, b)
                    u.uses += 1
                    u.premodifier += not ends
                    u.head += ends
                    u.determined += ends and bool(det)
                    u.indefinite += ends and det in ("a", "an")
                    u.after_for += slot == "for"
                    u.bare_for += slot == "for" and ends and not det
                    u.after_compatible += slot == "compatible"
                    u.after_with += slot == "with"
                    u.predicate += slot == "predicate"
                    u.capitalised += cased is True
                    u.lower += cased is False

    def counts(self) -> tuple[Counter[str], dict[str, Usage], int]:
        return self.df, self.usage, self.documents

    def attested(self, value: str, minimum: int = 1) -> bool:
        return self.df[_folded(value)] >= attestation_threshold(self.documents, minimum)

    def use_of(self, value: str) -> Usage:
        return self.usage.get(_folded(value), Usage())


@functools.lru_cache(maxsize=2)
def _first_word_index(values: tuple[str, ...]) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Each distinct value (lower-cased, spaces collapsed) under its first word, with all its words.
    Cached: a worker counting chunk after chunk for one domain builds it once."""
    index: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for v in sorted({_folded(v) for v in values if v.strip()}):
        tokens = PhraseCounter._TOKEN.findall(v)
        if tokens:
            index.setdefault(tokens[0], []).append((v, frozenset(tokens)))
    return index


def count_phrases(job: tuple[tuple[str, ...], list[str]]) -> tuple[Counter[str], dict[str, Usage], int]:
    """Executor chunk function: a :class:`PhraseCounter`'s counts over ``texts`` alone, for
    :meth:`PhraseCounter.merge` (counts add, so the chunks may run anywhere)."""
    values, texts = job
    counter = PhraseCounter(values)
    for text in texts:
        counter.add(text)
    return counter.counts()


@dataclass
class DescriptorModel:
    """What the domain's data says about its attribute values: each value's reading, which reviews
    attest it, and which keys carry descriptors. :meth:`learn` builds it; :meth:`judge` applies it."""

    readings: dict[tuple[str, str], Reading]
    attested: frozenset[str]
    key_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    """How the domain's reviews and sellers' text use each value (lower-cased), both summed."""
    key_words: frozenset[str] = frozenset()
    """The last word of every key the domain's records use ("type", "color", "style", "technology"):
    a value that is one of them names an attribute instead of giving one ("Connectivity Technology:
    Type", a truncated "Type-C": "a stand ... that has type" scored 2.0 with round eight's panel)."""
    defaults: frozenset[tuple[str, str]] = frozenset()
    """(audience key, folded value) pairs where at least :data:`DEFAULT_SHARE` of the key's products (at
    least :data:`MIN_KEY_PRODUCTS`) give the value (:meth:`default`)."""
    unechoed_keys: frozenset[str] = frozenset()
    """Property keys (:data:`ECHO_KINDS`, given by at least :data:`MIN_KEY_PRODUCTS` products) whose value
    fewer than :data:`MIN_ECHO_SHARE` of those products' own words repeat (:meth:`judge`)."""
    colour_words: frozenset[str] = frozenset()
    """The domain's one-word colour values, lower-cased ("black", "turquoise", "rgb"): what a colour field
    holds when it holds a colour (:meth:`plain_colour`)."""
    thing_heads: frozenset[str] = frozenset()
    """The last word of every value of a key that is neither a colour, a brand nor a category node
    ("switch" of "Nintendo Switch", "backlit", "design" of "Ergonomic Design"): what other attributes
    name (:meth:`not_a_colour`)."""

    @classmethod
    def learn(
        cls,
        products: Sequence[Sequence[Candidate]],
        reviews: PhraseCounter | None = None,
        catalogue: PhraseCounter | None = None,
        nlp: Any = None,
    ) -> DescriptorModel:
        """Read every distinct value, note which ones the domain's ``reviews`` or its ``catalogue`` (the
        products' own titles, descriptions and features) attest and how both use it, then count per key
        how many of its values pass on their own."""
        pairs = {(c.value, key_kind(c.key)) for cands in products for c in cands}
        if nlp is None and pairs:  # a domain whose records offer no attribute never loads spaCy
            from pqb.builders.nlp import load_spacy

            nlp = load_spacy()
        readings = read_values(pairs, nlp) if pairs else {}
        attested = frozenset(
            _folded(v)
            for v, _ in pairs
            if (reviews is not None and reviews.attested(v, 1))
            or (catalogue is not None and catalogue.attested(v, 2))
        )
        usage = {}
        for v in sorted({_folded(v) for v, _ in pairs} | head_words(v for v, _ in pairs)):
            u = Usage()
            for counter in (reviews, catalogue):
                if counter is not None:
                    u = u + counter.use_of(v)
            if u.uses:
                usage[v] = u
        keys = {c.key for cands in products for c in cands if c.key != CATEGORY_KEY}
        model = cls(
            readings,
            attested,
            usage=usage,
            key_words=frozenset(k.split()[-1] for k in keys if k.split()),
            defaults=_audience_defaults(products),
            unechoed_keys=_unechoed_keys(products),
            **_colour_vocabulary(products),
        )
        counts: dict[str, list[int]] = {}
        for cands in products:
            for c in cands:
                if c.key == CATEGORY_KEY:  # judged node by node (:meth:`judge`), not as a key
                    continue
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
        words = c.value.lower().split()
        if " ".join(words) in self.key_words or (len(words) > 1 and len(set(words)) == 1):
            return "placeholder"  # an attribute's name ("Type"), or one word said twice ("White White")
        use = self.use(c.value)
        if r.tags[:1] == ("IN",) and use.head > use.premodifier:
            return "fragment"  # a prepositional phrase ("with adhesive"), not a premodifier ("over ear headphones")
        if (
            key_kind(c.key) != "brand"
            and not c.echo
            and _folded(c.value) not in self.attested
        ):
            return "unattested"
        return "ok"

    def descriptor_key(self, key: str) -> bool:
        passing, n = self.key_counts.get(key, (0, 0))
        return n > 0 and passing >= MIN_DESCRIPTOR_SHARE * n

    def judge(self, c: Candidate) -> str:
        """``ok`` or why ``c`` is not a core term (:data:`REJECTIONS`). A category-path node is judged
        on its own use, not its key's share: only a node the text uses as a platform is offered."""
        verdict = self.value_verdict(c)
        if verdict != "ok":
            return verdict
        if c.key == CATEGORY_KEY:
            return "ok" if self.kind(c) == "platform" else "category_not_platform"
        if not self.descriptor_key(c.key):
            return "not_descriptor_key"
        if self.default(c):
            return "default_value"
        if c.key in self.unechoed_keys:
            return "unechoed_key"
        return "not_a_colour" if self.not_a_colour(c) else "ok"

    def plain_colour(self, value: str) -> bool:
        """Every word of the value is a colour the domain's colour fields give alone ("black grey",
        "Green&Blue"): it can follow "is" ("is black grey"); a name cannot ("is Mercury White")."""
        words = _WORD.findall(value.lower())
        return bool(words) and all(w in self.colour_words for w in words)

    def not_a_colour(self, c: Candidate) -> bool:
        """A colour field one of whose parts (split at "-", "/", "+", "&", "_") ends in a word that is no
        colour and heads another attribute's values ("Blue Switch-White" ends a part in "switch"): the seller
        put a switch, a backlight, a design or a pack in it to tell variants apart ("Red Switch", "Rainbow
        Backlit", "Floral Design", "Black White Pack"; "come in Red Switch" read as a wrong kind to round
        ten's raters). A design name whose words no other key uses stays ("Blue Nebula", "Mercury
        White")."""
        if key_kind(c.key) != "color":
            return False
        parts = (_WORD.findall(part) for part in _COLOUR_PARTS.split(c.value.lower()))
        return any(w[-1] not in self.colour_words and w[-1] in self.thing_heads for w in parts if w)

    def default(self, c: Candidate) -> bool:
        """An audience nearly all its key's products give ("Age Range: Adult" on 21 of the slice's 23
        products that give an age range): it narrows nothing, and a shopper does not ask for it ("for an
        adult" read as odd to all three raters of rounds seven to nine; their four queries with it
        scored 3.0). Only an audience: "Language: English" is as common (45 of 49) but is asked for ("a
        Nintendo Switch video game in English": the three such queries of round seven scored 4.0, its
        other PQB queries 3.81), and rejecting it took half the slice's pairs with it (the games, whose
        fifth core term it is)."""
        return (c.key, _folded(c.value)) in self.defaults

    def use(self, value: str) -> Usage:
        return self.usage.get(_folded(value), Usage())

    def kind(self, c: Candidate) -> str:
        words = c.value.split()
        return kind_of(c.key, self.reading(c), self.use(c.value), self.use(words[-1]) if len(words) > 1 else None)

    def written_form(self, c: Candidate) -> str:
        """How a query writes the value: in lower case when its words are plainly capitalised ("Dust
        Proof", "Video Game") and the domain's running text writes it in lower case more often than not
        (:meth:`Usage.common_noun`: "dust proof switches", "a video game"; an adjective also when the text
        is silent), else as it stands (names, acronyms, brands: "Windows", "USB", "PlayStation", "Razer").
        Matching is case-insensitive, so it is the same core term."""
        plain = all(w[:1].isupper() and not any(ch.isupper() for ch in w[1:]) for w in c.value.split())
        if key_kind(c.key) == "brand" or not plain:
            return c.value
        if key_kind(c.key) == "color" and not self.plain_colour(c.value):
            return c.value  # a design name keeps its capitals: no "it needs to be floral design"
        use = self.use(c.value)
        # an adjective is a common word unless the text capitalises it ("Japanese"): with no running-text
        # evidence either way, "Ambidextrous" is a seller's Title Case, and "a holder that is Ambidextrous"
        # read as a name to round seven's panel
        common = use.common_noun() or (use.lower >= use.capitalised and self.kind(c) == "adj_feature")
        return c.value.lower() if common else c.value

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


def _audience_defaults(products: Sequence[Sequence[Candidate]]) -> frozenset[tuple[str, str]]:
    """(key, folded value) for each audience key whose most given value is given by at least
    :data:`DEFAULT_SHARE` of the products giving the key, where at least :data:`MIN_KEY_PRODUCTS` do
    (a product counted once per key and value)."""
    per_key: Counter[str] = Counter()
    per_value: Counter[tuple[str, str]] = Counter()
    for cands in products:
        pairs = {(c.key, _folded(c.value)) for c in cands if key_kind(c.key) == "audience"}
        per_key.update({k for k, _ in pairs})
        per_value.update(pairs)
    return frozenset(
        (k, v)
        for (k, v), n in per_value.items()
        if per_key[k] >= MIN_KEY_PRODUCTS and n >= DEFAULT_SHARE * per_key[k]
    )


def _unechoed_keys(products: Sequence[Sequence[Candidate]]) -> frozenset[str]:
    """The property keys (:data:`ECHO_KINDS`) given by at least :data:`MIN_KEY_PRODUCTS` products whose
    value fewer than :data:`MIN_ECHO_SHARE` of them repeat in their own words (``echo``). A product counts
    once per key, as echoing when any of its values under the key is echoed (the unkeyed feature lines
    all share one key)."""
    given: Counter[str] = Counter()
    echoed: Counter[str] = Counter()
    for cands in products:
        echoes: dict[str, bool] = {}
        for c in cands:
            if key_kind(c.key) in ECHO_KINDS:
                echoes[c.key] = echoes.get(c.key, False) or c.echo
        given.update(echoes.keys())
        echoed.update(k for k, e in echoes.items() if e)
    return frozenset(k for k, n in given.items() if n >= MIN_KEY_PRODUCTS and echoed[k] < MIN_ECHO_SHARE * n)


def _colour_vocabulary(products: Sequence[Sequence[Candidate]]) -> dict[str, frozenset[str]]:
    """:attr:`DescriptorModel.colour_words` and :attr:`DescriptorModel.thing_heads` of the domain."""
    colours: set[str] = set()
    heads: set[str] = set()
    for cands in products:
        for c in cands:
            kind = key_kind(c.key)
            words = _WORD.findall(c.value.lower())
            if not words or kind in ("brand", "category"):
                continue
            if kind == "color":
                colours.update(words if len(words) == 1 else ())
            else:
                heads.add(words[-1])
    return {"colour_words": frozenset(colours), "thing_heads": frozenset(heads)}


def rejection_report(judged: Iterable[tuple[Candidate, str]], examples: int = 3) -> dict[str, Any]:
    """Counts (and the first ``examples`` distinct values) of each rejection kind over judged attribute
    values; category-path nodes are counted apart (``category_nodes``: offered, accepted as platforms,
    rejections by kind, examples of each), so the attribute figures keep their meaning."""
    counts: Counter[str] = Counter()
    nodes: Counter[str] = Counter()
    seen: dict[str, list[str]] = {k: [] for k in REJECTIONS}
    node_seen: dict[str, list[str]] = {}
    total = 0
    for c, verdict in judged:
        if c.key == CATEGORY_KEY:
            nodes[verdict] += 1
            got = node_seen.setdefault(verdict, [])
            if len(got) < examples and c.value not in got:
                got.append(c.value)
            continue
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
        "by_kind": {k: counts[k] for k in REJECTIONS if k != "category_not_platform"},
        "examples": {k: v for k, v in seen.items() if v},
        "category_nodes": {
            "offered": sum(nodes.values()),
            "accepted": nodes["ok"],
            "by_kind": {k: nodes[k] for k in REJECTIONS if nodes[k]},
            "examples": {k: node_seen[k] for k in sorted(node_seen)},
        },
    }
