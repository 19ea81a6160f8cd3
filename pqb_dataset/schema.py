"""The PQB dataset schema: the one contract shared by ``builders`` (writers) and ``harness`` (readers).

Configs per domain ``d`` (docs/design.md §2):

* ``d`` — benchmark rows, split ``test``: one row per (user, target product). The two rows sharing a
  ``pair_id`` are a *syntactic pair* (same ``asin``, different users). A row whose ``error_query`` is
  not null is an *error pair* (its ``query`` against its ``error_query``).
* ``d-corpus`` — ``id`` (parent_asin), ``title``, ``text``: every product of the domain with a title;
  BEIR/MTEB's corpus view: ``text`` is the body only (never repeats the title) and a retriever reads
  :func:`document_string` (title + " " + text), as MTEB and BEIR join them.
* ``d-queries`` / ``d-qrels`` — MTEB/BEIR views: ``id, text`` and ``query-id, corpus-id, score``.
* ``d-users`` — per-user syntactic Gaussian and error profile.
* ``d-release`` — the authors' published queries imported into the row schema (no corpus, no core terms).

Edits: ``error_edits[i].start/end`` are character offsets into the *clean* ``query``;
``apply_edits(query, edits) == error_query``. ``error_chain`` is the row's ordered chain of up to 3
edits, sampled one after another from the user's process; ``error_edits`` is its prefix of the user's
personal dose, and any prefix ``error_chain[:k]`` is a valid error query (the harness's dose tasks).
Each edit touches one word (at most one edit per word) and records its ``location`` class
(:data:`LOCATIONS`) and its ``position`` in the word (:data:`POSITIONS`, :func:`edit_position`). ``profile_evidence`` counts the user's own recovered slips behind the row's
profile; ``backoff`` marks users below the evidence floor (their profile is mostly the population's). Core-term occurrences are counted by
:func:`count_term` (case-insensitive, whole-word); the builders' lexical filter and the invariant
check both use it, so "same five core terms, same frequencies" means one thing everywhere.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = "1.3"
"""1.1 (issue 12): ``error_edits[i].location``, the ordered ``error_chain``, ``profile_evidence``, ``backoff``.
1.2: ``error_edits[i].position``, where in the word the edit falls (:data:`POSITIONS`, :func:`edit_position`).
1.3 (issue 29): the mechanism ``two_letter`` (:data:`MULTI_LETTER_MECHANISMS`)."""

N_CORE_TERMS = 5
MAX_EDITS = 3
SPLIT = "test"

#: Injectable character-level error mechanisms (profiled and injected).
CHAR_MECHANISMS: tuple[str, ...] = (
    "keyboard_adjacent",
    "substitution",
    "transposition",
    "repetition",
    "insertion",
    "deletion",
    "homophone",
)
#: Where an edit falls in the query (``error_edits[i].location``), most specific class first.
LOCATIONS: tuple[str, ...] = ("brand", "core_term", "title_word", "content_word", "function_word")
#: Where in the word an edit falls (``error_edits[i].position``, :func:`edit_position`).
POSITIONS: tuple[str, ...] = ("first", "interior", "last")
#: Words of at most this many letters are never edited (their identity is too fragile to recover).
MIN_EDIT_LETTERS = 3
#: Surface mechanisms: profiled, never injected.
SURFACE_MECHANISMS: tuple[str, ...] = ("case", "apostrophe")
#: Slips that touch two letters of one word: injected at the population's rate, never profiled per user
#: (the detector recovers single-letter slips only).
MULTI_LETTER_MECHANISMS: tuple[str, ...] = ("two_letter",)
MECHANISMS: tuple[str, ...] = CHAR_MECHANISMS + SURFACE_MECHANISMS + MULTI_LETTER_MECHANISMS

DOMAINS: tuple[str, ...] = ("baby_products", "musical_instruments", "video_games")
"""The paper's three domains. Builders may produce more; config names are ``snake_case`` categories."""


def domain_from_category(category: str) -> str:
    """``Video_Games`` -> ``video_games`` (the Amazon Reviews 2023 category file stem to a config name)."""
    return category.strip().lower()


def category_from_domain(domain: str) -> str:
    """``video_games`` -> ``Video_Games``; the inverse of :func:`domain_from_category` for official names."""
    special = {"cds_and_vinyl": "CDs_and_Vinyl", "movies_and_tv": "Movies_and_TV"}
    if domain in special:
        return special[domain]
    return "_".join(w if w == "and" else w.capitalize() for w in domain.split("_"))


def query_id(row_id: str, error: bool = False) -> str:
    """Query id in the BEIR views: the row id for the clean query, ``<row id>_error`` for its error form."""
    return f"{row_id}_error" if error else row_id


# --------------------------------------------------------------------------------------------------
# Arrow schemas (column order is the published order)
# --------------------------------------------------------------------------------------------------

EDIT_TYPE = pa.struct(
    [
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("original", pa.string()),
        ("edited", pa.string()),
        ("mechanism", pa.string()),
        ("location", pa.string()),
        ("position", pa.string()),
    ]
)
ATTRIBUTE_TYPE = pa.struct([("name", pa.string()), ("value", pa.string())])
SYNTAX_TYPE = pa.struct(
    [
        ("own_loglik", pa.float64()),
        ("own_d2", pa.float64()),
        ("partner_d2", pa.float64()),
        ("threshold", pa.float64()),
        ("partner_threshold", pa.float64()),
        ("pair_distance", pa.float64()),
    ]
)
MECHANISM_PROB_TYPE = pa.struct([("mechanism", pa.string()), ("count", pa.int64()), ("prob", pa.float64())])

ROWS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("domain", pa.string()),
        ("asin", pa.string()),
        ("user_id", pa.string()),
        ("pair_id", pa.string()),
        ("query", pa.string()),
        ("error_query", pa.string()),
        ("error_edits", pa.list_(EDIT_TYPE)),
        ("error_chain", pa.list_(EDIT_TYPE)),
        ("profile_evidence", pa.int64()),
        ("backoff", pa.bool_()),
        ("core_terms", pa.list_(pa.string())),
        ("protected_terms", pa.list_(pa.string())),
        ("attributes", pa.list_(ATTRIBUTE_TYPE)),
        ("syntax", SYNTAX_TYPE),
    ]
)
CORPUS_SCHEMA = pa.schema([("id", pa.string()), ("title", pa.string()), ("text", pa.string())])
QUERIES_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string())])
QRELS_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", pa.int32())])
USERS_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("domain", pa.string()),
        ("mu", pa.list_(pa.float64())),
        ("v", pa.list_(pa.float64())),
        ("lam", pa.float64()),
        ("sigma2", pa.list_(pa.float64())),
        ("threshold", pa.float64()),
        ("threshold_kind", pa.string()),
        ("audit_valid", pa.bool_()),
        ("n_sentences", pa.int64()),
        ("n_profile_sentences", pa.int64()),
        ("n_heldout_sentences", pa.int64()),
        ("n_tokens", pa.int64()),
        ("n_char_errors", pa.int64()),
        ("error_rate", pa.float64()),
        ("mechanisms", pa.list_(MECHANISM_PROB_TYPE)),
    ]
)

CONFIG_SCHEMAS: dict[str, pa.Schema] = {
    "rows": ROWS_SCHEMA,
    "corpus": CORPUS_SCHEMA,
    "queries": QUERIES_SCHEMA,
    "qrels": QRELS_SCHEMA,
    "users": USERS_SCHEMA,
    "release": ROWS_SCHEMA,
}


def config_name(domain: str, kind: str) -> str:
    """Config name on the Hub: ``video_games`` for rows, ``video_games-corpus`` etc. for the others."""
    return domain if kind == "rows" else f"{domain}-{kind}"


def config_kind(name: str) -> tuple[str, str]:
    """Inverse of :func:`config_name`: ``video_games-corpus`` -> (``video_games``, ``corpus``)."""
    domain, _, kind = name.partition("-")
    return domain, kind or "rows"


# --------------------------------------------------------------------------------------------------
# Text helpers that define the invariants
# --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def _term_pattern(term: str) -> re.Pattern[str]:
    # Cached: validating 5,000 rows asks for the same few thousand terms 125,000 times.
    # Case-insensitive matching on the original text, never on ``text.lower()``: lower-casing can
    # change a string's length ("İ" -> "i̇"), which would shift every span after it.
    words = term.strip().split()
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w]){body}(?![\w])", re.IGNORECASE)


DOCUMENT_SEPARATOR = " "
"""What joins a document's title and text: BEIR's and MTEB's separator, so all three score one string."""


def document_string(title: str | None, text: str | None, sep: str = DOCUMENT_SEPARATOR) -> str:
    """The string a retriever reads for one corpus document: ``title + sep + text``, stripped.

    MTEB (``(title + " " + text).strip()``, or the text alone without a title) and BEIR's encoders join
    the corpus view's fields this way; the builders check core terms against the same string, and the
    harness builds every retriever's document from it, so PQB, MTEB and BEIR see identical documents.
    """
    title, text = title or "", text or ""
    return (title + sep + text).strip() if title else text.strip()


def count_term(text: str, term: str) -> int:
    """Occurrences of ``term`` in ``text``: case-insensitive, whole words, any whitespace between words."""
    if not term.strip():
        return 0
    return len(_term_pattern(term).findall(text))


def term_spans(text: str, term: str) -> list[tuple[int, int]]:
    """Character spans of every occurrence of ``term`` in ``text`` (same matching as :func:`count_term`)."""
    if not term.strip():
        return []
    return [m.span() for m in _term_pattern(term).finditer(text)]


_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")


def words(text: str) -> list[str]:
    """Lower-cased word tokens, the unit of protection for brand/title words."""
    return [w.lower() for w in _WORD.findall(text)]


def edit_position(intended: str, written: str) -> str:
    """Where in the word ``intended`` the slip that wrote ``written`` falls: ``first``, ``interior`` or ``last``.

    One canonical alignment, shared by the profiles (recovered slips), the injector and the check:
    ``p`` is the length of the common prefix (case-insensitive), then ``s`` the common suffix of what is
    left, so the changed letters of ``intended`` are ``[p, len(intended) - s)``. ``first``: ``p == 0``, the
    word does not start with its intended first letter (it was changed, dropped, swapped with the second,
    or something was typed before it); ``last``: otherwise ``s == 0``, the edit touches the final letter
    (changed, dropped, swapped with the one before, or something typed after it); ``interior``: first and
    last letters both intact. The prefix is matched first, so a doubled first letter ("hhello") or a
    dropped letter of a double ("aardvark" -> "ardvark") leaves the first letter correct: ``interior``.
    Three buckets because what is known about where people slip is about the ends (the first letter is
    rarely wrong; see docs/design.md §9), and because a user has a handful of slips, not hundreds.
    """
    a, b = intended.lower(), written.lower()
    n = min(len(a), len(b))
    p = 0
    while p < n and a[p] == b[p]:
        p += 1
    s = 0
    while s < n - p and a[-1 - s] == b[-1 - s]:
        s += 1
    return "first" if p == 0 else "last" if s == 0 else "interior"


def apply_edits(query: str, edits: Sequence[Mapping[str, Any]]) -> str:
    """Apply non-overlapping edits (offsets into ``query``) and return the edited string."""
    out, pos = [], 0
    for e in sorted(edits, key=lambda e: int(e["start"])):
        start, end = int(e["start"]), int(e["end"])
        if start < pos:
            raise ValueError(f"overlapping edits at offset {start} in {query!r}")
        out.append(query[pos:start])
        out.append(str(e["edited"]))
        pos = end
    out.append(query[pos:])
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# Validation: report every violation, never only the first
# --------------------------------------------------------------------------------------------------


@dataclass
class Violation:
    config: str
    row: int | None
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"{self.config}[{self.row}]" if self.row is not None else self.config
        return f"{where}: {self.rule}: {self.message}"


@dataclass
class ValidationReport:
    """All violations found, plus counts of what was checked. ``ok`` is true when nothing failed."""

    violations: list[Violation] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.violations

    def add(self, config: str, row: int | None, rule: str, message: str) -> None:
        self.violations.append(Violation(config, row, rule, message))

    def extend(self, other: ValidationReport) -> None:
        self.violations.extend(other.violations)
        self.checked.update(other.checked)

    def by_rule(self) -> Counter[str]:
        return Counter(v.rule for v in self.violations)

    def summary(self, max_lines: int = 20) -> str:
        lines = [f"checked: {dict(sorted(self.checked.items()))}"]
        if self.ok:
            lines.append("OK: no violations")
        else:
            lines.append(f"{len(self.violations)} violation(s): {dict(sorted(self.by_rule().items()))}")
            lines += [f"  {v}" for v in self.violations[:max_lines]]
            if len(self.violations) > max_lines:
                lines.append(f"  ... {len(self.violations) - max_lines} more")
        return "\n".join(lines)


def validate_table(table: pa.Table, kind: str, config: str | None = None) -> ValidationReport:
    """Check a table's columns and types against the schema of ``kind`` (``rows``, ``corpus``, ...)."""
    report = ValidationReport()
    config = config or kind
    expected = CONFIG_SCHEMAS[kind]
    report.checked[f"{kind}_tables"] += 1
    have = {f.name: f.type for f in table.schema}
    for f in expected:
        if f.name not in have:
            report.add(config, None, "missing_column", f"column {f.name!r} ({f.type}) is missing")
        elif have[f.name] != f.type and not (pa.types.is_null(have[f.name])):
            report.add(config, None, "column_type", f"column {f.name!r} is {have[f.name]}, expected {f.type}")
    for name in have:
        if name not in expected.names:
            report.add(config, None, "unknown_column", f"column {name!r} is not in the {kind} schema")
    return report


def check_rows(
    rows: Iterable[Mapping[str, Any]],
    *,
    config: str = "rows",
    require_core_terms: bool = True,
    corpus_ids: AbstractSet[str] | None = None,
    release: bool = False,
) -> ValidationReport:
    """Check PQB's invariants on benchmark rows; every violated rule of every row is reported.

    Rules: ids unique; ``pair_id`` groups hold rows of one ``asin`` from distinct users; each row has
    5 core terms (unless ``require_core_terms`` is false, as for the authors' release), each present in
    its query, with the same frequency in both queries of a syntactic pair; ``error_edits`` reproduce
    ``error_query`` from ``query`` and are a prefix of ``error_chain``, are at most 3, use known
    mechanisms, edit one word each and never a protected token, and record the ``position`` bucket their
    words give (required on rows with an ``error_chain``; see :func:`_check_error_side`); targets
    are in the corpus. An error row of a built config must carry non-empty ``error_edits`` and
    ``error_chain``; only a ``release`` config (the authors' queries, edits diffed, no chain) may lack
    them, and such rows are counted under ``release_error_rows_unannotated``. A typo may fall on a core
    term: the need stays fixed because the word stays readable, which ``pqb-build check`` verifies (no
    corrector: issue 29).
    """
    report = ValidationReport()
    rows = list(rows)
    ids = Counter(r["id"] for r in rows)
    for i, r in enumerate(rows):
        report.checked["rows"] += 1
        if ids[r["id"]] > 1:
            report.add(config, i, "duplicate_id", f"id {r['id']!r} appears {ids[r['id']]} times")
        query = r.get("query") or ""
        if not query.strip():
            report.add(config, i, "empty_query", "query is empty")
        core = list(r.get("core_terms") or [])
        if require_core_terms:
            if len(core) != N_CORE_TERMS:
                report.add(config, i, "core_term_count", f"{len(core)} core terms, expected {N_CORE_TERMS}")
            for t in core:
                if count_term(query, t) < 1:
                    report.add(config, i, "core_term_missing", f"core term {t!r} not in query {query!r}")
        if corpus_ids is not None:
            report.checked["qrels"] += 1
            if r["asin"] not in corpus_ids:
                report.add(config, i, "target_not_in_corpus", f"asin {r['asin']!r} is not a corpus id")
        _check_error_side(report, config, i, r, core, release)
    by_pair: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_pair.setdefault(r["pair_id"], []).append(i)
    for pid, members in by_pair.items():
        report.checked["pairs"] += 1
        if len(members) < 2:
            continue
        asins = {rows[i]["asin"] for i in members}
        users = [rows[i]["user_id"] for i in members]
        if len(asins) != 1:
            report.add(config, members[0], "pair_target", f"pair {pid!r} mixes targets {sorted(asins)}")
        if len(set(users)) != len(users):
            report.add(config, members[0], "pair_same_user", f"pair {pid!r} repeats a user")
        core = list(rows[members[0]].get("core_terms") or [])
        for t in core:
            freqs = {count_term(rows[i].get("query") or "", t) for i in members}
            if len(freqs) > 1:
                report.add(
                    config,
                    members[0],
                    "pair_core_term_frequency",
                    f"pair {pid!r}: core term {t!r} occurs {sorted(freqs)} times across its queries",
                )
    return report


def _is_protected_token(word: str) -> bool:
    """Tokens whose identity a typo would change, or too short to recover: digits (numbers, model codes,
    sizes) or at most :data:`MIN_EDIT_LETTERS` - 1 letters."""
    return any(ch.isdigit() for ch in word) or sum(ch.isalpha() for ch in word) < MIN_EDIT_LETTERS


def _check_position(
    report: ValidationReport, config: str, i: int, e: Mapping[str, Any], name: str, required: bool
) -> None:
    """An edit's ``position`` is the bucket :func:`edit_position` gives its original and edited word;
    ``required`` (rows with an ``error_chain``, i.e. built by PQB's injector) means it must be present."""
    pos = e.get("position")
    if pos is None:
        if required:
            report.add(config, i, "missing_position", f"{name}: edit {e['original']!r}->{e['edited']!r}")
        return
    report.checked["edit_positions"] += 1
    want = edit_position(str(e["original"]), str(e["edited"]))
    if pos != want:
        report.add(
            config, i, "wrong_position",
            f"{name}: edit {e['original']!r}->{e['edited']!r} is {want!r}, recorded {pos!r}",
        )  # fmt: skip


def _check_edit_list(
    report: ValidationReport,
    config: str,
    i: int,
    query: str,
    edits: list[Mapping[str, Any]],
    name: str,
    require_position: bool = False,
) -> str | None:
    """Offsets, one edit per word, protected tokens, mechanisms, locations and positions of one edit
    list; returns the rebuilt query (``None`` when the offsets do not apply)."""
    if len(edits) > MAX_EDITS:
        report.add(config, i, "too_many_edits", f"{len(edits)} {name}, at most {MAX_EDITS}")
    try:
        rebuilt = apply_edits(query, edits)
    except ValueError as exc:
        report.add(config, i, "edit_offsets", f"{name}: {exc}")
        return None
    for e in edits:
        s, t = int(e["start"]), int(e["end"])
        orig = str(e["original"])
        if query[s:t] != orig:
            report.add(config, i, "edit_offsets", f"{name}: {orig!r} is not at [{s}:{t}] of the query")
        if e.get("mechanism") not in MECHANISMS:
            report.add(config, i, "unknown_mechanism", f"mechanism {e.get('mechanism')!r}")
        if e.get("location") is not None and e.get("location") not in LOCATIONS:
            report.add(config, i, "unknown_location", f"location {e.get('location')!r}")
        _check_position(report, config, i, e, name, require_position)
        if len(words(orig)) != 1 or not _WORD.fullmatch(orig):
            report.add(
                config,
                i,
                "edit_not_one_word",
                f"{name}: edit {orig!r}->{e['edited']!r} spans more than one word",
            )
        if _is_protected_token(orig):
            report.add(config, i, "protected_token_edited", f"{name}: edit {orig!r}->{e['edited']!r}")
    return rebuilt


def _check_error_side(
    report: ValidationReport,
    config: str,
    i: int,
    r: Mapping[str, Any],
    core: list[str],
    release: bool = False,
) -> None:
    """Error rows: the edits reproduce ``error_query``, are a prefix of ``error_chain`` (when present),
    touch one whole word each (one edit per word), never a protected token (digits, <= 2 letters).
    Recoverability needs the domain's vocabulary and is checked by ``pqb-build check``.

    A built row must carry its edits and chain: without them nothing ties ``error_query`` to
    ``query`` (unrelated text once passed validation and scored Deg@10 98.92). Only the authors'
    release, which has no edit annotations, may lack them; those rows are counted, not skipped silently."""
    err = r.get("error_query")
    edits = list(r.get("error_edits") or [])
    chain = list(r.get("error_chain") or [])
    if err is None:
        if edits or chain:
            report.add(config, i, "edits_without_error_query", f"{len(edits)} edits but error_query is null")
        return
    report.checked["error_pairs"] += 1
    query = r.get("query") or ""  # a null query is check_rows' `empty_query`, not a TypeError in apply_edits
    if err == query:
        report.add(config, i, "error_query_unchanged", "error_query equals query")
    if not release and not edits:
        report.add(config, i, "missing_edits", "error row without error_edits: its typos are not annotated")
    if not release and not chain:
        report.add(config, i, "missing_chain", "error row without error_chain: its typos are not annotated")
    if not edits:
        if release:
            report.checked["release_error_rows_unannotated"] += 1
        return  # nothing to reproduce error_query from
    rebuilt = _check_edit_list(report, config, i, query, edits, "error_edits", bool(chain))
    if rebuilt is not None and rebuilt != err:
        report.add(config, i, "edits_do_not_reproduce", f"edits give {rebuilt!r}, error_query is {err!r}")
    if chain:
        report.checked["error_chains"] += 1
        _check_edit_list(report, config, i, query, chain, "error_chain", True)
        key = [(int(e["start"]), str(e["edited"])) for e in edits]
        if [(int(e["start"]), str(e["edited"])) for e in chain[: len(edits)]] != key:
            report.add(config, i, "edits_not_chain_prefix", "error_edits are not a prefix of error_chain")
