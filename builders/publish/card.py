"""The dataset card (``pqb_dataset/README.md``): YAML ``configs:``, statistics, provenance, licence, limits.

The statistics are computed from the parquet files themselves (:func:`dataset_statistics`), never from
the build's own bookkeeping, so the card cannot disagree with the data; a test re-derives them. The
card is deterministic (no timestamps, no timings, file names instead of absolute paths), so two builds
with the same inputs and seed give the same card as well as the same parquet bytes.

Counting rules (the paper's counts table, made explicit):

* **syntactic** = benchmark rows (one personalised clean query per (user, target product)); the paper
  counts "3,654 syntactic queries", i.e. queries, not pairs. **syntactic pairs** = distinct ``pair_id``.
* **writing-error** = rows whose ``error_query`` is not null (one error query each).
* **total** = syntactic + writing-error (the paper's "Total" column is their sum).
* **user profiles** = distinct users of the domain's rows (= rows of ``<d>-users``).
* **sentences** = sum of ``n_sentences`` over those users (the review sentences their syntactic profiles
  read: all of a user's, or at most ``max_sentences`` under a cap; the paper's 13,650 = 273 x 50 counts
  its error profiles, 50 sentences per user, the paper preset's ``error_max_sentences``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pqb.builders.publish.layout import config_path, published_configs
from pqb.builders.workdir import WorkDir, library_versions
from pqb.dataset import settings
from pqb.dataset.io import atomic_write_text
from pqb.dataset.schema import POSITIONS, SCHEMA_VERSION, config_kind, document_string

STAT_COLUMNS: tuple[str, ...] = (
    "syntactic", "writing_error", "total", "user_profiles", "sentences", "syntactic_pairs",
    "target_products", "corpus_documents",
)  # fmt: skip

CONFIG_DESCRIPTIONS: dict[str, str] = {
    "rows": "benchmark rows: one per (user, target product); the two rows of a `pair_id` are a syntactic pair, "
    "`query`/`error_query` an error pair",
    "corpus": "retrieval corpus: every product of the domain with a title (`id` = parent_asin)",
    "queries": "BEIR/MTEB view: every clean query (`<row id>`) and error query (`<row id>_error`)",
    "qrels": "BEIR/MTEB view: each query's one relevant document (the target product)",
    "users": "per-user syntactic Gaussian (mu, v, lam, sigma2, threshold) and error-mechanism profile",
    "release": "LOCAL ONLY: the authors' published queries imported into the row schema (queries only, no "
    "core terms, edits recovered by diffing)",
    "release-corpus": "LOCAL ONLY: corpus for the release config, built from your own Amazon meta file",
}


def _table(dataset_dir: Path, config: str) -> Any:
    path = config_path(dataset_dir, config)
    return pq.read_table(path) if path.exists() else None


def dataset_statistics(dataset_dir: Path) -> dict[str, dict[str, int]]:
    """The counts table per domain (see the module docstring for each definition), from the parquet files."""
    stats: dict[str, dict[str, int]] = {}
    for config in published_configs(dataset_dir):
        domain, kind = config_kind(config)
        if kind != "rows":
            continue
        rows = _table(dataset_dir, config)
        users = _table(dataset_dir, f"{domain}-users")
        corpus = _table(dataset_dir, f"{domain}-corpus")
        n_rows = rows.num_rows
        n_err = n_rows - rows.column("error_query").null_count
        stats[domain] = {
            "syntactic": n_rows,
            "writing_error": n_err,
            "total": n_rows + n_err,
            "user_profiles": users.num_rows if users is not None else 0,
            "sentences": int(sum(users.column("n_sentences").to_pylist())) if users is not None else 0,
            "syntactic_pairs": len(set(rows.column("pair_id").to_pylist())),
            "target_products": len(set(rows.column("asin").to_pylist())),
            "corpus_documents": corpus.num_rows if corpus is not None else 0,
        }
    return stats


def _yaml_configs(dataset_dir: Path, configs: Sequence[str]) -> str:
    """The card's ``configs:``: exactly the configs whose shard exists, each at its content-addressed path."""
    lines = ["configs:"]
    for c in configs:
        lines += [
            f"- config_name: {c}",
            "  data_files:",
            "  - split: test",
            f"    path: {config_path(dataset_dir, c).relative_to(dataset_dir).as_posix()}",
        ]
    return "\n".join(lines)


def declare_local_configs(dataset_dir: Path) -> Path:
    """Rewrite only the ``configs:`` block of an existing card to declare every config present, the
    local-only ``*-release*`` ones included (``pqb-build release`` calls it after writing them).

    The committed card (:func:`render_card`) declares the published configs only, so a fresh checkout
    never lists a config without files; ``pqb-build publish`` restores it.
    """
    path = Path(dataset_dir) / "README.md"
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\nconfigs:\n")
    if not sep:
        raise ValueError(f"{path} has no configs: block; rebuild the card (pqb-build publish)")
    _, end, tail = rest.partition("\n---\n")
    block = _yaml_configs(Path(dataset_dir), published_configs(dataset_dir))
    atomic_write_text(path, f"{head}\n{block}{end}{tail}")
    return path


def _stats_table(stats: Mapping[str, Mapping[str, int]]) -> str:
    head = "| domain | " + " | ".join(STAT_COLUMNS) + " |"
    sep = "|" + "---|" * (len(STAT_COLUMNS) + 1)
    body = [
        f"| {d} | " + " | ".join(str(s[c]) for c in STAT_COLUMNS) + " |" for d, s in sorted(stats.items())
    ]
    if len(stats) > 1:
        tot = {c: sum(s[c] for s in stats.values()) for c in STAT_COLUMNS}
        body.append("| **total** | " + " | ".join(str(tot[c]) for c in STAT_COLUMNS) + " |")
    return "\n".join([head, sep, *body])


def parse_stats_table(card: str) -> dict[str, dict[str, int]]:
    """Read the statistics table back from a card (used by tests and ``pqb-build check``)."""
    out: dict[str, dict[str, int]] = {}
    header: list[str] | None = None
    for line in card.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "domain" and "syntactic" in cells:
            header = cells[1:]
            continue
        if header and line.startswith("|") and not line.startswith("|---") and cells[0] != "**total**":
            if len(cells) != len(header) + 1:
                header = None
                continue
            try:
                out[cells[0]] = {h: int(v) for h, v in zip(header, cells[1:], strict=True)}
            except ValueError:
                header = None
        elif header and not line.startswith("|"):
            header = None
    return out


_TIMING_SUFFIXES = ("seconds", "_per_s", "_per_second")


def _portable(obj: Any) -> Any:
    """Stats without what differs between machines and runs, at any depth: wall-clock entries
    (``seconds``, ``*_per_second``...) are dropped and absolute paths reduced to their file name."""
    if isinstance(obj, Mapping):
        return {k: _portable(v) for k, v in obj.items() if not str(k).endswith(_TIMING_SUFFIXES)}
    if isinstance(obj, list):
        return [_portable(v) for v in obj]
    if isinstance(obj, str) and obj.startswith("/"):
        return Path(obj).name
    return obj


def _stage_summary(wd: WorkDir) -> dict[str, Any]:
    """A deterministic digest of a work dir's manifest: config, stats, output hashes; no timings, no paths."""
    stages = {}
    for name, rec in sorted(wd.manifest.get("stages", {}).items()):
        if name.startswith("validate"):
            continue  # studies run separately (`pqb-build validate`): the card describes the build only
        stages[name] = {
            "config": _portable(rec.get("config", {})),
            "stats": _portable(rec.get("stats", {})),
            "inputs": sorted({Path(p).name for p in rec.get("inputs", [])}),
            "output_sha256": rec.get("output_sha256", {}),
        }
    return stages


def _source_files(wd: WorkDir) -> list[tuple[str, str]]:
    """Raw source files the build read (name, sha256), as each stage recorded them when it ran
    (:meth:`Stage.done`): not re-hashed now, so a source edited or moved since is not cited as read."""
    seen: dict[str, str] = {}
    for rec in wd.manifest.get("stages", {}).values():
        for name, digest in rec.get("sources", {}).items():
            seen.setdefault(name, digest)
    return sorted(seen.items())


def _find_config_value(wd: WorkDir, key: str) -> Any:
    for rec in wd.manifest.get("stages", {}).values():
        cfg = rec.get("config", {})
        if key in cfg:
            return cfg[key]
    return None


def _method_section(workdirs: Sequence[WorkDir]) -> str:
    lines = []
    for wd in sorted(workdirs, key=lambda w: w.domain):
        gen = wd.manifest.get("stages", {}).get("generate", {}).get("config", {})
        backend = gen.get("backend", "unknown")
        link = _find_config_value(wd, "link") or _find_config_value(wd, "link_mode") or "reviewers"
        pair = wd.manifest.get("stages", {}).get("pair", {}).get("config", {})
        how = {
            "realizer": "the offline **compositional realizer** (`pqb.builders.queries.realizer`: request openers x each "
            "attribute's syntactic role (premodifier, prepositional phrase, relative clause, coordination, "
            "separate sentence, question, head noun), in the frames its kind fits (brand, colour, material, "
            "platform, rating, adjectival or nominal feature, ...), x connectives and ordering, at most one "
            "question per query, with casing, punctuation and contraction habits drawn per candidate at the "
            "rates of the domain's reviews; no language model was used)",
            "llm": f"the causal LM `{gen.get('generator', {}).get('model', '?')}` (seeded sampling)",
            "openai": f"the OpenAI-compatible endpoint model `{gen.get('generator', {}).get('model', '?')}`",
        }.get(str(backend), str(backend))
        link_txt = (
            "**link=any**: each target product was linked to a seeded subset of qualified users, *not* to "
            "its actual reviewers (the slice's reviewers almost never review products with full metadata); "
            "so a row's user did not necessarily review its target"
            if link == "any"
            else "link=reviewers: a target's users are users who reviewed it"
        )
        lines += [
            f"- **{wd.domain}**: candidate queries were generated by {how}; {gen.get('n', '?')} candidates "
            f"per product, filtered by {json.dumps(gen.get('filters', {}), sort_keys=True)}.",
            f"  Users: {link_txt}. Pair distance: `{pair.get('distance', '?')}`; pairs tried per product: "
            f"{pair.get('max_pairs_tried', '?')}; seed {pair.get('seed', '?')}.",
            f"  {_thresholds_line(wd)}",
        ]
    return "\n".join(lines)


def _thresholds_line(wd: WorkDir) -> str:
    """Which thresholds and caps the build used, named by preset (``pqb.builders.config.PRESETS``)."""
    from pqb.builders.config import thresholds_name

    stages = wd.manifest.get("stages", {})
    users = stages.get("users", {}).get("config", {})
    error_cap = stages.get("errors", {}).get("config", {}).get("max_sentences")
    name = thresholds_name(users, error_cap)
    which = {"embedded": "the embedded default's (looser: the slice's users write ~20 sentences)",
             "paper": "the paper preset's (the authors' code)"}.get(name, "custom")  # fmt: skip
    cap = users.get("max_sentences")
    return (
        f"Thresholds: {which}: a user qualifies with >= {users.get('min_sentences', '?')} sentences, "
        f">= {users.get('min_profile', '?')} profile and >= {users.get('min_heldout', '?')} held-out "
        f"(sentences of >= {users.get('min_sentence_tokens', '?')} tokens, cut at `{users.get('sentence_split', '?')}`); "
        + (
            f"a syntactic profile reads at most {cap} sentences, "
            if cap
            else "a syntactic profile reads all of them, "
        )
        + (
            f"an error profile at most {error_cap} profile sentences"
            if error_cap
            else "an error profile all profile sentences"
        )
        + " (caps in the order of a seeded hash of user, product and sentence, not file order); only linked users are parsed."
    )


def query_skeletons(dataset_dir: Path, domain: str) -> tuple[int, int]:
    """(distinct skeletons, queries) over a domain's clean queries, core terms masked
    (:func:`pqb.builders.queries.realizer.skeleton`), from the rows file itself."""
    from pqb.builders.queries.realizer import skeleton

    rows = _table(dataset_dir, domain)
    if rows is None:
        return 0, 0
    data = rows.select(["query", "core_terms"]).to_pylist()
    return len({skeleton(r["query"], r["core_terms"]) for r in data}), len(data)


def _audited_pairs(dataset_dir: Path, domain: str) -> str:
    """How many of a domain's pairs have both users passing the audit, from the rows and users files."""
    rows, users = _table(dataset_dir, domain), _table(dataset_dir, f"{domain}-users")
    if rows is None or users is None:
        return "no rows"
    valid = {u["user_id"] for u in users.select(["user_id", "audit_valid"]).to_pylist() if u["audit_valid"]}
    pairs: dict[str, list[bool]] = {}
    for r in rows.select(["pair_id", "user_id"]).to_pylist():
        pairs.setdefault(r["pair_id"], []).append(r["user_id"] in valid)
    both = sum(all(v) for v in pairs.values())
    flagged = sum(not ok for v in pairs.values() for ok in v)
    return f"{both} of {len(pairs)} pairs have both users passing; {flagged} of {len(rows)} rows come from a flagged user"


def _error_section(dataset_dir: Path, workdirs: Sequence[WorkDir] = ()) -> str:
    """Dose rule, edits-per-query histogram, location, position-in-the-word and mechanism mix, personal vs
    backoff, detector P/R (``detector_quality.json`` measures the symspell back-end only: quoted only
    when every work dir's errors stage ran it)."""
    from collections import Counter

    from pqb.builders.reports.detector_eval import quality
    from pqb.builders.writing_errors.channel import TWO_LETTER_FROM

    lines = [
        "Every error row stores an ordered **chain** of up to 3 edits (`error_chain`), drawn one after "
        "another from the user's own process: positions without replacement in proportion to the user's "
        "context-conditioned slip rate (word length, word class, capitalisation, syntax), mechanisms from "
        "the user's mechanism distribution (keyboard neighbours, other substitutions, transpositions, "
        f"repetitions, insertions, deletions; on a word of {TWO_LETTER_FROM}+ letters a slip touches two letters "
        "(`two_letter`) at the rate real slips do, from the population, never profiled per user), and where "
        "in the word (first letter, interior, last letter: "
        "`error_edits[i].position`) from the user's position distribution, shrunk toward the population's "
        "with a Dirichlet prior of 2 pseudo-slips; the population's counts add real typing slips (src-d/"
        "datasets, Typos in Identifiers, ODbL 1.0) to the slips detected in the reviews. **Which letters** "
        "a slip types comes from a letter-level slip channel (insertion given the letters either side, "
        "substitution given the intended letter, deletion given the letter and whether it is doubled, "
        "transposition given the pair; Kernighan, Church & Gale 1990) estimated from those real slips "
        "(repositories held out for checking) and smoothed with keyboard and sound-alike priors; a slip "
        "whose letter its own word chose (a copy of a letter nearby, or of the next letter) counts for its "
        "class, not for that letter; a new letter takes its neighbours' case. **Dose rule:** `error_query` applies the chain's first *d* "
        "edits, *d* drawn from the user's own distribution of slips per slipped sentence (capped at 3), "
        "shrunk toward the population's with a Dirichlet prior of 2 pseudo-sentences; the `pqb_error3_*` "
        "tasks evaluate the first 3 edits of every chain (the authors' dose). Any word may carry a typo "
        "(core terms, brand and title words included) except tokens with digits and words of 1-2 letters; "
        "every edit stays **readable** by a rule no evaluated typo defense shares (no corrector, no "
        "dictionary): one edit per word, the word keeps at least 2 letters; real-word slips may occur; "
        "`pqb-build check` verifies this on every error row; `pqb-build validate typos` compares the "
        "injected letters with held-out real slips. Users with fewer than 3 of their own recovered slips are flagged `backoff` "
        "(`profile_evidence` holds the count); their profile is mostly the population's prior.",
        "",
    ]
    for c in [
        c for c in published_configs(dataset_dir) if config_kind(c)[1] == "rows" and "-release" not in c
    ]:
        rows = [r for r in _table(dataset_dir, c).to_pylist() if r.get("error_query") is not None]
        if not rows:
            continue
        dose = Counter(len(r.get("error_edits") or []) for r in rows)
        chain = Counter(len(r.get("error_chain") or []) for r in rows)
        loc = Counter(e.get("location") or "unknown" for r in rows for e in r.get("error_edits") or [])
        loc3 = Counter(e.get("location") or "unknown" for r in rows for e in r.get("error_chain") or [])
        mech = Counter(e.get("mechanism") for r in rows for e in r.get("error_edits") or [])
        pos = Counter(e.get("position") or "unknown" for r in rows for e in r.get("error_edits") or [])
        pos3 = Counter(e.get("position") or "unknown" for r in rows for e in r.get("error_chain") or [])
        backoff = sum(bool(r.get("backoff")) for r in rows)
        personal_users = len({r["user_id"] for r in rows if not r.get("backoff")})
        backoff_users = len({r["user_id"] for r in rows if r.get("backoff")})
        n_e, n_3 = sum(loc.values()), sum(loc3.values())
        lines += [
            f"**{c}** ({len(rows)} error rows): edits per error query (personal dose) "
            + ", ".join(f"{k}: {dose.get(k, 0)}" for k in (1, 2, 3))
            + "; chain lengths "
            + ", ".join(f"{k}: {chain.get(k, 0)}" for k in (1, 2, 3))
            + f"; rows from a personal profile {len(rows) - backoff} ({personal_users} users), backoff "
            f"{backoff} ({backoff_users} users).",
            "",
            "| location | personal dose % | 3-edit chain % |",
            "|---|---|---|",
            *(
                f"| {k} | {100 * loc.get(k, 0) / max(n_e, 1):.1f} | {100 * loc3.get(k, 0) / max(n_3, 1):.1f} |"
                for k in sorted(set(loc) | set(loc3))
            ),
            "",
            "| position in the word | personal dose % | 3-edit chain % |",
            "|---|---|---|",
            *(
                f"| {k} | {100 * pos.get(k, 0) / max(n_e, 1):.1f} | {100 * pos3.get(k, 0) / max(n_3, 1):.1f} |"
                for k in [*POSITIONS, *sorted((set(pos) | set(pos3)) - set(POSITIONS))]
            ),
            "",
            "Mechanisms (personal dose): " + ", ".join(f"{m} {n}" for m, n in sorted(mech.items())) + ".",
            "",
        ]
    q = quality()
    other = sorted(
        {
            str(b).partition(":")[0]
            for wd in workdirs
            if (b := (wd.manifest.get("stages", {}).get("errors", {}).get("config") or {}).get("backend"))
            and not str(b).startswith("symspell:")
        }
    )
    if other:
        lines.append(
            f"Slip detector behind the profiles: the {', '.join(other)} back-end "
            f"(`--error-backend`); its precision and recall on the labelled sets are not measured here "
            f"(`detector_quality.json` holds the symspell back-end's; `pqb-build detector-quality --corrector "
            f"<back-end> --no-write` scores another)."
        )
    elif q:
        t, h, d = q["test"], q["heldout"], q["dev"]
        lines.append(
            "Slip detector behind the profiles (symspell back-end), LLM-agent labelled. **Test** "
            f"(`tests/data/detector_labels_test.jsonl`: {t['labelled_tokens']} tokens, {t['labelled_slips']} slips, "
            f"{t['labelled_char_slips']} single-word misspellings, review text and users no rule was chosen on, "
            f"labelled after the rules were chosen; one rule, the other-language check, was then corrected for a "
            f"failure found on it, with no change on dev or held-out): precision {100 * t['precision']:.1f}% "
            f"({t['flags_labelled']} flags), recall {100 * t['recall_char']:.1f}% of misspellings "
            f"({100 * t['recall_all']:.1f}% of all slips). Held-out (`tests/data/detector_labels_heldout.jsonl`, "
            f"{h['labelled_tokens']} tokens, other categories and users than dev, but it has scored three rule "
            f"revisions): precision {100 * h['precision']:.1f}%, recall {100 * h['recall_char']:.1f}% of "
            f"misspellings. Dev (`tests/data/detector_labels.jsonl`, {d['labelled_tokens']} tokens, the set the "
            f"rules were chosen on, so optimistic): precision {100 * d['precision']:.1f}%, recall "
            f"{100 * d['recall_char']:.1f}% of misspellings ({100 * d['recall_all']:.1f}% of all slips)."
        )
    return "\n".join(lines)


def _saturation_section(dataset_dir: Path) -> str:
    """Measured Hit@K of harness-default BM25 per domain (:mod:`pqb.builders.reports.lexical_ceiling`), and
    what it means for Flip@K and Deg@K; empty when no domain has a corpus."""
    from pqb.builders.reports.lexical_ceiling import lexical_ceiling, render

    configs = set(published_configs(dataset_dir))
    tables = [
        render(
            c,
            lexical_ceiling(
                _table(dataset_dir, f"{c}-corpus").to_pylist(), _table(dataset_dir, c).to_pylist()
            ),
        )
        for c in sorted(configs)
        if config_kind(c)[1] == "rows" and "-release" not in c and f"{c}-corpus" in configs
    ]
    if not tables:
        return ""
    return "\n\n".join(
        [
            "A robustness metric moves only where the target is sometimes in the top K and sometimes not. "
            "Below, BM25 with the harness's default settings (bm25s, k1=1.5, b=0.75, Lucene IDF, English "
            "stopwords; the harness's tie rule) on each domain's corpus:",
            *tables,
            'Where both sides\' Hit@K exceed 95%, a Flip@K or Deg@K of 0 says "no room to flip", not '
            "\"robust\": this build's corpus is too small to measure a lexical retriever's robustness there, "
            "and the harness marks such a task/K *saturated* (`task_info.saturated_at`, the table's "
            "footnote, the leaderboard's `ˢ`). The paper's corpora are whole domains (137K-217K products) and "
            "are not saturated: its BM25 Flip@20 of 22.5% needs a Hit@20 of at most 88.7% on one side "
            "(a flip is a miss on one side, so Flip@K <= (1 - Hit@K(q)) + (1 - Hit@K(q')); 2p(1-p) is its "
            "expectation when the sides miss independently, not a bound). Build a whole category (`--source hub`, or a local copy of its files) to "
            "measure robustness at K >= 5.",
        ]
    )


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "n/a"


def _naturalness_section(dataset_dir: Path, workdirs: Sequence[WorkDir]) -> str:
    """Per domain: the deterministic naturalness check of the published queries
    (:mod:`pqb.builders.reports.query_checks`, which reads only the text, the attribute names and the
    published corpus) and the ingest stage's core-term judgement (:mod:`pqb.builders.source.descriptors`);
    empty without rows."""
    from pqb.builders.reports.query_checks import check_queries
    from pqb.builders.source.descriptors import REJECTIONS

    judgements = {
        wd.domain: wd.manifest.get("stages", {}).get("ingest", {}).get("stats", {}).get("core_term_judgement")
        for wd in workdirs
    }
    lines = []
    for c in sorted(published_configs(dataset_dir)):
        if config_kind(c)[1] != "rows" or "-release" in c:
            continue
        rows = _table(dataset_dir, c).select(["query", "core_terms", "attributes"]).to_pylist()
        docs = _table(dataset_dir, f"{config_kind(c)[0]}-corpus")
        corpus = None if docs is None else [document_string(d["title"], d["text"]) for d in docs.to_pylist()]
        rep = check_queries(rows, examples=2, corpus=corpus)
        n = rep.queries
        faults = ", ".join(f"{k} {v}" for k, v in sorted(rep.term_faults.items())) or "none"
        lines += [
            f"- **{c}** ({n} queries, {rep.terms} distinct core terms):",
            f"  - wrong-kind phrasings: **{rep.wrong_kind} ({_pct(rep.wrong_kind, n)})**"
            + (
                f", e.g. {json.dumps(rep.examples['wrong_kind'][0], ensure_ascii=False)}"
                if rep.wrong_kind
                else ""
            ),
            f"  - queries with two or more questions: **{rep.stacked} ({_pct(rep.stacked, n)})**",
            f"  - distinct first-two-word openings: **{rep.openings} of {rep.sample}** "
            f"({'a seeded sample' if rep.sample < n else 'all queries'})",
            f"  - core terms that read as an instruction verb, a fragment or a placeholder: {faults}",
        ]
        judged = judgements.get(config_kind(c)[0])
        if judged:
            kinds = ", ".join(f"{k} {judged['by_kind'][k]}" for k in REJECTIONS if judged["by_kind"].get(k))
            not_keys = sorted(
                judged.get("not_descriptor_keys", {}).items(), key=lambda kv: (-kv[1][1], kv[0])
            )
            keys = ", ".join(f"`{k}` ({p}/{t})" for k, (p, t) in not_keys[:6])
            lines += [
                f"  - core-term judgement at ingest: {judged['rejected']} of {judged['values']} candidate "
                f"attribute values rejected ({_pct(judged['rejected'], judged['values'])}): {kinds}. Keys "
                f"found not to carry descriptors (values passing / values): {keys or 'none'}."
            ]
            nodes = judged.get("category_nodes") or {}
            if nodes.get("offered"):
                shown = ", ".join((nodes.get("examples") or {}).get("ok", []))
                lines.append(
                    f"  - category-path nodes offered as platforms: {nodes['accepted']} of {nodes['offered']} "
                    "kept (the domain's text writes them as names after for / compatible with"
                    + (f": {shown}" if shown else "")
                    + ")."
                )
    return "\n".join(lines)


def _typo_section(workdirs: Sequence[WorkDir]) -> str:
    """The typo study's table per domain (:mod:`pqb.builders.reports.typo_study`, without the authors'
    release column, which depends on a local third-party file); empty when no work dir has error pairs."""
    from pqb.builders.reports.typo_study import render, typo_study
    from pqb.builders.workdir import PAIRS

    parts = [
        f"**{wd.domain}**:\n\n" + render(typo_study(wd, release=False)).rstrip()
        for wd in sorted(workdirs, key=lambda w: w.domain)
        if (wd.path / PAIRS).is_file()
    ]
    return "\n\n".join(parts)


def _syntactic_section(dataset_dir: Path, workdirs: Sequence[WorkDir]) -> str:
    """Per domain: distinct skeletons of the selected queries, the threshold rule, the audit pass rate,
    and whether users failing the audit were paired."""
    lines = []
    for wd in sorted(workdirs, key=lambda w: w.domain):
        st = wd.manifest.get("stages", {})
        prof, pair = st.get("profiles", {}).get("stats", {}), st.get("pair", {})
        n_skel, n_q = query_skeletons(dataset_dir, wd.domain)
        n_g, n_valid = prof.get("gaussians", 0), prof.get("valid_gaussians", 0)
        audited_only = pair.get("config", {}).get("audited_only", False)
        excluded = pair.get("stats", {}).get("users_failing_audit_excluded", 0)
        lines += [
            f"- **{wd.domain}**: the {n_q} selected queries use **{n_skel} distinct skeletons** (query "
            "lower-cased with its 5 core terms masked).",
            f"  Threshold rule: {prof.get('threshold_rule', '?')}; users per rule: "
            f"{json.dumps(prof.get('threshold_rules_used', {}), sort_keys=True)}.",
            f"  Audit (numerics, calibration on the audit split, stability): **{n_valid} of {n_g} Gaussians "
            f"pass ({100 * n_valid / max(n_g, 1):.1f}%)**; per check: "
            f"{json.dumps(prof.get('audit_pass', {}), sort_keys=True)}. "
            + (
                f"Users whose Gaussian fails the audit are **not paired** ({excluded} users excluded)."
                if audited_only
                else "Users whose Gaussian fails the audit **are paired and flagged** (`audit_valid = false` "
                f"in `{wd.domain}-users`): {_audited_pairs(dataset_dir, wd.domain)}."
            ),
        ]
    return "\n".join(lines)


def render_card(
    dataset_dir: Path,
    workdirs: Sequence[WorkDir] = (),
    build_info: Mapping[str, Any] | None = None,
) -> str:
    """The README.md text for the configs currently under ``dataset_dir/data``."""
    from pqb.builders.writing_errors.channel import TWO_LETTER_FROM

    configs = [c for c in published_configs(dataset_dir) if "-release" not in c]
    stats = dataset_statistics(dataset_dir)
    config_rows = []
    for c in configs:
        t = _table(dataset_dir, c)
        _, kind = config_kind(c)
        config_rows.append(f"| `{c}` | {t.num_rows} | {CONFIG_DESCRIPTIONS.get(kind, kind)} |")
    provenance = {
        wd.domain: {"sources": dict(_source_files(wd)), "stages": _stage_summary(wd)}
        for wd in sorted(workdirs, key=lambda w: w.domain)
    }
    build = {"schema_version": SCHEMA_VERSION, **dict(build_info or {})}
    versions = {k: v for k, v in library_versions().items() if k != "python"}
    front = "\n".join(
        [
            "---",
            "license: other",
            "license_name: amazon-reviews-2023",
            "license_link: https://amazon-reviews-2023.github.io/",
            "language:",
            "- en",
            "pretty_name: PQB (PersonalQuery-Benchmark)",
            "task_categories:",
            "- text-retrieval",
            "tags:",
            "- retrieval-robustness",
            "- personalization",
            "- amazon-reviews-2023",
            _yaml_configs(dataset_dir, configs),
            "---",
        ]
    )
    domains = ", ".join(f"`{d}`" for d in sorted(stats)) or "(none built)"
    return "\n".join(
        [
            front,
            "",
            "# PQB: PersonalQuery-Benchmark (re-implementation build)",
            "",
            "Does the *wording alone* move a retriever's ranking when the need is fixed? Each target product "
            "gets two queries from two users whose syntactic profiles are far apart (a **syntactic pair**: "
            "same target, same 5 core terms, each exactly once), and each query may carry its author's own "
            "characteristic typos (an **error pair**: clean vs. error query). Method: Liang et al., "
            '"PersonalQuery-Benchmark: Evaluating Retrieval Robustness to Personalized User Expression '
            'Differences" (2026); this dataset is built by an independent re-implementation, not by the '
            "authors.",
            "",
            f"Domains in this build: {domains}.",
            "",
            "```python",
            "from datasets import load_dataset",
            f'rows = load_dataset("{settings.PQB_HUB_DATASET}", "video_games", split="test")  # from the Hub',
            'rows = load_dataset("pqb_dataset", "video_games", split="test")  # a local folder (this checkout)',
            'corpus = load_dataset("pqb_dataset", "video_games-corpus", split="test")  # id, title, text',
            "```",
            "",
            "Retrievers read each document as `title + \" \" + text` (MTEB's and BEIR's join; `text` never "
            "repeats the title). `<domain>-corpus`, `<domain>-queries` and `<domain>-qrels` are MTEB's "
            "retrieval layout under the subset name `<domain>`. Shard file names carry the first 16 hex "
            "digits of their sha256, so `datasets`' cache (keyed by folder name, config and file paths) "
            "never serves rows of another build.",
            "",
            "## Configs",
            "",
            "| config | rows | content |",
            "|---|---|---|",
            *config_rows,
            "",
            "## Statistics",
            "",
            _stats_table(stats),
            "",
            "Definitions (the paper's counts table, made explicit): **syntactic** = benchmark rows (clean "
            "personalised queries; the paper counts queries, not pairs); **writing_error** = rows with a "
            "non-null `error_query`; **total** = syntactic + writing_error; **user_profiles** = distinct "
            "users of the rows (= rows of `<domain>-users`); **sentences** = sum of `n_sentences` over those "
            "users (the review sentences their syntactic profiles read); **syntactic_pairs** = distinct `pair_id`; "
            "**target_products** = distinct `asin` of the rows; **corpus_documents** = rows of "
            "`<domain>-corpus`.",
            "",
            "## What this build can measure: saturation",
            "",
            _saturation_section(dataset_dir) or "- (no corpus built)",
            "",
            "## How the queries were made",
            "",
            _method_section(workdirs) or "- (no build information recorded)",
            "",
            "## Syntactic pairs: realizations, acceptance thresholds, audit",
            "",
            _syntactic_section(dataset_dir, workdirs) or "- (no build information recorded)",
            "",
            "Per target product: the user pair with the largest distance between their syntactic Gaussians "
            "(rank-one + diagonal, 16-d) is chosen; each user gets the candidate with the highest own "
            "log-density that lies inside the user's acceptance region (D² ≤ own threshold) and outside the "
            "partner's (D² > partner threshold); `syntax` records own log-likelihood, own D², partner D², "
            "both thresholds and the pair distance. `error_edits` and `error_chain` hold character offsets "
            "into `query`.",
            "",
            "## Query naturalness",
            "",
            "Core terms must describe the product and each must be phrased as what it is. At ingest, every "
            "attribute value is judged on the domain's own data (`pqb.builders.source.descriptors`): its "
            "own parse (instruction verbs, fragments, placeholders are rejected), whether the product's own "
            "text, other products' text or the domain's reviews attest it (*unattested* otherwise), and "
            "whether its key carries descriptors (at least half of the key's values pass); an audience "
            "four in five of its key's products give is their default (*default_value*: \"for an adult\"), "
            "not a core term, nor is a feature, connectivity or material key that fewer than one in five of "
            "its products' own words repeat (*unechoed_key*: \"Other display features: Wireless\" on skins), "
            "nor a colour field one of whose parts ends in a word that heads another key's values "
            "(*not_a_colour*: \"Red Switch\", \"Blue Switch-White\", \"Rainbow Backlit\"); each is typed "
            'from its key, its parse and how the domain\'s text uses it ("for gaming", "works with '
            'Windows", "dust proof switches"), and a category-path node the text uses as a platform is '
            "a candidate too. The check below reads only the published queries, attribute names and corpus "
            "(`pqb.builders.reports.query_checks`, spaCy): a *wrong-kind phrasing* is a core term in a slot "
            "built for another kind (an adjective, colour, rating or design name after "
            "with/offering/featuring/has, or a purpose there; an adjective or colour after made of/for/by; a "
            "participle before design/style; a name as a predicate or a head noun; a fragment anywhere). "
            "Perplexity and rated naturalness are not here: they need a model or raters (`pqb-build "
            "validate`).",
            "",
            _naturalness_section(dataset_dir, workdirs) or "- (no rows)",
            "",
            "## Error pairs: dose, locations, evidence",
            "",
            _error_section(dataset_dir, workdirs),
            "",
            "## Injected typos beside real typing slips",
            "",
            "`pqb-build validate typos` puts the injected edits beside real typing slips that were never "
            "used to estimate the slip channel (held-out repositories), with 95% bootstrap CIs over slips "
            "(it adds the authors' released typos when a local copy exists). Every slip is read by one "
            "Damerau-Levenshtein rule; *implausible as a motor slip* = an insertion that is neither a "
            "QWERTY neighbour of an adjacent letter, nor a copy of a letter within 3 places, nor a vowel, "
            "an inserted letter of another case, or a substitution that is none of neighbour, "
            "vowel-for-vowel, nearby copy, sound-alike. The real slips' *multi-letter or other* share "
            'includes renames ("Note" -> "Post"), which no injector should make; the injector\'s only '
            f"multi-letter edits are its two-letter slips (`two_letter`, on words of {TWO_LETTER_FROM}+ letters).",
            "",
            _typo_section(workdirs) or "- (no build information recorded)",
            "",
            "## Privacy: pseudonymous user ids",
            "",
            '`user_id` = `"u_" + sha256("pqb|" + amazon_user_id)[:16]`. This is a pseudonym, not '
            "anonymisation: anyone with the raw Amazon Reviews 2023 files can recompute it and link a row "
            "to the public reviews it was derived from. No review text is published here; user profiles "
            "are summary statistics (Gaussian parameters, error-mechanism counts).",
            "",
            "## Honest limits of this build",
            "",
            "- Built from whatever Amazon Reviews 2023 files were given (see provenance). The offline default "
            "is a small real slice (`amazon2023-mini`): ~20 sentences per user instead of the paper's 50, "
            "so acceptance thresholds are configuration (see the build config) and counts are far below "
            "the paper's (Baby 696, Musical 1,315, Video Games 4,505 query instances).",
            "- Realizer queries are composed from a hand-written grammar: varied (see the skeleton count) but "
            "not model-written. The LLM back-end (`pqb-build generate --backend llm --generator-model <id or "
            "path>`) runs end to end (tested with the offline SmolLM2-135M stand-in, which is too small to "
            "be used for a release).",
            "- With link=any, a row's user did not review its target product; the syntactic and error "
            "profiles are still that real user's.",
            "",
            "## Locally built release configs",
            "",
            "`pqb-build release --domain <d> [--meta meta_<Category>.jsonl]` imports the authors' published "
            "queries (`cpxjazz123/PersonalQuery-Benchmark`, `dataset/<Category>.json`) as `<d>-release` "
            "(queries only: no core terms, no corpus, edits recovered by diffing `syntax_query` against "
            "`typo_query`) and, given your own Amazon meta file, `<d>-release-corpus`. They copy "
            "third-party data: they are built locally, never committed or pushed. This card declares only "
            "configs whose files exist; `pqb-build release` adds the release configs it wrote to the local "
            "card's YAML (so `load_dataset('pqb_dataset', 'video_games-release')` works), and the next "
            "`pqb-build publish` restores the published card.",
            "",
            "## Licence",
            "",
            "Derived from Amazon Reviews 2023 (McAuley Lab, https://amazon-reviews-2023.github.io/; Hou et "
            "al., arXiv:2403.03952), whose terms apply: research use; the review and product data remain "
            "subject to Amazon's terms. Product documents in `<d>-corpus` are cleaned metadata text. The "
            "code that built this dataset is Apache-2.0.",
            "",
            "## Provenance",
            "",
            "Source files (sha256), build configuration, seed and library versions, from the builder's "
            "work-dir manifests (timings and local paths removed so the card is reproducible):",
            "",
            "```json",
            json.dumps(
                {"build": build, "libraries": versions, "domains": provenance},
                indent=1,
                sort_keys=True,
                ensure_ascii=False,
            ),
            "```",
            "",
            "## Citation",
            "",
            "```bibtex",
            "@misc{liang2026pqb,",
            "  title = {PersonalQuery-Benchmark: Evaluating Retrieval Robustness to Personalized User "
            "Expression Differences},",
            "  author = {Liang, Wenyu and Yin, Hongzhi and Wu, Tongtong and Liu, Fan and Dai, Kexin and "
            "Wang, Weiqing},",
            "  year = {2026},",
            "  url = {https://github.com/cpxjazz123/PersonalQuery-Benchmark}",
            "}",
            "```",
            "",
        ]
    )


def write_card(
    dataset_dir: Path,
    workdirs: Sequence[WorkDir] = (),
    build_info: Mapping[str, Any] | None = None,
) -> Path:
    """Render and atomically write ``dataset_dir/README.md`` (provenance covers ``workdirs``: pass them all)."""
    path = Path(dataset_dir) / "README.md"
    atomic_write_text(path, render_card(Path(dataset_dir), workdirs, build_info))
    return path
