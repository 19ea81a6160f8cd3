"""The slip channel: which letters a hand types when it slips, learned from real typing slips.

A noisy channel P(typed word | intended word) in the tradition of Kernighan, Church & Gale (1990) and
Brill & Moore (2000), at the letter level. The *mechanism* of a slip and *where in the word* it falls
come from the user's profile (:mod:`pqb.builders.writing_errors.profiles`); this module decides which
letters: among every form a mechanism can make in that part of the word, each form is weighted by

* **insertion / repetition** (one extra letter ``x`` in the gap between ``p`` and ``n``):
  ``rate_ins(p) * P(x | p, n)``;
* **deletion** of letter ``c``: ``rate_del(c, doubled)``, where *doubled* says whether ``c`` stands next
  to a copy of itself ("tanning" -> "taning" is the most common deletion people make);
* **substitution / keyboard_adjacent** (``c`` typed as ``x``): ``rate_sub(c) * P(x | c)``;
* **transposition** of ``ab``: ``rate_trans(ab)``.

Each ``rate`` is a slip count over the number of chances for it in the intended words (KCG's
normalisation), add-``a`` smoothed toward the operation's overall rate. Each letter distribution is the
observed counts smoothed (Dirichlet, strength :data:`LETTER_PRIOR_WEIGHT`) toward a prior built from
keyboard geometry and sound: the share of slips in each class (a copy of a neighbouring letter, a QWERTY
neighbour of the letters either side, a vowel, a sound-alike, a copy of a letter within 3 places,
anything else) is estimated from the same slips, then spread within the class (:data:`SPREAD`): over an
insertion's letters by their frequency in the intended words, over a substitution's evenly. So a letter
pair never seen in the data still gets the probability its class has in real typing, not a uniform one.
(Spread evenly, the insertion prior gave j, q, x and z 3.1% of the inserted letters on the very words
the channel was estimated from, whose slips insert them 0.7% of the time.)

A slip whose letter came from its own word's context (:func:`context_class`: a copy of a letter within 3
places, or an inserted copy or QWERTY neighbour of the *next* letter) is not counted as that letter: the
letter was chosen by a context the next word does not share, so "serail" for "serial" counted as "r for
i" would make an arbitrary letter of every later "i" slip. It counts as one slip of its class, spread
over the letters of that class where the channel is applied.

**Two-letter slips.** On a word long enough to take two edits (:func:`readability.max_distance`), a
share :attr:`SlipChannel.two_letter_rate` of the slips touch two letters. Their kinds
(:data:`TWO_LETTER_KINDS`) and where in the word they fall (96% of the labelled ones inside it, against
77% of single-letter slips) are their own: two adjacent letters dropped ("maintenance" -> "maintance"), a letter pair
typed twice ("Position" -> "Positition"), two letters two places apart exchanged ("Tolerance" ->
"Torelance"), or two single-letter slips close together ("glossary" -> "glosarry"). The rate and the kind
shares are counted from the estimation share's pairs at Damerau-Levenshtein distance 2 that are slips, not
renames ("Push" -> "Post", "register" -> "regist"): mined identifier fixes hold both, and no rule without
a dictionary tells them apart, so each such pair was read and labelled once
(:data:`TWO_LETTER_LABELS_FILE`, keyed by a hash of the pair, so the file holds no slip).

The slips are real: typos that programmers made in identifiers and fixed in a later commit (src-d
"Typos in Identifiers", ODbL 1.0; attribute "src-d/datasets, Typos in Identifiers"), read from
``settings.PQB_TYPOS_DIR`` (:func:`read_slips`), plus the character-level slips the detector recovers
from the domain's reviews. A salted hash of the repository name holds out :data:`HOLDOUT_SHARE` of the
repositories: they are never used to estimate the channel, only to check it (``pqb-build typo-study``).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz.distance import OSA, DamerauLevenshtein, Levenshtein

from pqb.builders.errors import MissingInputError
from pqb.builders.writing_errors.mechanisms import PHONETIC_CONFUSIONS, QWERTY_NEIGHBOURS, classify
from pqb.builders.writing_errors.readability import ONE_EDIT_UP_TO
from pqb.dataset import settings
from pqb.dataset.io import sha256_file
from pqb.dataset.schema import CHAR_MECHANISMS, POSITIONS, edit_position

log = logging.getLogger(__name__)

TYPOS_FILE = "srcd_typos_calibration.csv"
HOLDOUT_SALT = "pqb-typos-holdout-v1"
HOLDOUT_SHARE = 0.2
"""Share of repositories held out from estimation (a salted hash of the name decides, so it is stable)."""
RATE_PRIOR_WEIGHT = 20.0
"""Pseudo-chances behind each site rate's prior (the operation's overall rate)."""
LETTER_PRIOR_WEIGHT = 5.0
"""Pseudo-slips behind each letter distribution's class prior."""
SPREAD = {"ins": "frequency", "sub": "uniform"}
"""How a class's share is spread over its letters: in proportion to the letters' frequency in the
intended words, or evenly. Chosen per operation by likelihood on unseen repositories
(``typo_study.spread_likelihoods``: 5-fold cross-validation by repository within the estimation share,
mean log-probability of the typed letter): insertions -2.680 evenly, -2.582 by frequency; substitutions
-2.432 evenly, -2.518 by frequency. An inserted letter outside the word's context is mostly a common one
("e", "t", "s"), where a substituted one is a key or a sound away from the intended letter."""
SPREADS = ("uniform", "frequency")
CHANNEL_VERSION = 6
LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOWELS = frozenset("aeiou")
START, END = "^", "$"
DETECTOR = "detector:"
"""Source prefix of the slips the detector recovered from a domain's reviews."""
SPLIT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
"""Identifier words: ``UnkownSender`` -> ``Unkown``, ``Sender``; ``HTTPServr`` -> ``HTTP``, ``Servr``."""
INSERT_CLASSES = ("copy", "neighbour", "vowel", "nearby", "other")
SUBST_CLASSES = ("neighbour", "vowel", "sound", "nearby", "other")
NEARBY = 3
"""A letter within this many places of the slip counts as a *nearby copy* (an anticipation or
perseveration: the hand types a letter it has just typed or is about to type)."""
TWO_LETTER_KINDS = ("drop", "repeat", "swap", "pair")
"""Kinds of two-letter slips (:func:`two_letter_kind`), in the order they are recognised."""
TWO_LETTER_FROM = ONE_EDIT_UP_TO + 1
"""Words of at least this many letters may take a two-letter slip (the readability rule's bound)."""
TWO_LETTER_LABELS_FILE = Path(__file__).with_name("two_letter_labels.json")


@dataclass(frozen=True)
class Slip:
    """One real slip: the ``typed`` word, the ``intended`` word, and where it came from (a repository
    name, or ``detector:<domain>``)."""

    typed: str
    intended: str
    source: str


def holdout(source: str) -> bool:
    """Is this source in the held-out share? (A salted sha256 of its name: stable on every machine.)"""
    h = int.from_bytes(hashlib.sha256(f"{HOLDOUT_SALT}:{source}".encode()).digest()[:8], "big")
    return h / 2**64 < HOLDOUT_SHARE


def typos_path(path: Path | str | None = None) -> Path:
    """The calibration CSV (``path``, a folder holding it, or ``settings.PQB_TYPOS_DIR``); one clear error
    when it is missing."""
    p = Path(path) if path is not None else Path(settings.PQB_TYPOS_DIR)
    if p.is_dir():
        p = p / TYPOS_FILE
    if not p.is_file():
        raise MissingInputError(
            f"No real-slip calibration file at {p}: the slip channel is estimated from it. Put "
            f"{TYPOS_FILE} (columns repository,wrong,correct,...) there or set PQB_TYPOS_DIR to its folder."
        )
    return p


def read_slips(path: Path | str | None = None) -> list[Slip]:
    """Word-level slips from the calibration CSV: each identifier pair is split into words
    (:data:`SPLIT`), and only pairs with as many words on both sides and exactly one differing word
    (ignoring case) are kept, as that word pair. Rows without a repository, a wrong or a correct field
    are skipped, counted in one warning with the first ``file:line``.

    Each distinct slip counts once per repository (its first row; case ignored). The file has one row
    per fixed *line*, so one typo copied across a codebase, or one rename mined as a "typo" fix
    ("vatricia" -> "patricia" on 7 lines of one repository), would otherwise weigh as many slips as it
    has lines: 22% of the kept rows repeat a (repository, typed, intended) triple."""
    out: list[Slip] = []
    seen: set[tuple[str, str, str]] = set()
    incomplete: list[int] = []
    file = typos_path(path)
    with open(file, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        for row in reader:
            repo, wrong, correct = row.get("repository"), row.get("wrong"), row.get("correct")
            if not (repo and wrong and correct):
                incomplete.append(reader.line_num)
                continue
            a, b = SPLIT.findall(wrong), SPLIT.findall(correct)
            if len(a) != len(b):
                continue
            diff = [(x, y) for x, y in zip(a, b, strict=True) if x.lower() != y.lower()]
            if len(diff) == 1 and diff[0][0].isalpha() and diff[0][1].isalpha():
                key = (repo, diff[0][0].lower(), diff[0][1].lower())
                if key not in seen:
                    seen.add(key)
                    out.append(Slip(diff[0][0], diff[0][1], repo))
    if incomplete:
        log.warning("warning: %d row(s) of %s lack a repository, wrong or correct field and are skipped "
                    "(first at %s:%d)", len(incomplete), file.name, file, incomplete[0])  # fmt: skip
    return out


def single_edit(typed: str, intended: str) -> tuple[str, ...] | None:
    """The one letter operation that turns ``intended`` into ``typed`` (case ignored), as
    ``("ins", p, x, n)``, ``("del", c, doubled)``, ``("sub", c, x)`` or ``("trans", a, b)``;
    ``None`` for anything else (two or more edits, a real-word swap of several letters)."""
    t, w = typed.lower(), intended.lower()
    if t == w or not t or not w:
        return None
    if len(t) == len(w) and OSA.distance(w, t) == 1 and Levenshtein.distance(w, t) == 2:
        i = next(k for k in range(len(w)) if w[k] != t[k])
        return ("trans", w[i], w[i + 1])
    ops = Levenshtein.editops(w, t)
    if len(ops) != 1:
        return None
    op = ops[0]
    if op.tag == "insert":
        j = op.dest_pos
        return ("ins", t[j - 1] if j > 0 else START, t[j], t[j + 1] if j + 1 < len(t) else END)
    if op.tag == "delete":
        i = op.src_pos
        c = w[i]
        return ("del", c, str((i > 0 and w[i - 1] == c) or (i + 1 < len(w) and w[i + 1] == c)))
    return ("sub", w[op.src_pos], t[op.dest_pos])


def two_letter_kind(typed: str, intended: str) -> str | None:
    """The :data:`TWO_LETTER_KINDS` member a pair at Damerau-Levenshtein distance 2 (case ignored) is:
    ``drop`` (two adjacent letters missing), ``repeat`` (the two letters before a point typed again),
    ``swap`` (the letters at ``i`` and ``i + 2`` exchanged), else ``pair`` (two single-letter slips);
    ``None`` for any other pair (a single-letter slip, a larger change)."""
    t, w = typed.lower(), intended.lower()
    if single_edit(t, w) is not None or DamerauLevenshtein.distance(t, w) != 2:
        return None
    n = len(w)
    if len(t) == n - 2 and any(t == w[:i] + w[i + 2 :] for i in range(n - 1)):
        return "drop"
    if len(t) == n + 2 and any(t == w[:i] + w[i - 2 : i] + w[i:] for i in range(2, n + 1)):
        return "repeat"
    if len(t) == n and any(t == w[:i] + w[i + 2] + w[i + 1] + w[i] + w[i + 3 :] for i in range(n - 2)):
        return "swap"
    return "pair"


def pair_key(typed: str, intended: str) -> str:
    """The key of a ``(typed, intended)`` pair in the two-letter labels (case ignored)."""
    return hashlib.sha1(f"{intended.lower()}\t{typed.lower()}".encode()).hexdigest()[:16]


@functools.cache
def two_letter_labels() -> dict[str, str]:
    """``pair_key -> "slip" | "other"`` for the calibration pairs at distance 2 (see the module docstring)."""
    return dict(json.loads(TWO_LETTER_LABELS_FILE.read_text(encoding="utf-8"))["labels"])


def insert_class(p: str, x: str, n: str, nearby: str = "") -> str:
    """Which :data:`INSERT_CLASSES` an inserted ``x`` between ``p`` and ``n`` belongs to (first match);
    ``nearby``: the intended letters within :data:`NEARBY` places of the gap."""
    if x in (p, n):
        return "copy"
    if x in QWERTY_NEIGHBOURS.get(p, ()) or x in QWERTY_NEIGHBOURS.get(n, ()):
        return "neighbour"
    if x in VOWELS:
        return "vowel"
    return "nearby" if x in nearby else "other"


def subst_class(c: str, x: str, nearby: str = "") -> str:
    """Which :data:`SUBST_CLASSES` typing ``x`` for ``c`` belongs to (first match); ``nearby``: the other
    intended letters within :data:`NEARBY` places."""
    if x in QWERTY_NEIGHBOURS.get(c, ()):
        return "neighbour"
    if c in VOWELS and x in VOWELS:
        return "vowel"
    if x in PHONETIC_CONFUSIONS.get(c, ()):
        return "sound"
    return "nearby" if x in nearby else "other"


def context_class(e: tuple[str, ...], nearby: str) -> str | None:
    """The class of a slip whose letter its word's context chose (so it says nothing about the letter
    elsewhere): a copy of a letter within :data:`NEARBY` places, or an inserted copy or QWERTY neighbour
    of the next letter only. ``None`` for a slip whose letter depends only on the letter it is keyed by
    (the intended letter, or the letter before the gap): a neighbour, a vowel, a sound-alike, a doubling."""
    if e[0] == "sub":
        return "nearby" if subst_class(e[1], e[2], nearby) == "nearby" else None
    p, x, n = e[1], e[2], e[3]
    k = insert_class(p, x, n, nearby)
    if k == "nearby" or (k == "copy" and x != p):
        return k
    return k if k == "neighbour" and x not in QWERTY_NEIGHBOURS.get(p, ()) else None


def edit_site(typed: str, intended: str) -> int:
    """Where in ``intended`` a single-letter slip happened: the first index at which the words differ
    (for an insertion, the gap before that letter)."""
    t, w = typed.lower(), intended.lower()
    return next((k for k in range(min(len(t), len(w))) if t[k] != w[k]), min(len(t), len(w)))


def nearby_letters(intended: str, site: int, *, inserted: bool) -> str:
    """The intended letters within :data:`NEARBY` places of a slip at ``site`` (a gap for insertions),
    sorted and unique: the letters an anticipation or perseveration copies."""
    w = intended.lower()
    right = w[site : site + NEARBY] if inserted else w[site + 1 : site + 1 + NEARBY]
    return "".join(sorted(set(w[max(0, site - NEARBY) : site] + right)))


def _class_prior(
    members: Mapping[str, list[str]], shares: Mapping[str, float], spread: Mapping[str, float]
) -> dict[str, float]:
    """A letter distribution that gives each class its ``share``, spread over the class's letters in
    proportion to ``spread`` (a class with no letter here passes its share to the others in proportion)."""
    live = {k: v for k, v in members.items() if v}
    total = sum(shares[k] for k in live) or 1.0
    return {x: shares[k] / total * spread[x] / sum(spread[y] for y in v) for k, v in live.items() for x in v}


def _shares(counts: Counter[str], classes: Iterable[str]) -> dict[str, float]:
    keys = list(classes)
    n = sum(counts[k] for k in keys)
    return {k: (counts[k] + 1.0) / (n + len(keys)) for k in keys}


class SlipChannel:
    """Letter-level slip weights estimated from :class:`Slip` records (see the module docstring)."""

    def __init__(
        self,
        slips: Iterable[Slip],
        *,
        provenance: Mapping[str, Any] | None = None,
        labels: Mapping[str, str] | None = None,
        spread: Mapping[str, str] | None = None,
    ) -> None:
        labels = two_letter_labels() if labels is None else labels
        spread = SPREAD if spread is None else spread
        self.slips_used = 0
        self.two_letter_n: Counter[str] = Counter()  # two-letter slips by kind, on long words
        self.two_letter_pos: Counter[str] = Counter()  # ... and by where in the word they fall
        long_single = 0  # single-letter slips on long words
        self.ops: Counter[tuple[str, ...]] = Counter()
        chances: Counter[tuple[str, ...]] = Counter()
        op_count: Counter[str] = Counter()
        self.insert_shares_n: Counter[str] = Counter()
        self.subst_shares_n: Counter[str] = Counter()
        self._letter: Counter[tuple[str, ...]] = Counter()
        self._bound: Counter[tuple[str, ...]] = Counter()
        seen: list[Slip] = []
        for s in slips:
            seen.append(s)
            e = single_edit(s.typed, s.intended)
            calibration_long = len(s.intended) >= TWO_LETTER_FROM and not s.source.startswith(DETECTOR)
            if e is None:
                kind = two_letter_kind(s.typed, s.intended) if s.intended.isalpha() else None
                if calibration_long and kind and labels.get(pair_key(s.typed, s.intended)) == "slip":
                    self.two_letter_n[kind] += 1
                    self.two_letter_pos[edit_position(s.intended, s.typed)] += 1
                continue
            if not s.intended.isalpha():
                continue
            long_single += calibration_long
            self.slips_used += 1
            self.ops[e] += 1
            op_count[e[0]] += 1
            bound = None
            if e[0] in ("ins", "sub"):
                near = nearby_letters(s.intended, edit_site(s.typed, s.intended), inserted=e[0] == "ins")
                if e[0] == "ins":
                    self.insert_shares_n[insert_class(e[1], e[2], e[3], near)] += 1
                else:
                    self.subst_shares_n[subst_class(e[1], e[2], near)] += 1
                bound = context_class(e, near)
            w = s.intended.lower()
            for i, c in enumerate(w):
                chances[("sub", c)] += 1
                chances[("del", c, str(_doubled(w, i)))] += 1
                chances[("ins", w[i - 1] if i else START)] += 1
                if i + 1 < len(w):
                    chances[("trans", c, w[i + 1])] += 1
            chances[("ins", w[-1])] += 1
            if bound is not None:
                self._bound[(e[0], e[1], bound)] += 1
            elif e[0] in ("ins", "sub"):
                self._letter[(e[0], e[1], e[2])] += 1
        # overall rate of each operation per chance, the prior every site rate is smoothed toward
        n_letters = sum(v for k, v in chances.items() if k[0] == "sub")
        n_bigrams = sum(v for k, v in chances.items() if k[0] == "trans")
        self._base = {
            "ins": op_count["ins"] / max(1, n_letters + self.slips_used),
            "del": op_count["del"] / max(1, n_letters),
            "sub": op_count["sub"] / max(1, n_letters),
            "trans": op_count["trans"] / max(1, n_bigrams),
        }
        self._chances = chances
        letter_freq = {x: chances[("sub", x)] + 1.0 for x in LETTERS}
        self._spread = {
            op: letter_freq if how == "frequency" else dict.fromkeys(LETTERS, 1.0) for op, how in spread.items()
        }
        self._site: Counter[tuple[str, ...]] = Counter()
        for e, k in self.ops.items():
            self._site[e[:2] if e[0] in ("ins", "sub") else e] += k
        self.population = population_counts(s for s in seen if not s.source.startswith(DETECTOR))
        self.insert_shares = _shares(self.insert_shares_n, INSERT_CLASSES)
        self.subst_shares = _shares(self.subst_shares_n, SUBST_CLASSES)
        n2 = sum(self.two_letter_n.values())
        # the share of the real slips on words of TWO_LETTER_FROM+ letters that touch two letters (the
        # detector's slips are left out: it recovers single-letter slips only)
        self.two_letter_rate = n2 / (n2 + long_single) if n2 + long_single else 0.0
        self.two_letter_shares = _shares(self.two_letter_n, TWO_LETTER_KINDS)
        self.two_letter_positions = _shares(self.two_letter_pos, POSITIONS)
        self.provenance = dict(provenance or {})

    # -- weights -----------------------------------------------------------------------------------

    def _rate(self, key: tuple[str, ...]) -> float:
        a = RATE_PRIOR_WEIGHT
        return (self._site[key] + a * self._base[key[0]]) / (self._chances[key] + a)

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one channel per build; bounded
    def insert_letter(self, p: str, n: str, nearby: str = "") -> dict[str, float]:
        """P(x | gap between ``p`` and ``n``, letters ``nearby``): observed insertions after ``p``
        smoothed toward the class prior."""
        members: dict[str, list[str]] = {k: [] for k in INSERT_CLASSES}
        for x in LETTERS:
            members[insert_class(p, x, n, nearby)].append(x)
        prior = _class_prior(members, self.insert_shares, self._spread["ins"])
        seen = self._seen("ins", p, members)
        total = sum(seen.values()) + LETTER_PRIOR_WEIGHT
        return {x: (seen[x] + LETTER_PRIOR_WEIGHT * prior.get(x, 0.0)) / total for x in LETTERS}

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one channel per build; bounded
    def substitute_letter(self, c: str, nearby: str = "") -> dict[str, float]:
        """P(x typed | ``c`` intended, letters ``nearby``), ``x != c``: observed substitutions smoothed
        toward the class prior."""
        members: dict[str, list[str]] = {k: [] for k in SUBST_CLASSES}
        for x in LETTERS:
            if x != c:
                members[subst_class(c, x, nearby)].append(x)
        prior = _class_prior(members, self.subst_shares, self._spread["sub"])
        seen = self._seen("sub", c, members)
        total = sum(seen.values()) + LETTER_PRIOR_WEIGHT
        return {x: (seen[x] + LETTER_PRIOR_WEIGHT * prior.get(x, 0.0)) / total for x in seen}

    def _seen(self, op: str, at: str, members: Mapping[str, list[str]]) -> dict[str, float]:
        """Observed slips of ``op`` at ``at`` as counts per letter here: a letter's own slips, plus each
        context-bound slip (:func:`context_class`) spread over its class's letters in this context as the
        class prior spreads it (none when the class has no letter here)."""
        here = {x for v in members.values() for x in v}
        seen = {x: float(self._letter[(op, at, x)]) for x in LETTERS if x in here}
        spread = self._spread[op]
        for k, v in members.items():
            n = self._bound[(op, at, k)]
            total = sum(spread[y] for y in v)
            for x in v if n else ():
                seen[x] += n * spread[x] / total
        return seen

    def weight(self, intended: str, typed: str) -> float:
        """The channel's weight of one single-letter slip ``intended -> typed`` (0 for anything else).
        Only ratios between forms of one word and mechanism matter: the injector normalises them."""
        e = single_edit(typed, intended)
        if e is None:
            return 0.0
        if e[0] in ("ins", "sub"):
            near = nearby_letters(intended, edit_site(typed, intended), inserted=e[0] == "ins")
            if e[0] == "ins":
                return self._rate(("ins", e[1])) * self.insert_letter(e[1], e[3], near)[e[2]]
            return self._rate(("sub", e[1])) * self.substitute_letter(e[1], near).get(e[2], 0.0)
        return self._rate(e)

    def digest(self) -> str:
        """A short content hash of everything the weights depend on (part of the pair stage's key)."""
        h = hashlib.sha256(
            repr(
                (
                    CHANNEL_VERSION,
                    sorted(self.ops.items()),
                    sorted(self._chances.items()),
                    sorted(self._bound.items()),
                    sorted(self.two_letter_n.items()),
                    sorted(self.two_letter_pos.items()),
                    self.two_letter_rate,
                )
            ).encode()
        )
        return h.hexdigest()[:16]

    def settings(self) -> dict[str, Any]:
        return {
            "version": CHANNEL_VERSION,
            "slips": self.slips_used,
            "two_letter_slips": dict(sorted(self.two_letter_n.items())),
            "digest": self.digest(),
            **self.provenance,
        }


def _doubled(w: str, i: int) -> bool:
    return (i > 0 and w[i - 1] == w[i]) or (i + 1 < len(w) and w[i + 1] == w[i])


def population_slips(
    path: Path | str | None = None, detector: Iterable[tuple[str, str]] = (), domain: str = ""
) -> tuple[list[Slip], dict[str, Any]]:
    """The slips the population channel is estimated from: the calibration file's estimation share (its
    held-out repositories excluded) plus the detector's ``(typed, intended)`` slips of the domain; with a
    provenance record (file, sha256, counts) for the stage key and the card."""
    p = typos_path(path)
    real = [s for s in read_slips(p) if not holdout(s.source)]
    det = [Slip(t, w, f"{DETECTOR}{domain}") for t, w in detector]
    prov = {
        "typos_file": p.name,
        "typos_sha256": sha256_file(p),
        "real_slips": len(real),
        "detector_slips": len(det),
    }
    return real + det, prov


def letter_case(word: str, site: int, letter: str, *, inserted: bool) -> str:
    """``letter`` in the case its neighbours have. An inserted letter is upper case inside an upper-case
    word ("USB" -> "UXSB") or where every letter beside it is upper case (between two capitals, or after
    a word's final capital: "NEXiLUX" -> "NEXiLUXX", not "NEXiLUXx"), except before a capitalised word's
    first letter; a substituted one keeps the case of the letter it replaces. (No shift slips: a letter
    capitalised by a held shift key is not injected.)"""
    if not inserted:
        return letter.upper() if word[site].isupper() else letter
    if site == 0 and not word.isupper():
        return letter
    near = [word[k] for k in (site - 1, site) if 0 <= k < len(word)]
    return letter.upper() if all(ch.isupper() for ch in near) else letter


def population_counts(slips: Iterable[Slip]) -> dict[str, dict[str, int]]:
    """Mechanism and position-in-the-word counts of real slips, by the same rules as the detector's
    (:func:`classify`, :func:`edit_position`): what the population prior adds to the detected slips'
    counts (:meth:`ErrorProfiles.with_population`). Slips no character-level mechanism explains (two
    letters, renames) are not counted."""
    mech: Counter[str] = Counter()
    pos: Counter[str] = Counter()
    for s in slips:
        m = classify(s.typed, s.intended)
        if m in CHAR_MECHANISMS:
            mech[m] += 1
            pos[edit_position(s.intended, s.typed)] += 1
    return {"mechanisms": dict(sorted(mech.items())), "positions": dict(sorted(pos.items()))}


def detected_slips(edits_path: Path) -> list[tuple[str, str]]:
    """``(typed, intended)`` of every character-level slip in a domain's ``errors/edits.parquet`` (none
    when the file is absent: a channel from the calibration slips alone)."""
    if not edits_path.is_file():
        return []
    import pyarrow.parquet as pq

    cols = ["original", "corrected", "char_level", "mechanism"]
    rows = pq.read_table(edits_path, columns=cols).to_pylist()
    return [
        (r["original"], r["corrected"]) for r in rows if r["char_level"] and r["mechanism"] in CHAR_MECHANISMS
    ]


@functools.lru_cache(maxsize=8)
def _channel(path: str, sha256: str, detector: tuple[tuple[str, str], ...], domain: str) -> SlipChannel:
    slips, prov = population_slips(path, detector, domain)  # ``sha256`` only keys the memo
    return SlipChannel(slips, provenance=prov)


def population_channel(
    detector: Iterable[tuple[str, str]] = (), *, domain: str = "", path: Path | str | None = None
) -> SlipChannel:
    """The population slip channel of a domain: calibration slips (estimation share) plus the domain's
    detected slips; built once per process and input.

    The calibration file is keyed by its sha256, not its path alone: one process (``pqb-build all`` over
    several domains, a test suite) kept the channel of a file since rewritten, and the pair stage then
    injected from the old slips under the old file's sha256 in its key (1983 slips for a file of 1007)."""
    p = typos_path(path)
    return _channel(str(p), sha256_file(p), tuple(detector), domain)
