"""The compositional realizer: shopping requests built from openers, attribute roles and connectives.

A fixed list of frames makes the frame list, not the user, decide what a user says (27 frames gave 294
queries that all matched one of them). Here a query is composed, per candidate, from independent
seeded choices:

* an **opener** (:data:`OPENERS`: declaratives "I'm looking for", "I was looking for", "I need",
  imperatives "show me", questions "do you have", a bare noun phrase), which fixes the main clause's
  mood and final punctuation; the inventory follows how the domain's reviewers say what they wanted
  (issue 43, round two; the counts are in :data:`OPENERS`' docstring);
* a **head noun**: the product kind when it is a core term ("a gamepad ..."), else the product's own
  noun, the one its title heads with (:func:`title_heads`: "Wired Gaming Headset with Mic, ...":
  headset), else "something" ("something for PC that is wired");
* for **each attribute, a syntactic role** (:data:`ROLES`): premodifier ("a black Sony controller"),
  prepositional phrase ("by Sony", "for PC"), relative clause ("that comes in black"), a separate
  sentence ("It has to be by Sony."; or, before the request, "I play on PC.", "I'm a fan of Sony."), or
  a question ("Does it come in black?"); two attributes in one clause slot are **coordinated** ("that
  is wired and comes in black"), prepositional phrases **stack** ("a mouse for Mac in black": "with USB
  and by SADES" read as awkward to round six's raters);
* **connective and ordering** variation: attribute order is shuffled, follow-up sentences may come
  first, a "for" phrase may be fronted ("For my laptop, I need ..."), follow-ups join with ". ", ", and
  ", " - ", "; ";
* **surface habits** drawn per candidate at the rates of the domain's reviews (:mod:`pqb.builders.queries.surface`).

Every attribute is placed exactly once by construction (the lexical filter still checks it). The
number of distinct skeletons (:func:`skeleton`, core terms masked) is reported in the card.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pqb.builders.kinds import KINDS, key_kind
from pqb.builders.queries.candidate import Candidate, ProductSpec
from pqb.builders.queries.surface import SurfaceHabits, apply_habits
from pqb.builders.seeds import derive_seed
from pqb.dataset.schema import count_term, term_spans

ROLES: tuple[str, ...] = ("premodifier", "pp", "relative", "coordination", "sentence", "question", "head")
"""Syntactic roles an attribute can take; ``coordination`` marks a role shared with another attribute."""


def attribute_role(name: str) -> str:
    """The kind of an attribute from its key alone (:func:`pqb.builders.kinds.key_kind`): the fallback
    for a product without typed core terms (``core_kinds``); a feature is then taken as nominal."""
    kind = key_kind(name)
    return {"feature": "noun_feature", "category": "platform"}.get(kind, kind)


# Frames per kind (docs/design.md §7): what follows the head noun, and verb phrases (3sg verb, base,
# rest). Adjectives never follow "with"/"featuring"/"has"; nouns never follow "is" bare; materials are
# "made of", platforms "for", ratings "rated"; a brand is "by"/"from" or a premodifier; an audience is a
# person ("for an adult", "for kids"; never "for adult use" nor "an adults headset", round five's panel).
_PP: dict[str, tuple[str, ...]] = {
    "brand": ("by {v}", "from {v}", "made by {v}"),
    "color": ("in {v}",),
    "material": ("made of {v}", "made from {v}"),
    "platform": ("for {v}", "for {v}", "compatible with {v}"),
    "device": ("for my {v}", "for a {v}", "compatible with a {v}"),
    "purpose": ("for {v}",),
    "connectivity": ("with {v}", "with {v} connectivity"),
    "style": ("in a {v} style", "with a {v} design"),
    "size": ("in size {v}", "in {v}"),
    "age_rating": ("rated {v}", "rated {v}", "with a {v} rating"),
    "audience": ("for a {v}",),
    "language": ("in {v}",),
    "noun_feature": ("with {v}", "with {v}", "featuring {v}"),
    "count_feature": ("with a {v}", "with a {v}", "featuring a {v}"),
    "adj_feature": (),
    "modifier": (),
    "product": (),
}
_VP: dict[str, tuple[tuple[str, str, str], ...]] = {
    "brand": (("is", "be", "made by {v}"), ("is", "be", "from {v}")),
    "color": (("comes", "come", "in {v}"), ("is", "be", "{v}")),
    "material": (("is", "be", "made of {v}"), ("is", "be", "made from {v}")),
    "platform": (  # no "runs on": a case or a skin does not run (issue 43's blinded panel, 3 of 3 raters)
        ("works", "work", "with {v}"),
        ("is", "be", "compatible with {v}"),
    ),
    "device": (
        ("works", "work", "with my {v}"),
        ("works", "work", "with a {v}"),
        ("is", "be", "compatible with a {v}"),
    ),
    "purpose": (("is", "be", "made for {v}"), ("is", "be", "good for {v}")),
    "connectivity": (
        ("supports", "support", "{v}"),
        ("connects", "connect", "via {v}"),
        ("has", "have", "{v}"),
    ),
    "style": (("comes", "come", "in a {v} style"), ("has", "have", "a {v} design")),
    "size": (("comes", "come", "in {v}"), ("is", "be", "size {v}")),
    "age_rating": (("is", "be", "rated {v}"), ("has", "have", "a {v} rating")),
    "audience": (("is", "be", "for a {v}"), ("is", "be", "made for a {v}")),
    "language": (("is", "be", "in {v}"), ("comes", "come", "in {v}")),
    "noun_feature": (("has", "have", "{v}"), ("comes", "come", "with {v}")),
    "count_feature": (("has", "have", "a {v}"), ("comes", "come", "with a {v}")),
    "adj_feature": (("is", "be", "{v}"),),
    "modifier": (),
    "product": (("is", "be", "a {v}"),),
}
_PRE_ORDER: tuple[str, ...] = (
    "size", "adj_feature", "style", "color", "brand", "language", "material", "modifier",
    "connectivity", "purpose", "device", "platform",
)  # fmt: skip
"""Kinds that can premodify the head noun, in the order English stacks them (qualities, colour, then the
maker, then the noun modifiers nearest the head: "a wireless black Sony USB controller")."""
_NAMED_NOT_PREDICATE = frozenset({"color"})
"""Kinds whose bare predicate ("is black") needs a plain word: a value written with capitals is a name
("Monroe Currency", "Red Switch", "Mercury White": sellers' colour fields), and "that is Monroe
Currency" read as nonsense to all three raters of round six; names take "comes in" only."""
_ONLY_PRE = frozenset({"modifier"})
"""Kinds with no frame but the premodifier (the domain's text writes them only before a noun)."""
_NAMED_PRE = frozenset({"platform", "device"})
"""Kinds that premodify nearest the head ("a PC headset"), so only a product noun ("a PC something")."""
_ANY_PP = frozenset(k for k, frames in _PP.items() if frames) - {"brand"}
"""Kinds that read naturally in "Any ___?" ("Any in black?", "Any for PC?"; not "Any by Sony?")."""
MAX_PP = 2
"""Prepositional phrases after the head at most: three in a row ("something compatible with Switch with
USB with Fast Charging made by FYOUNG") is a listing, not a request."""
MAX_QUESTIONS = 1
"""Questions per query at most (the main clause counts): no stacked questions (issue 43)."""

OPENERS: dict[str, tuple[str, str, str]] = {
    "looking_for": ("I'm looking for {np}", ".", "any"),
    "been_looking": ("I've been looking for {np}", ".", "indef"),
    "was_looking": ("I was looking for {np}", ".", "indef"),
    "looking_for_bare": ("looking for {np}", ".", "any"),
    "need": ("I need {np}", ".", "any"),
    "need_bare": ("need {np}", ".", "indef"),
    "in_need": ("I'm in need of {np}", ".", "indef"),
    "we_need": ("we need {np}", ".", "indef"),
    "want": ("I want {np}", ".", "any"),
    "would_like": ("I'd like {np}", ".", "indef"),
    "after": ("I'm after {np}", ".", "indef"),
    "searching": ("searching for {np}", ".", "indef"),
    "shopping": ("shopping for {np}", ".", "indef"),
    "trying_bare": ("trying to find {np}", ".", "indef"),
    "trying": ("I'm trying to find {np}", ".", "any"),
    "hoping": ("I'm hoping to find {np}", ".", "indef"),
    "market": ("I'm in the market for {np}", ".", "indef"),
    "buy": ("I want to buy {np}", ".", "any"),
    "show": ("show me {np}", ".", "indef"),
    "find": ("find me {np}", ".", "indef"),
    "help": ("help me find {np}", ".", "any"),
    "do_you_have": ("do you have {np}", "?", "indef"),
    "is_there": ("is there {np}", "?", "indef"),
    "where": ("where can I get {np}", "?", "any"),
    "can_you": ("can you find me {np}", "?", "indef"),
    "anyone": ("can anyone recommend {np}", "?", "indef"),
    "whats_good": ("what's a good {np}", "?", "none"),
    "any": ("any {np}", "?", "none"),
    "bare": ("{np}", "", "indef"),
    "bare_keywords": ("{np}", "", "none"),
}
"""Main-clause openers: template, final punctuation, and the determiners its noun phrase may take
(``any``: a/an or the; ``indef``: a/an; ``none``: no article and a product noun as head, never "one").

How the slice's reviewers say what they wanted (all 5,765 reviews of ``amazon2023-mini``, 23,873
sentences): "looking for" 99 sentences ("I was looking for a mouse for my iMac", "I have been looking for
a good gaming mouse for my teenage son"), "I wanted" 66 ("I wanted a quality device, that will last"),
"I needed" 62 ("I needed a keyboard to keep by the bed"), "in the market for" 14, "I'd like" / "I would
like" 13, "searching for" 7, "trying to find" 5, "shopping for" 3, "in need of" 3, "we needed something
..."; the object is a noun phrase with the product's own noun as head, continued by "to", "for", "that"
and "with" (22, 12, 11, 5 of 98 such sentences), and "for my" is written 293 times. A bare noun phrase,
with or without its article, is what a search box gets ("black wireless gamepad for PC"). Dropped in
round two, as no request reads so: "what I need is ..." (a cleft), "... wanted" (a classified ad), a bare
"recommend ...", "please find ...". Dropped in round ten: "I needed ..." and "I wanted ...". A reviewer
writes them of a need the purchase met; a request is still open, and round nine's raters marked them
(issue 43). "I was looking for ..." stays: it is the polite past of a request still open ("I was looking
for a mouse for my iMac")."""

_PAST_OPENERS = frozenset({"was_looking"})
"""Openers in the past tense: no question follows them (:func:`realize`)."""

_SENTENCE = (
    "It should {base}.", "It has to {base}.", "It needs to {base}.", "Ideally it {sg}.",
    "I'd prefer one that {sg}.", "It would be great if it {sg}.",
)  # fmt: skip
_SENTENCE_PP = ("Preferably {pp}.", "Ideally {pp}.", "I'd like it {pp}.")
_MAKER_SENTENCE_PP = ("Preferably {pp}.", "Ideally {pp}.")
"""For a brand: "I'd like it by Gtheos" reads as wanting the item made to order (the panel's note)."""
_QUESTION_VP = ("Does it {base}?",)
_QUESTION_BE = ("Is it {rest}?",)
_QUESTION_PP = ("Any {pp}?", "Do you have one {pp}?", "Is there one {pp}?")
_PLURAL: dict[tuple[str, ...], tuple[str, ...]] = {
    _SENTENCE: ("They should {base}.", "They have to {base}.", "They need to {base}.", "Ideally they {sg}.",
                "I'd prefer ones that {sg}.", "It would be great if they {sg}."),
    _SENTENCE_PP: ("Preferably {pp}.", "Ideally {pp}.", "I'd like them {pp}."),
    _QUESTION_VP: ("Do they {base}?",),
    _QUESTION_BE: ("Are they {rest}?",),
    _QUESTION_PP: ("Any {pp}?", "Do you have any {pp}?", "Are there any {pp}?"),
}  # fmt: skip
"""The follow-ups of a plural head ("headphones"), frame for frame: "Are they wired?", not "Is it wired?"."""
_REFERS = re.compile(r"\b(?:it|they|them|one|ones)\b", re.I)
"""A follow-up that points back at the request ("It needs to be black.", "I'd prefer one that ..."):
it cannot come before the request, whose noun it needs ("It needs to be black. For Mac, I am looking
for ...": round seven's panel)."""
_JOIN = (" ", " ", " ", " - ", "; ")
_AND_ALSO = (", and ", " and ")
_CONTEXT: dict[str, tuple[str, ...]] = {
    "platform": ("I play on {v}.", "I game on {v}."),
    "device": ("I have a {v}.", "I use a {v}."),
    "brand": ("I'm a fan of {v}.", "I've always liked {v}."),
    "purpose": ("I do a lot of {v}.",),
}
"""A sentence before the request that says what the shopper plays on, owns, likes or does, as the slice's
reviewers write it ("I play Call Of Duty Ghosts on PS4 mostly.", "But I have a PC laptop I game on.", "I'm
a fan of Cyberlink software." (45 "fan of"), "I have always loved the keyboard", "I do a lot of typing"):
the value's one place in the query."""
_FRONTABLE = frozenset({"platform", "device", "purpose"})
"""Kinds whose "for ..." phrase can open the request ("For my laptop, I need ...", "For PC, I'm looking
for ..."); "With USB, I need ...", "In Black, I need ..." and "Compatible with PC, I need ..." do not
read as requests."""

HEAD_NOUNS: tuple[str, ...] = (
    "controller", "headset", "keyboard", "mouse", "case", "cable", "charger", "adapter", "skin", "stand",
    "game", "console", "remote", "wheel", "pad", "grip", "bag", "card", "microphone", "battery", "dock",
    "joystick", "gamepad", "cover", "sticker", "headphones", "speaker", "chair", "bundle", "kit", "strap",
    "holder", "mat", "protector", "cooler", "fan", "station", "guitar", "camera", "light", "decal", "mount",
    "shell", "cord",
)  # fmt: skip
"""Product nouns a title may name; the realizer uses one the title contains as a head noun. "mount",
"shell" and "cord" end the head phrase of 8, 5 and 5 of the slice's 1,488 Video_Games titles ("Allnice
PS5 Wall Mount, ..."), and without them such a product was named by a noun its title gives only
after "for" or "with" ("a modern wall controller": a wall mount with a controller holder)."""
_GENERIC_HEADS = ("something",)
"""A head for a product whose title names no product noun, and one time in seven for one that does
("something that is wired"). Not "one": it stands for a noun said before, and a request is a first
mention ("Can you find me one, which is backlit", "a non-slip black one": no antecedent, all three raters
of rounds seven and eight). Not "item" ("an over ear item", "a Marvel item": 31 of the
238 queries of issue 43's third build, rated low by its blinded panel): none of the slice's 99 "looking
for" sentences asks for an "item"."""
_LAST_RESORT_HEAD = "item"
"""The head of a product whose title names no product noun when a premodifier-only value ("a dust proof
___") needs a noun after it: "something" cannot follow one."""
_TITLE_HEAD_WEIGHT = 6
"""The title's own noun, six times in seven where the title names one: the noun a shopper writes."""
_TITLE_BREAK = re.compile(r"\s(?:for|compatible|with|fits|-)\s|[,(\[|:]", re.I)
"""Where a title's head phrase ends ("Wired Gaming Headset with Mic", "Skin Compatible for PS4 Controller")."""
_SERVED = re.compile(r"\s(?:for|compatible|fits)\s", re.I)
"""Where a title turns to what the product serves ("... Case for Nintendo Switch", "Skin Compatible with")."""


@dataclass(frozen=True)
class Part:
    kind: str
    value: str
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown attribute kind {self.kind!r}; one of {', '.join(KINDS)}")


@dataclass
class Realization:
    text: str
    roles: dict[str, set[str]] = field(default_factory=dict)
    opener: str = ""


def _article(phrase: str) -> str:
    """ "a"/"an" by the sound the phrase starts with: its first letter, except vowel letters read as a
    consonant ("a one", "a USB"), a short capitalised acronym read letter by letter ("an MMTE", "an HDMI
    cable", "a USB"; a longer one is a word: "a SADES") and an x read "ex" ("an Xbox")."""
    first = phrase.split()[0] if phrase.split() else ""
    letters = "".join(c for c in first if c.isalpha())
    spelled = letters.isupper() and (
        len(letters) <= 4 or not set(letters) & set("AEIOUY")
    )  # "HDMI", not "SADES"
    if spelled and len(letters) >= 2:
        return "an" if letters[0] in "AEFHILMNORSX" else "a"
    low = phrase.lower()
    if low.startswith(("one", "uni", "use", "usb", "eu")):
        return "a"
    return "an" if low[:1] in "aeioux" else "a"


def _plural(value: str) -> bool:
    """A value whose last word is a plural noun ("Pedals", "Adults"): no "a" before it."""
    last = value.split()[-1].lower() if value.split() else ""
    return len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is"))


def _fill(template: str, value: str) -> str:
    """``template`` with ``{v}`` = ``value``, the article before it agreeing ("an Everyone rating"); a plural
    value that ends the phrase takes none ("for Game Consoles", "is Pedals"), one that premodifies keeps
    it ("a Leaves design"). Only the word "a" is an article: "via {v}" ends in an "a" too (it gave "connects
    vian NFC")."""
    premodifies = re.search(r"\ba \{v\} \w", template) is not None
    article = "" if _plural(value) and not premodifies else f"{_article(value)} "
    return re.sub(r"\ba \{v\}", f"{article}{{v}}", template).format(v=value)


def _words(frame: str | tuple[str, ...]) -> list[str]:
    """The words of a frame, a template or a verb-phrase triple."""
    return " ".join(frame if isinstance(frame, tuple) else (frame,)).split()


def _lead(frame: str) -> str:
    """How a follow-up frame begins: its first word, two where the first is a pronoun ("It should",
    "I'd prefer", "Ideally")."""
    words = frame.split()
    return " ".join(words[:2] if words[0] in ("It", "They", "I'd") else words[:1])


def _lower_first(sentence: str) -> str:
    """A follow-up continued after a comma, dash or semicolon: its first letter lower-case, but "I" stays."""
    return sentence if re.match(r"I\b", sentence) else sentence[:1].lower() + sentence[1:]


def _join(items: Sequence[str], rng: random.Random) -> str:
    if len(items) <= 1:
        return "".join(items)
    comma = "," if rng.random() < 0.5 else ""
    return ", ".join(items[:-1]) + f"{comma if len(items) > 2 else ''} and {items[-1]}"


def title_heads(title: str, terms: Sequence[str]) -> list[str]:
    """The product's own noun as its title names it, if any ([] otherwise), where no core term contains
    it or is contained by it (each term stays once): the last head noun before the title's head phrase
    ends ("Wired Gaming Headset with Mic, ... Headphone for PC": headset), else the first one before the
    title turns to what the product serves ("SteelSeries Rival 300, Optical Gaming Mouse": mouse). A noun
    after "for", "compatible" or "fits" names the served thing, not the product ("Organizer Pouch for
    Smartphone Cables", "Keycap Upgrade Set for Mechanical Keyboards", "Dust Cover for Xbox Series S
    Console": "a cable", "a keyboard", "a console" named the wrong product in round ten's build)."""
    low = title.lower()
    found = []
    for noun in HEAD_NOUNS:
        m = re.search(rf"\b{noun}s?\b", low)
        if m and not any(count_term(t, noun) or count_term(noun, t) for t in terms):
            found.append((m.start(), noun))
    found.sort()
    cut = _TITLE_BREAK.search(low, 1)
    served = _SERVED.search(low, 1)
    end, own = (cut.start() if cut else len(low)), (served.start() if served else len(low))
    return [n for pos, n in found if pos < end][-1:] or [n for pos, n in found if pos < own][:1]


def allowed_roles(p: Part) -> tuple[str, ...]:
    """The slots a part's kind can fill: premodifier (a short value of a :data:`_PRE_ORDER` kind),
    post-head phrase (a kind with :data:`_PP` frames), relative clause, follow-up sentence (before the
    request, half the time, for a kind with :data:`_CONTEXT` frames), question."""
    if p.kind in _ONLY_PRE:
        return ("pre",)
    # a brand is what the shopper wants, not a question about the item: "Is it from ACTIVISION?" read as
    # doubt, not a request, to all three raters of issue 43's blinded panel, on 4 of 30 queries
    roles = ["rel", "sent"] if p.kind == "brand" else ["rel", "sent", "q"]
    if _PP[p.kind]:
        roles += ["pp", "pp"]
    if (
        p.kind in _PRE_ORDER
        and len(p.value.split()) <= 2
        and not (p.kind in _NAMED_PRE and _plural(p.value))
    ):
        roles += ["pre", "pre"]  # never "a Game Consoles stand"
    return tuple(roles)


class _Composer:
    """One candidate's choices (a fresh instance per candidate, fed the candidate's own ``rng``)."""

    def __init__(self, rng: random.Random, heads: Sequence[str], material: bool = False) -> None:
        self.rng = rng
        self.heads = list(heads)
        self.roles: dict[str, set[str]] = {}
        self.plural = False
        """The head noun is plural ("headphones"): its verbs and pronouns agree ("which are wired", "Are they")."""
        self.said: set[str] = set()
        """How the follow-ups said so far begin (:func:`_lead`): none begins twice alike ("I would like it in
        white. I would like it with USB-C connectivity.", round nine's panel; "Ideally in white. Ideally
        it ...")."""
        self.made = material
        """A "made ..." frame is said, or kept for the query's material, which has no other: "made by X"
        beside "made of Y" ("... made by MIGHTY SKINS that is made of vinyl", round nine's panel)."""

    def pick(self, frames: Sequence[Any], kind: str = "", follow_up: bool = False) -> Any:
        """A seeded choice among ``frames`` (strings, or verb-phrase triples): not a follow-up frame said
        before, and no second "made" but the material's; all of them when that leaves none."""
        fresh = [
            f for f in frames
            if not (follow_up and _lead(f) in self.said)
            and not (self.made and kind != "material" and "made" in _words(f))
        ]  # fmt: skip
        frame = self.rng.choice(fresh or list(frames))
        if follow_up:
            self.said.add(_lead(frame))
        self.made = self.made or "made" in _words(frame)
        return frame

    def mark(self, parts: Sequence[Part], role: str, joined: bool = True) -> None:
        """Record each part's role; parts that share a slot and are ``joined`` by "and" are coordinated."""
        for p in parts:
            self.roles.setdefault(p.value, set()).add(role)
        if joined and len(parts) > 1:
            for p in parts:
                self.roles[p.value].add("coordination")

    def pp(self, p: Part) -> str:
        return _fill(self.pick(_PP[p.kind], p.kind), p.value)

    def vp(self, p: Part) -> tuple[str, str, str]:
        """(finite verb agreeing with the head, base form, rest): "is"/"comes" for one, "are"/"come" for a plural."""
        frames = _VP[p.kind]
        if p.kind in _NAMED_NOT_PREDICATE and not p.value.islower():
            frames = tuple(f for f in frames if f[2] != "{v}")
        sg, base, rest = self.pick(frames, p.kind)
        finite = ("are" if base == "be" else base) if self.plural else sg
        return finite, base, _fill(rest, p.value)

    def noun_phrase(
        self, pre: list[Part], post: list[Part], rel: list[Part], head_part: Part | None, dets: str
    ) -> str:
        """``[det] pre* head pp{0,2} [that vp (and vp)*]``; ``dets`` as in :data:`OPENERS`."""
        rng = self.rng
        if head_part is not None:
            head, self.roles[head_part.value] = head_part.value, {"head"}
        else:
            bare = dets == "none" or any(p.kind in _ONLY_PRE for p in pre)  # a modifier needs a noun after it
            named = any(p.kind in _NAMED_PRE for p in pre)  # these premodify nearest the head
            # never "a dust proof something", "any something"; "item" only where a modifier needs a noun
            # and the title has none
            heads = [h for h in self.heads if not ((bare or named) and h == "something")]
            head = rng.choice(heads or [_LAST_RESORT_HEAD])
        if head == "something":  # "a black something" is not English: qualities follow it
            for p in pre:
                if _PP[p.kind] and len(post) < MAX_PP:
                    post = [*post, p]
                else:
                    rel = [*rel, p]
            pre = []
        self.plural = _plural(head)
        pre = sorted(pre, key=lambda p: _PRE_ORDER.index(p.kind))
        words = [p.value for p in pre] + [head]
        self.mark(pre, "premodifier")
        body = " ".join(words)
        choices = {"any": ("a", "a", "a", "the"), "indef": ("a",), "none": ("",)}[dets]
        det = "" if head == "something" else rng.choice(choices)
        if det == "a" and _plural(head):
            det = ""  # "wired headphones", "a set of ..." is not ours to add
        phrase = f"{_article(body) if det == 'a' else det} {body}".strip()
        if post:  # stacked, as shoppers write them ("a mouse for Mac in black"), "and" only between two
            # phrases of one preposition ("with USB and with fast charging"): "with USB and by SADES" is not
            pps = [self.pp(p) for p in post]
            phrase += " " + pps[0]
            for a, b in itertools.pairwise(pps):
                phrase += (" and " if a.split()[0] == b.split()[0] else " ") + b
            self.mark(post, "pp", joined=False)
        if rel:
            vps = [self.vp(p) for p in rel]
            relativizer = rng.choice(("that", "that", "which", ", which")) if not post else "that"
            clause = _join([f"{sg} {rest}" for sg, _, rest in vps], rng)
            if relativizer == "that" and clause.startswith("is ") and rng.random() < 0.5:  # singular only
                phrase += f" that's {clause[3:]}"
            else:
                phrase = f"{phrase}{'' if relativizer.startswith(',') else ' '}{relativizer} {clause}"
            self.mark(rel, "relative")
        return phrase

    def sentence(self, parts: list[Part]) -> str:
        rng = self.rng
        self.mark(parts, "sentence")
        if len(parts) == 1 and _PP[parts[0].kind] and rng.random() < 0.35:
            frames = _MAKER_SENTENCE_PP if parts[0].kind == "brand" else self.frames(_SENTENCE_PP)
            return self.pick(frames, follow_up=True).format(pp=self.pp(parts[0]))
        vps = [self.vp(p) for p in parts]
        return self.pick(self.frames(_SENTENCE), follow_up=True).format(
            base=_join([f"{b} {r}" for _, b, r in vps], rng), sg=_join([f"{s} {r}" for s, _, r in vps], rng)
        )

    def question(self, p: Part) -> str:
        rng = self.rng
        self.mark([p], "question")
        if p.kind in _ANY_PP and rng.random() < 0.4:
            return self.pick(self.frames(_QUESTION_PP), follow_up=True).format(pp=self.pp(p))
        _, base, rest = self.vp(p)
        if base == "be":
            return self.pick(self.frames(_QUESTION_BE), follow_up=True).format(rest=rest)
        return self.pick(self.frames(_QUESTION_VP), follow_up=True).format(base=f"{base} {rest}")

    def frames(self, singular: tuple[str, ...]) -> tuple[str, ...]:
        """``singular``, or its plural twin when the head is plural (the same number of frames, so the
        random stream, and every query with a singular head, stays as it was)."""
        return _PLURAL[singular] if self.plural else singular


def realize(parts: Sequence[Part], rng: random.Random, heads: Sequence[str] = ()) -> Realization:
    """One query for ``parts`` (each placed once, in a frame its kind fits), with the role each took.

    At most :data:`MAX_QUESTIONS` question per query: a question opener leaves no question follow-up,
    and a statement takes at most one (issue 43: 21% of queries stacked two or more)."""
    material = any(p.kind == "material" for p in parts)
    c = _Composer(rng, [*heads[:1] * _TITLE_HEAD_WEIGHT, *_GENERIC_HEADS], material)  # the title's noun, else a generic one
    parts, joint = _coordinated_platforms(parts)
    order = list(parts)
    rng.shuffle(order)
    slots: dict[str, list[Part]] = {"pre": [], "pp": [], "rel": [], "sent": [], "q": []}
    products = [p for p in order if p.kind == "product" and len(p.value.split()) <= 2]
    head_part = products[0] if products else None  # the product kind is the head ("a gamepad for PC ...")
    # without a product noun the head is "something": no bare opener ("any something for PC"), no
    # platform before it; the platform goes after it ("something for PC")
    noun = head_part is not None or bool(heads)
    opener_key = rng.choice(sorted(k for k, (_, _, dets) in OPENERS.items() if noun or dets != "none"))
    template, end, dets = OPENERS[opener_key]
    c.said.add(_lead(template))  # "I'd like a headset ... I'd like it with a mic." says it twice

    def roles_of(p: Part) -> list[str]:
        return [r for r in allowed_roles(p) if noun or r != "pre" or p.kind not in _NAMED_PRE]

    # a past-tense opener ("I was looking for ...") tells what the shopper wanted; a present question after
    # it ("I needed a non-slip pad; is it made from rubber?", round seven's panel) changes the time mid-request
    questions_left = 0 if opener_key in _PAST_OPENERS else MAX_QUESTIONS - (end == "?")
    for p in sorted(order, key=lambda p: p.kind not in _ONLY_PRE):  # premodifier-only kinds first
        if p is head_part:
            continue
        # two premodifiers at most, one of them a platform or device: not "a projector monitor console"
        named = any(q.kind in _NAMED_PRE for q in slots["pre"])
        full = len(slots["pre"]) >= 2 or (named and p.kind in _NAMED_PRE)
        allowed = [r for r in roles_of(p) if r != "pre" or not full or p.kind in _ONLY_PRE]
        allowed = [r for r in allowed if r != "pp" or len(slots["pp"]) < MAX_PP]
        if questions_left <= 0 or slots["q"]:
            allowed = [r for r in allowed if r != "q"]
        slots[rng.choice(allowed)].append(p)
    if not (slots["pre"] or slots["pp"] or slots["rel"] or head_part):  # the request must name something
        moved = (slots["sent"] or slots["q"]).pop(0)
        slots["pre" if "pre" in roles_of(moved) else "rel"].append(moved)
    fronted = [p for p in slots["pp"] if p.kind in _FRONTABLE]
    if fronted and rng.random() < 0.15:  # a fronted prepositional phrase: "For my PC, I need ..."
        front = fronted[0]
        slots["pp"].remove(front)
        c.mark([front], "pp")
        opener_key = rng.choice(("fronted_need", "fronted_looking"))
        clause = "I need {np}" if opener_key == "fronted_need" else "I'm looking for {np}"
        phrase = _fill(rng.choice([f for f in _PP[front.kind] if f.startswith("for ")]), front.value)
        template, end, dets = f"{phrase}, {clause}", ".", "any"
    main = template.format(np=c.noun_phrase(slots["pre"], slots["pp"], slots["rel"], head_part, dets))
    follow: list[str] = []
    context = [p for p in slots["sent"] if p.kind in _CONTEXT and rng.random() < 0.5][:1]  # one at most
    for p in context:
        c.mark([p], "sentence")
    sent = [p for p in slots["sent"] if p not in context]
    while sent:
        k = 2 if len(sent) >= 2 and rng.random() < 0.5 else 1
        follow.append(c.sentence(sent[:k]))
        sent = sent[k:]
    follow += [c.question(p) for p in slots["q"]]
    rng.shuffle(follow)
    main = main[0].upper() + main[1:] + (end or ("." if follow else ""))
    # a preference first ("Ideally in black. I need ..."); never a question, nor a pronoun before its noun
    first_ok = follow and follow[0].endswith(".") and not main.endswith("?") and not _REFERS.search(follow[0])
    if first_ok and rng.random() < 0.15:
        follow, main = follow[1:], f"{follow[0]} {main}"
    text = " ".join([*(_fill(rng.choice(_CONTEXT[p.kind]), p.value) for p in context), main])
    for f in follow:
        joiner = rng.choice(_JOIN)
        if text.endswith(".") and f.endswith(".") and rng.random() < 0.3:  # coordinated follow-up clause
            text = text[:-1] + rng.choice(_AND_ALSO) + _lower_first(f)
        elif joiner != " " and text.endswith("."):  # "X - y" / "X; y": the joiner replaces the period
            text = text[:-1] + joiner + _lower_first(f)
        else:
            text = f"{text} {f}"
    roles = dict(c.roles)
    if joint is not None:  # each platform took the slot of the coordination
        for value in joint[1]:
            roles[value] = roles[joint[0]] | {"coordination"}
        del roles[joint[0]]
    return Realization(" ".join(text.split()), roles, opener_key)


def _coordinated_platforms(parts: Sequence[Part]) -> tuple[list[Part], tuple[str, tuple[str, ...]] | None]:
    """Two or more named platforms become one coordinated part ("for PS4 and PC", "I play on Mac and
    PC"): given separate slots they read as a contradiction ("For Mac ... any for PC?"). Returns the
    parts and (the joint value, the platforms' own values), or None when there is nothing to join."""
    named = [p for p in parts if p.kind == "platform"]
    if len(named) < 2:
        return list(parts), None
    values = tuple(p.value for p in named)
    joint = f"{', '.join(values[:-1])} and {values[-1]}"
    out = [p for p in parts if p.kind != "platform"]
    out.insert(parts.index(named[0]), Part("platform", joint, named[0].name))
    return out, (joint, values)


def skeleton(query: str, core_terms: Sequence[str]) -> str:
    """The query with its core terms masked, lower-cased and space-normalised: what two queries share
    when they differ only in the product they describe (longest terms masked first)."""
    out = query.lower()
    for t in sorted(core_terms, key=len, reverse=True):
        for a, b in reversed(term_spans(out, t)):
            out = f"{out[:a]}<T>{out[b:]}"
    return " ".join(out.split())


class RealizerGenerator:
    """Offline compositional realizer (no model): :func:`realize` plus per-candidate surface habits."""

    name = "realizer"

    def __init__(self, habits: SurfaceHabits | dict | None = None) -> None:
        self.habits = habits if isinstance(habits, SurfaceHabits) else SurfaceHabits(**(habits or {}))

    def generate(self, product: ProductSpec, n: int, seed: int) -> list[Candidate]:
        if len(product.core) != 5:
            return []
        rng = random.Random(derive_seed(seed, product.asin, "realizer"))
        terms = product.core_terms
        kinds = product.kinds if len(product.kinds) == len(product.core) else ()
        forms = product.forms if len(product.forms) == len(product.core) else terms
        parts = [
            Part(kinds[i] if kinds else attribute_role(name), forms[i], name)
            for i, (name, _) in enumerate(product.core)
        ]
        heads = title_heads(product.title, terms)
        out: list[Candidate] = []
        seen: set[str] = set()
        attempts = 0
        while len(out) < n and attempts < 20 * n:
            attempts += 1
            r = realize(parts, rng, heads)
            text = apply_habits(r.text, terms, self.habits, rng)
            if text not in seen:
                seen.add(text)
                out.append(Candidate(text=text, frame=r.opener, backend=self.name))
        return out
