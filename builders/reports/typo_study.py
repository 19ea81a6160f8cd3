"""Typo study: do injected typos type the letters people type? (issue 29)

Every slip, injected or real, is a ``(typed word, intended word)`` pair, and every feature below is read
by one Damerau-Levenshtein rule (:func:`pqb.builders.writing_errors.channel.single_edit`), so the columns
compare like with like:

* **injected (dose)** / **injected (chain)**: the built error rows' ``error_edits`` and ``error_chain``;
* **simulated, held-out words**: the population model (mechanism and place in the word from the
  population prior, letters from the slip channel) applied to the *intended* words of the held-out real
  slips, one slip each. The same words as the next column, so only the process differs;
* **real, held-out**: the calibration slips of the held-out repositories (never used to estimate the
  channel; ``channel.HOLDOUT_SHARE``);
* **real, estimation share**: the slips the channel was estimated from (a sanity column);
* **authors' release**: the word edits of the authors' published typo queries of the domain
  (``PQB_RELEASE_DIR``; diffed against their clean queries), when the release has the domain.

Features (shares; 95% percentile-bootstrap CIs over slips): the edit mix; for insertions the share of
vowels (of every inserted letter, and of those that do not double a neighbour: the two readings of "the
inserted letter is a vowel", 31.6% and 40.8% on the held-out real slips), of j/q/x/z and of letters of
another case than their neighbours; for substitutions the share of
QWERTY neighbours and of vowel-for-vowel; for deletions the share that drop one of a doubled letter; the
share implausible as a motor slip (an insertion that is neither a neighbour of an adjacent letter, nor a
copy of a letter within 3 places, nor a vowel; an inserted letter of another case; a substitution that is
none of neighbour, vowel-for-vowel, nearby copy, sound-alike); first / interior / last letter; the share
of real-word slips (the typed word is in pyspellchecker's English list: a measurement only, no filter uses
it); the total-variation distance of the mechanism mix from the held-out real slips; and how many typed
words a generic corrector restores (symspell's bundled dictionary, its closest candidate): a corrector
that chose the typos would restore all of them. (The harness's defenses, symspell with the domain's
vocabulary and pyspellchecker, are measured end to end by ``pqb-harness run --model_args rewriter=...``.)
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pqb.builders.seeds import derive_seed
from pqb.builders.workdir import EDITS, PAIRS, VALIDATION_DIR, WorkDir, read_parquet
from pqb.builders.writing_errors.channel import (
    SPREAD,
    SPREADS,
    TWO_LETTER_FROM,
    VOWELS,
    Slip,
    SlipChannel,
    detected_slips,
    edit_site,
    holdout,
    insert_class,
    nearby_letters,
    pair_key,
    population_channel,
    read_slips,
    single_edit,
    subst_class,
    two_letter_kind,
    two_letter_labels,
    typos_path,
)
from pqb.builders.writing_errors.detection import _large_wordlist, _load_symspell
from pqb.builders.writing_errors.injection import mechanism_variants, slip_word
from pqb.builders.writing_errors.mechanisms import QWERTY_NEIGHBOURS, classify, diff_edits
from pqb.dataset.io import atomic_write_json, atomic_write_text
from pqb.dataset.schema import CHAR_MECHANISMS, MIN_EDIT_LETTERS, POSITIONS, edit_position

log = logging.getLogger(__name__)

Pair = tuple[str, str]  # (typed, intended)
RARE = frozenset("jqxz")


def _inserted_case_wrong(typed: str, intended: str) -> bool:
    """An inserted letter whose case differs from its neighbours' (e.g. "kRed", "UgSB")."""
    e = single_edit(typed, intended)
    if e is None or e[0] != "ins":
        return False
    j = edit_site(typed, intended)
    near = [typed[k] for k in (j - 1, j + 1) if 0 <= k < len(typed)]
    return bool(near) and all(ch.isupper() != typed[j].isupper() for ch in near)


def _implausible(typed: str, intended: str, e: tuple[str, ...]) -> bool:
    """The issue's rule: an insertion or substitution in no plausible class (``other``: not a copy, not a
    QWERTY neighbour, not a vowel or vowel-for-vowel, not a sound-alike, not a copy of a letter within 3
    places), or an inserted letter of another case than its neighbours."""
    if e[0] not in ("ins", "sub"):
        return False
    near = nearby_letters(intended, edit_site(typed, intended), inserted=e[0] == "ins")
    if e[0] == "ins":
        return insert_class(e[1], e[2], e[3], near) == "other" or _inserted_case_wrong(typed, intended)
    return subst_class(e[1], e[2], near) == "other"


FEATURES: tuple[tuple[str, str], ...] = (
    ("insertion + doubling, share of edits", "ins"),
    ("deletion, share of edits", "del"),
    ("substitution, share of edits", "sub"),
    ("transposition, share of edits", "trans"),
    ("multi-letter or other, share of edits", "multi"),
    ("two-letter slip, share of slips on words of 7+ letters", "two_letter"),
    ("inserted letter is a vowel", "ins_vowel"),
    ("inserted letter is a vowel, doublings left out", "ins_vowel_undoubled"),
    ("inserted letter in {j,q,x,z}", "ins_rare"),
    ("inserted letter of the wrong case", "ins_case"),
    ("substitution by a QWERTY neighbour", "sub_neighbour"),
    ("substitution vowel-for-vowel", "sub_vowel"),
    ("deletion of one of a doubled letter", "del_doubled"),
    ("implausible as a motor slip", "implausible"),
    ("position: first letter", "pos_first"),
    ("position: interior", "pos_interior"),
    ("position: last letter", "pos_last"),
    ("typed word is a real word", "real_word"),
    ("restored by symspell (bundled dictionary)", "restored_symspell"),
)
"""(row label, key): each key is a (numerator, denominator) pair of indicators per slip."""


def _symspell_best(word: str) -> str:
    from symspellpy import Verbosity

    hits = _load_symspell(2).lookup(
        word.lower(), Verbosity.CLOSEST, max_edit_distance=2, include_unknown=True
    )
    return hits[0].term if hits else word.lower()


def indicators(
    pairs: Sequence[Pair], *, correctors: bool = True, labels: Mapping[str, str] | None = None
) -> dict[str, np.ndarray]:
    """Per slip, a 0/1 numerator and denominator for every feature key (``<key>`` and ``<key>/``).

    ``labels``: which real pairs at distance 2 are slips (:func:`two_letter_labels`), for the two-letter
    row, whose denominator is the slips (single-letter, or two-letter ones) on words long enough to take
    two edits; ``None`` (injected edits): every such pair is a slip."""
    n = len(pairs)
    out = {k: np.zeros(n) for _, key in FEATURES for k in (key, key + "/")}
    spell = _large_wordlist() if correctors else None
    for i, (typed, intended) in enumerate(pairs):
        e = single_edit(typed, intended)
        op = e[0] if e else "multi"
        for key in ("ins", "del", "sub", "trans", "multi"):
            out[key + "/"][i] = 1
        out[op][i] = 1
        if len(intended) >= TWO_LETTER_FROM and intended.isalpha():
            two = two_letter_kind(typed, intended) is not None and (
                labels is None or labels.get(pair_key(typed, intended)) == "slip"
            )
            out["two_letter/"][i] = two or e is not None
            out["two_letter"][i] = two
        if e and e[0] == "ins":
            out["ins_vowel/"][i] = out["ins_rare/"][i] = out["ins_case/"][i] = 1
            out["ins_vowel"][i] = e[2] in VOWELS
            out["ins_rare"][i] = e[2] in RARE
            out["ins_case"][i] = _inserted_case_wrong(typed, intended)
            if e[2] not in (e[1], e[3]):  # not a copy of a neighbour (classify's repetition)
                out["ins_vowel_undoubled/"][i] = 1
                out["ins_vowel_undoubled"][i] = e[2] in VOWELS
        if e and e[0] == "sub":
            out["sub_neighbour/"][i] = out["sub_vowel/"][i] = 1
            out["sub_neighbour"][i] = e[2] in QWERTY_NEIGHBOURS.get(e[1], ())
            out["sub_vowel"][i] = e[1] in VOWELS and e[2] in VOWELS
        if e and e[0] == "del":
            out["del_doubled/"][i] = 1
            out["del_doubled"][i] = e[2] == "True"
        if e:
            out["implausible/"][i] = 1
            out["implausible"][i] = _implausible(typed, intended, e)
            pos = edit_position(intended, typed)
            for k in POSITIONS:
                out[f"pos_{k}/"][i] = 1
                out[f"pos_{k}"][i] = pos == k
        if spell is not None:
            for key in ("real_word", "restored_symspell"):
                out[key + "/"][i] = 1
            out["real_word"][i] = typed.lower() in spell
            out["restored_symspell"][i] = _symspell_best(typed) == intended.lower()
    return out


def summarise(
    pairs: Sequence[Pair],
    n_boot: int,
    seed: int,
    *,
    correctors: bool = True,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Every feature's share with a 95% percentile-bootstrap CI (slips resampled), the mechanism mix."""
    ind = indicators(pairs, correctors=correctors, labels=labels)
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(pairs), size=(n_boot, len(pairs))) if pairs else np.zeros((0, 0), dtype=int)
    feats: dict[str, Any] = {}
    for _, key in FEATURES:
        num, den = ind[key], ind[key + "/"]
        d = float(den.sum())
        share = float(num.sum()) / d if d else None
        lo = hi = None
        if d and n_boot:
            dn = den[idx].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = num[idx].sum(axis=1) / dn
            boot = np.sort(boot[dn > 0])
            if len(boot):
                lo, hi = float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))
        feats[key] = {"share": share, "ci": [lo, hi], "n": int(d)}
    mech = Counter(classify(t, w) or "other" for t, w in pairs)
    return {"n": len(pairs), "features": feats, "mechanisms": dict(sorted(mech.items()))}


def tvd(a: Counter[str] | dict[str, int], b: Counter[str] | dict[str, int]) -> float:
    """Total-variation distance of two count distributions over CHAR_MECHANISMS + other."""
    keys = [*CHAR_MECHANISMS, "other"]
    na, nb = sum(a.get(k, 0) for k in keys) or 1, sum(b.get(k, 0) for k in keys) or 1
    return 0.5 * sum(abs(a.get(k, 0) / na - b.get(k, 0) / nb) for k in keys)


SIMULATED_DRAWS = 10
"""Population slips drawn per held-out word. With one draw the column's shares carried the simulation's
own noise as well as the words': the QWERTY-neighbour share of substitutions read 42.4%, 28.0%, 31.6% and
28.6% on seeds 0-3 (about 100 substitutions each), where the channel's mechanism mix gives 32%. Ten draws
bring that noise to about a third."""


def simulate(words: Sequence[str], channel: SlipChannel, seed: int, draws: int = SIMULATED_DRAWS) -> list[Pair]:
    """``draws`` population slips per intended word (see the module docstring), a two-letter one at the
    channel's rate as the injector makes them; words the process cannot edit (shorter than
    ``MIN_EDIT_LETTERS``) are skipped."""
    mech = channel.population["mechanisms"]
    pos = channel.population["positions"]
    mtot = sum(mech.values()) + len(CHAR_MECHANISMS)
    mprobs = {m: (mech.get(m, 0) + 1) / mtot for m in CHAR_MECHANISMS}
    ptot = sum(pos.values()) + len(POSITIONS)
    pprobs = {k: (pos.get(k, 0) + 1) / ptot for k in POSITIONS}
    out: list[Pair] = []
    for i, w in enumerate(words):
        if len(w) < MIN_EDIT_LETTERS or not w.isalpha():
            continue
        rng = np.random.default_rng(derive_seed(seed, "simulate", i))
        for _ in range(draws):
            out += _simulate_one(w, channel, mprobs, pprobs, rng)
    return out


def _simulate_one(
    w: str, channel: SlipChannel, mprobs: Mapping[str, float], pprobs: Mapping[str, float], rng: np.random.Generator
) -> list[Pair]:
    """One slip of ``w`` (none when 8 tries of a mechanism fail), as the injector draws one."""
    ms = [m for m in CHAR_MECHANISMS if mechanism_variants(w, m)]
    p = np.array([mprobs[m] for m in ms])
    for _ in range(8):
        m = ms[int(rng.choice(len(ms), p=p / p.sum()))]
        typed, _ = slip_word(w, m, mprobs, pprobs, rng, channel)
        if typed:
            return [(typed, w)]
    return []


SPREAD_FOLDS = 5
SPREAD_WORDS = {"uniform": "evenly", "frequency": "by frequency"}


def spread_likelihoods(slips: Sequence[Slip], folds: int = SPREAD_FOLDS) -> dict[str, dict[str, Any]]:
    """How well each way of spreading a class's share over its letters (:data:`channel.SPREADS`) predicts
    the typed letter of slips from repositories the fit did not see: ``{op: {spread: mean log-probability,
    "n": slips}}`` for insertions and substitutions, by ``folds``-fold cross-validation with folds by a
    salted hash of the repository. The channel's :data:`channel.SPREAD` is the better of each pair."""
    def fold(s: Slip) -> int:
        return int(hashlib.sha1(f"pqb-spread-cv|{s.source}".encode()).hexdigest(), 16) % folds

    out: dict[str, dict[str, Any]] = {op: {"n": 0} for op in ("ins", "sub")}
    for how in SPREADS:
        total = dict.fromkeys(out, 0.0)
        count = dict.fromkeys(out, 0)
        for k in range(folds):
            channel = SlipChannel([s for s in slips if fold(s) != k], spread=dict.fromkeys(out, how))
            for s in slips:
                e = single_edit(s.typed, s.intended) if fold(s) == k and s.intended.isalpha() else None
                if e is None or e[0] not in out:
                    continue
                near = nearby_letters(s.intended, edit_site(s.typed, s.intended), inserted=e[0] == "ins")
                if e[0] == "ins":
                    p = channel.insert_letter(e[1], e[3], near)[e[2]]
                else:
                    p = channel.substitute_letter(e[1], near)[e[2]]
                total[e[0]] += math.log(p)
                count[e[0]] += 1
        for op in out:
            out[op][how] = total[op] / count[op] if count[op] else None
            out[op]["n"] = count[op]
    return out


def release_slips(domain: str) -> list[Pair]:
    """The word edits of the authors' released typo queries of ``domain`` (diffed against their clean
    queries, :func:`diff_edits`; none when ``PQB_RELEASE_DIR`` has no file for the domain)."""
    from pqb.builders.reports.release_compare import load_release

    try:
        release = load_release().get(domain, {})
    except FileNotFoundError:
        return []
    return [
        (str(e["edited"]), str(e["original"]))
        for recs in release.values()
        for r in recs
        for e in diff_edits(r.get("syntax_query") or "", r.get("typo_query") or "")
        if str(e["original"]).isalpha()
    ]


def _row_edits(rows: Sequence[dict[str, Any]], column: str) -> list[Pair]:
    return [(str(e["edited"]), str(e["original"])) for r in rows for e in (r.get(column) or [])]


def typo_study(
    workdir: WorkDir,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    release: bool = True,
    progress: Callable[[str], None] = log.info,
) -> dict[str, Any]:
    """The study of a built work dir as JSON. ``release=False`` leaves out the authors' release column: the
    card's table uses only what the build itself reads, so the card is the same with or without a local
    copy of the release."""
    path = typos_path()
    slips = read_slips(path)
    held = [(s.typed, s.intended) for s in slips if holdout(s.source)]
    est = [(s.typed, s.intended) for s in slips if not holdout(s.source)]
    channel = population_channel(detected_slips(workdir.path / EDITS), domain=workdir.domain)
    columns: dict[str, list[Pair]] = {}
    pairs_file = workdir.path / PAIRS
    if pairs_file.is_file():
        rows = [r for r in read_parquet(pairs_file).to_pylist() if r.get("error_query") is not None]
        columns["injected (dose)"] = _row_edits(rows, "error_edits")
        columns["injected (chain)"] = _row_edits(rows, "error_chain")
    released = release_slips(workdir.domain) if release else []
    if released:
        columns["authors' release"] = released
    columns["simulated, held-out words"] = simulate([w for _, w in held], channel, seed)
    columns["real, held-out"] = held
    columns["real, estimation share"] = est
    out: dict[str, Any] = {"seed": seed, "n_boot": n_boot, "channel": channel.settings(), "columns": {}}
    for name, pairs in columns.items():
        progress(f"typo study: {name} ({len(pairs)} slips)")
        labels = two_letter_labels() if name.startswith("real") else None
        out["columns"][name] = summarise(pairs, n_boot, derive_seed(seed, name), labels=labels)
    out["letter_spread"] = spread_likelihoods([s for s in slips if not holdout(s.source)])
    ref = out["columns"]["real, held-out"]["mechanisms"]
    for col in out["columns"].values():
        col["mechanism_tvd_vs_held_out"] = tvd(col["mechanisms"], ref)
    return out


def run_typo_study(
    workdir: WorkDir,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    progress: Callable[[str], None] = log.info,
) -> dict[str, Any]:
    """Run the study on a built work dir; write ``validation/typo_study.{json,md}``; return the JSON."""
    workdir.require_consistent("validating typos")  # the injected queries of the current build
    out = typo_study(workdir, seed=seed, n_boot=n_boot, progress=progress)
    vdir = workdir.path / VALIDATION_DIR
    vdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(vdir / "typo_study.json", out)
    atomic_write_text(vdir / "typo_study.md", render(out))
    return out


def _cell(f: dict[str, Any]) -> str:
    if f["share"] is None:
        return "–"
    lo, hi = f["ci"]
    ci = f" [{100 * lo:.0f}, {100 * hi:.0f}]" if lo is not None else ""
    return f"{100 * f['share']:.1f}%{ci}"


def render(study: dict[str, Any]) -> str:
    """The study as one markdown table (rows: features; columns: slip sources)."""
    cols = study["columns"]
    names = list(cols)
    lines = [
        "| feature | " + " | ".join(f"{n} (n={cols[n]['n']})" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, key in FEATURES:
        lines.append(f"| {label} | " + " | ".join(_cell(cols[n]["features"][key]) for n in names) + " |")
    lines.append(
        "| mechanism-mix TVD vs real held-out | "
        + " | ".join(f"{cols[n]['mechanism_tvd_vs_held_out']:.3f}" for n in names)
        + " |"
    )
    ch = study["channel"]
    lines += [
        "",
        f"Slip channel: estimated from {ch['slips']} single-letter slips, out of {ch.get('real_slips')} real "
        f"word pairs (estimation share) and {ch.get('detector_slips')} slips detected in the domain's "
        f"reviews; digest {ch['digest']}. Real slips: "
        "src-d/datasets, Typos in Identifiers (ODbL 1.0). Shares with 95% bootstrap CIs over slips.",
    ]
    cv = study.get("letter_spread")
    if cv:
        def how(op: str, label: str) -> str:
            return (f"{label} (n = {cv[op]['n']}) " + ", ".join(f"{SPREAD_WORDS[h]} {cv[op][h]:.3f}" for h in SPREADS if cv[op][h] is not None)
                    + f"; the channel spreads them {SPREAD_WORDS[SPREAD[op]]}")  # fmt: skip
        lines += [
            "",
            "How a letter class's share is spread over its letters, by mean log-probability of the typed "
            f"letter on repositories the fit did not see ({SPREAD_FOLDS}-fold cross-validation within the "
            f"estimation share): {how('ins', 'insertions')}; {how('sub', 'substitutions')}.",
        ]
    return "\n".join(lines) + "\n"
