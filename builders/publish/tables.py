"""Publishing: work dirs -> ``pqb_dataset/`` (a Hugging Face dataset repo) -> optionally the Hub.

Layout written (one parquet file per config, split ``test``)::

    pqb_dataset/README.md                                          dataset card (pqb.builders.publish.card)
    pqb_dataset/data/<config>/test-00000-of-00001-<sha16>.parquet  <d>, <d>-corpus, <d>-queries, <d>-qrels, <d>-users

Shard names are content-addressed (``<sha16>`` = the first 16 hex digits of the file's sha256), so
``datasets.load_dataset(<folder>, <config>)`` can never serve another build's rows: ``datasets`` keys
its cache for a local folder on the folder's *name*, the config name and the card's ``data_files``
paths, not on file contents, absolute paths or mtimes. Two builds with different bytes have different
paths in the card, hence different cache keys; equal bytes share a name and a cache entry, correctly.
(Forcing a fresh ``cache_dir`` would only protect callers who pass it; the name protects every caller,
including those of the Hub, where old and new shards never collide either.)

Every table is validated against :mod:`pqb.dataset.schema` before it is written, rows are sorted, and
the writer is :func:`pqb.builders.workdir.write_parquet`, so equal inputs give byte-identical files.

Privacy: Amazon user ids never leave the work dir. Everything published carries
:func:`pseudonymize` (``"u_" + sha256("pqb|" + amazon_user_id)[:16]``). It is a pseudonym, not
anonymisation: anyone holding the raw Amazon data can recompute it, which the card says.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from pqb.builders.errors import HubPushError, MissingInputError, SchemaViolationError, UsageError
from pqb.builders.publish.layout import (
    DATA_DIR,
    SHARD_GLOB,
    SHARD_PREFIX,
    config_path,
    published_configs,
    shard_name,
)
from pqb.builders.workdir import (
    CORPUS,
    GAUSSIANS,
    PAIRS,
    PROFILES,
    WorkDir,
    read_parquet,
    write_parquet,
    writer_lock,
)
from pqb.dataset import settings
from pqb.dataset.schema import (
    CONFIG_SCHEMAS,
    QRELS_SCHEMA,
    QUERIES_SCHEMA,
    USERS_SCHEMA,
    config_kind,
    config_name,
    count_term,
    document_string,
    query_id,
    validate_table,
)

KINDS: tuple[str, ...] = ("rows", "corpus", "queries", "qrels", "users")
SORT_KEYS: dict[str, list[str]] = {
    "rows": ["id"],
    "release": ["id"],
    "corpus": ["id"],
    "queries": ["id"],
    "qrels": ["query-id", "corpus-id"],
    "users": ["user_id"],
}


def pseudonymize(user_id: str) -> str:
    """Published user id: ``"u_" + sha256("pqb|" + amazon_user_id)[:16]`` (recomputable from raw data)."""
    return "u_" + hashlib.sha256(f"pqb|{user_id}".encode()).hexdigest()[:16]


def sort_table(table: pa.Table, kind: str) -> pa.Table:
    keys = SORT_KEYS.get(kind, [])
    return table.sort_by([(k, "ascending") for k in keys]) if keys and table.num_rows else table


def write_config(table: pa.Table, dataset_dir: Path, config: str) -> Path:
    """Validate ``table`` against its kind's schema, sort it and write the config's parquet shard."""
    _, kind = config_kind(config)
    kind = "release" if kind.startswith("release") and kind != "release-corpus" else kind
    kind = "corpus" if kind == "release-corpus" else kind
    table = table.select(CONFIG_SCHEMAS[kind].names).cast(CONFIG_SCHEMAS[kind])
    report = validate_table(table, kind, config)
    if not report.ok:
        raise SchemaViolationError(f"refusing to publish {config}:\n{report.summary()}")
    folder = Path(dataset_dir) / DATA_DIR / config
    written = folder / f".{SHARD_PREFIX}.parquet.new"
    write_parquet(sort_table(table, kind), written)
    path = folder / shard_name(written)
    written.replace(path)
    for stale in folder.glob(SHARD_GLOB):  # the config has one shard: drop its older ones (never other files)
        if stale != path:
            stale.unlink()
    return path


# --------------------------------------------------------------------------------------------------
# Building the tables of one domain
# --------------------------------------------------------------------------------------------------


def publish_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Replace raw user ids by pseudonyms in ``user_id`` and ``id`` (``<domain>:<asin>:<pseudonym>``)."""
    out = []
    for r in rows:
        r = dict(r)
        r["user_id"] = pseudonymize(str(r["user_id"]))
        r["id"] = f"{r['domain']}:{r['asin']}:{r['user_id']}"
        out.append(r)
    return sorted(out, key=lambda r: r["id"])


def beir_views(rows: Sequence[Mapping[str, Any]]) -> tuple[pa.Table, pa.Table]:
    """MTEB/BEIR views: a query per clean query and per error query; each query's one relevant doc."""
    queries, qrels = [], []
    for r in rows:
        sides = [(query_id(r["id"]), r["query"])]
        if r.get("error_query") is not None:
            sides.append((query_id(r["id"], error=True), r["error_query"]))
        for qid, text in sides:
            queries.append({"id": qid, "text": text})
            qrels.append({"query-id": qid, "corpus-id": r["asin"], "score": 1})
    return (
        pa.Table.from_pylist(queries, schema=QUERIES_SCHEMA),
        pa.Table.from_pylist(qrels, schema=QRELS_SCHEMA),
    )


def _error_summaries(workdir: WorkDir, user_ids: Iterable[str]) -> Any:
    """Builders II's per-user error profile summary function for ``user_ids``, or ``None`` when the errors
    stage has not run."""
    from pqb.builders.writing_errors.profiles import ErrorProfiles

    if not (workdir.path / PROFILES).is_file():
        return None
    return ErrorProfiles.load(workdir.path, user_ids).summary


def users_table(workdir: WorkDir, user_ids: Iterable[str]) -> pa.Table:
    """The ``<d>-users`` config: Gaussian, threshold, sentence counts and error profile of each row user.

    The sentence counts are those the user's syntactic profile read (its Gaussian's audit record): all of
    the user's sentences, or at most ``UserConfig.max_sentences`` under the paper preset's cap."""
    from pqb.builders.syntax.gaussian import load_gaussians

    gaussians = load_gaussians(workdir.file(GAUSSIANS))
    wanted = sorted(set(user_ids))
    summary = _error_summaries(workdir, wanted)
    out = []
    for uid in wanted:
        g = gaussians[uid]
        n_profile, n_heldout = int(g.audit["n_profile"]), int(g.audit["n_heldout"])
        e = summary(uid) if summary is not None else {}
        mech = e.get("mechanisms") or []
        out.append(
            {
                "user_id": pseudonymize(uid),
                "domain": workdir.domain,
                "mu": [float(x) for x in g.mu],
                "v": [float(x) for x in g.v],
                "lam": float(g.lam),
                "sigma2": [float(x) for x in g.sigma2],
                "threshold": float(g.threshold),
                "threshold_kind": str(g.threshold_kind),
                "audit_valid": bool(g.audit.get("valid")),
                "n_sentences": n_profile + n_heldout,  # what the syntactic profile read (capped or not)
                "n_profile_sentences": n_profile,
                "n_heldout_sentences": n_heldout,
                "n_tokens": int(e.get("n_tokens") or 0),
                "n_char_errors": int(e.get("n_char_errors") or 0),
                "error_rate": float(e.get("error_rate") or 0.0),
                "mechanisms": [
                    {"mechanism": str(m["mechanism"]), "count": int(m["count"]), "prob": float(m["prob"])}
                    for m in mech
                ],
            }
        )
    return pa.Table.from_pylist(out, schema=USERS_SCHEMA)


def domain_tables(workdir: WorkDir) -> dict[str, pa.Table]:
    """All five configs of one built domain, from its work dir (``pairs.parquet``, ``corpus.parquet``, ...)."""
    from pqb.dataset.schema import CORPUS_SCHEMA, ROWS_SCHEMA

    raw = read_parquet(workdir.file(PAIRS)).to_pylist()
    rows = publish_rows(raw)
    queries, qrels = beir_views(rows)
    corpus = read_parquet(workdir.file(CORPUS)).select(CORPUS_SCHEMA.names)
    return {
        "rows": pa.Table.from_pylist(rows, schema=ROWS_SCHEMA),
        "corpus": corpus.cast(CORPUS_SCHEMA),
        "queries": queries,
        "qrels": qrels,
        "users": users_table(workdir, [r["user_id"] for r in raw]),
    }


def publish_domain(workdir: WorkDir, dataset_dir: Path | None = None) -> dict[str, int]:
    """Publish ``workdir.domain`` alone (:func:`publish` of one work dir); returns rows per config.

    Refuses (:meth:`WorkDir.require_consistent`) when a recorded stage is stale: the rows would
    otherwise be published beside the statistics of another build's Gaussians or profiles.
    """
    return publish([workdir], dataset_dir)


def _write_domain(workdir: WorkDir, dataset_dir: Path | None) -> dict[str, int]:
    """:func:`publish_domain` for a work dir already checked."""
    dataset_dir = Path(dataset_dir or settings.default_dataset_dir())
    out = {}
    for kind, table in domain_tables(workdir).items():
        config = config_name(workdir.domain, kind)
        write_config(table, dataset_dir, config)
        out[config] = table.num_rows
    return out


def withdraw_domain(domain: str, dataset_dir: Path) -> list[str]:
    """Delete ``domain``'s built configs (:data:`KINDS`; an imported ``<domain>-release`` stays) from a
    staged copy of the dataset (:func:`pqb.builders.publish.staging.staged`, whose commit deletes from the
    folder only the shards the previous card listed); returns the configs removed.

    Why: a rebuild of a domain that yields no pairs publishes nothing for it, and its configs from an
    earlier build stayed in the folder, listed by the new card beside this build's settings: rows no
    current build made, published with exit code 0.
    """
    removed = []
    for kind in KINDS:
        config = config_name(domain, kind)
        folder = Path(dataset_dir) / DATA_DIR / config
        shards = sorted(folder.glob(SHARD_GLOB)) if folder.is_dir() else []
        for shard in shards:
            shard.unlink()
        if shards:
            removed.append(config)
            if not any(folder.iterdir()):
                folder.rmdir()
    return removed


def publish(
    workdirs: Sequence[WorkDir],
    dataset_dir: Path | None = None,
    *,
    build_info: Mapping[str, Any] | None = None,
    withdraw: Sequence[str] = (),
) -> dict[str, int]:
    """Publish every domain of ``workdirs``, delete the built configs of the ``withdraw`` domains (built
    now, with no pairs: :func:`withdraw_domain`), and rewrite the dataset card over all configs present.
    Returns rows per config written, and 0 for each config withdrawn.

    Every work dir is checked (:meth:`WorkDir.require_consistent`) before anything is written, so a
    stale stage in one domain leaves the dataset folder as it was. ``build_info`` (seed, config,
    source: what ``pqb-build all`` passes) is stored in each work dir's manifest
    (:func:`record_build_info`); without it, the stored one is used (:func:`recorded_build_info`), so
    ``pqb-build publish`` after ``pqb-build all`` writes the same card.

    The dataset folder and every work dir are held under their writer locks, and the new generation is
    written into a staged copy and committed card last (:func:`pqb.builders.publish.staging.staged`):
    readers never see a card naming shards that are gone, and only shards the previous card listed
    are deleted.
    """
    dataset_dir = Path(dataset_dir or settings.default_dataset_dir())
    with writer_lock(dataset_dir, *(wd.path for wd in workdirs)):
        return _publish(workdirs, dataset_dir, build_info, withdraw)


def _publish(workdirs: Sequence[WorkDir], dataset_dir: Path, build_info: Mapping[str, Any] | None,
             withdraw: Sequence[str]) -> dict[str, int]:  # fmt: skip
    """:func:`publish` under its locks."""
    from pqb.builders.publish.card import write_card
    from pqb.builders.publish.staging import refuse_escape, staged

    refuse_escape(dataset_dir)
    for wd in workdirs:
        wd.require_consistent()
    built = {(d, kind) for d, kind in map(config_kind, published_configs(dataset_dir)) if kind in KINDS}
    if not workdirs and not any(domain in withdraw for domain, _ in built):
        return {}  # nothing to write or withdraw: the folder and its card stay as they are
    others = sorted({domain for domain, _ in built} - {wd.domain for wd in workdirs} - set(withdraw))
    if others:  # the card has one build block and provenance only for ``workdirs``
        raise UsageError(
            f"{dataset_dir} already holds the built domain(s) {', '.join(others)}, which this publish does "
            "not cover: the new card would list their rows under this build's settings with no provenance; "
            "publish every domain together (`pqb-build publish --workdir <root>`) or use another --dataset"
        )
    if build_info is not None:
        record_build_info(workdirs, build_info)
    else:
        build_info = recorded_build_info(workdirs)
    counts: dict[str, int] = {}
    with staged(dataset_dir) as stage:
        for wd in workdirs:
            counts.update(_write_domain(wd, stage))
        counts.update({c: 0 for d in withdraw for c in withdraw_domain(d, stage)})
        write_card(stage, workdirs=workdirs, build_info=build_info)
    return counts


BUILD_KEY = "build"
"""Manifest key of the build settings ``pqb-build all`` ran with (:func:`record_build_info`)."""


def _build_stages(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Fingerprint of each recorded build stage (``validate*`` studies left out, as in the card)."""
    return {
        name: str(rec.get("fingerprint"))
        for name, rec in sorted(manifest.get("stages", {}).items())
        if not name.startswith("validate")
    }


def record_build_info(workdirs: Sequence[WorkDir], build_info: Mapping[str, Any]) -> None:
    """Store ``build_info`` in each work dir's manifest with the fingerprints of the stages it describes.

    Why: the card's ``build`` block (seed, config, source) is known only to ``pqb-build all``; a later
    ``pqb-build publish`` of the same work dirs dropped it, so publishing again changed the card.
    """
    for wd in workdirs:
        manifest = wd.manifest  # re-read: keeps the stages' records
        manifest[BUILD_KEY] = {"info": dict(build_info), "stages": _build_stages(manifest)}
        wd.save_manifest()


def recorded_build_info(workdirs: Sequence[WorkDir]) -> dict[str, Any] | None:
    """The build settings :func:`record_build_info` stored, when they still describe every work dir.

    ``None`` (no ``build`` block in the card, as before ``pqb-build all`` stored one) when a work dir
    has none, or when a stage ran again since (its fingerprint moved: ``pqb-build profiles --force``
    with other settings no longer matches the stored config; a note on stderr says so). Work dirs
    whose stored settings differ cannot share the card's one ``build`` block: :class:`UsageError`.
    """
    import sys

    found: dict[str, Any] = {}
    for wd in workdirs:
        manifest = wd.manifest
        stored = manifest.get(BUILD_KEY)
        if not stored:
            return None
        if stored.get("stages") != _build_stages(manifest):
            print(
                f"note: {wd.domain}: a stage ran again since `pqb-build all` recorded its settings; "
                "the card leaves the build block out (each stage's own settings stay in the provenance)",
                file=sys.stderr,
            )
            return None
        found[wd.domain] = stored.get("info")
    infos = list(found.values())
    if any(info != infos[0] for info in infos[1:]):
        raise UsageError(
            f"the work dirs of {', '.join(sorted(found))} were built by `pqb-build all` with different "
            "settings, and the card has one build block: publish them to separate datasets or rebuild "
            "them with the same settings"
        )
    return dict(infos[0]) if infos else None


# --------------------------------------------------------------------------------------------------
# The Hub
# --------------------------------------------------------------------------------------------------


def push_to_hub(
    dataset_dir: Path | None = None,
    repo_id: str | None = None,
    *,
    token: str | None = None,
    private: bool = False,
    revision: str | None = None,
    commit_message: str = "Upload PQB dataset",
) -> str:
    """Create the dataset repo if needed and upload ``README.md`` and ``data/`` only.

    The ``.py`` files of the schema package are never uploaded (datasets >= 4 refuses loading scripts and
    they are not data), nor the locally built ``*-release*`` configs (they copy third-party data).
    """
    if settings.HF_HUB_OFFLINE:
        raise HubPushError(
            "HF_HUB_OFFLINE is set: the Hub push needs a network connection. Unset it to push."
        )
    from huggingface_hub import HfApi

    dataset_dir = Path(dataset_dir or settings.default_dataset_dir())
    repo_id = repo_id or settings.PQB_HUB_DATASET
    if not (dataset_dir / "README.md").exists():
        raise MissingInputError(f"{dataset_dir}/README.md not found: run `pqb-build all` or `publish` first.")
    try:
        with writer_lock(dataset_dir):  # no publish rewrites the folder while it is uploaded
            return _upload(HfApi(token=token), dataset_dir, repo_id, private, revision, commit_message)
    except OSError as exc:  # requests' and huggingface_hub's errors are OSErrors: offline, refused, 401
        first = (str(exc).splitlines() or [""])[0][:200]
        raise HubPushError(
            f"the Hub push to {repo_id} failed ({type(exc).__name__}: {first}); "
            "check the network and the token (--token or `huggingface-cli login`); the local dataset is unchanged"
        ) from exc


def _upload(
    api: Any, dataset_dir: Path, repo_id: str, private: bool, revision: str | None, commit_message: str
) -> str:
    """Create the repo if needed, upload the shards, then the card (see :func:`push_to_hub`)."""
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(
        folder_path=str(dataset_dir),
        repo_id=repo_id,
        repo_type="dataset",
        revision=revision,
        allow_patterns=[f"{DATA_DIR}/**/*.parquet"],
        ignore_patterns=["*.py", "**/__pycache__/**", f"{DATA_DIR}/*-release*/**"],
        delete_patterns=[f"{DATA_DIR}/**/*.parquet"],  # shards of an earlier build have other names
        commit_message=f"{commit_message} (data)",
    )
    info = api.upload_file(
        path_or_fileobj=hub_card((dataset_dir / "README.md").read_text(encoding="utf-8")).encode("utf-8"),
        path_in_repo="README.md",
        repo_id=repo_id,
        repo_type="dataset",
        revision=revision,
        commit_message=f"{commit_message} (card)",
    )
    return str(getattr(info, "commit_url", info))


def hub_card(card: str) -> str:
    """The card as pushed: without the local-only ``*-release*`` configs, whose files are never uploaded
    (the Hub viewer would otherwise list configs with no data)."""
    out, skipping, in_configs = [], False, False
    for line in card.splitlines(keepends=True):
        if line.startswith("configs:"):
            in_configs = True
        elif in_configs and (line.rstrip() == "---" or not line.startswith((" ", "- "))):
            in_configs = skipping = False
        if in_configs and line.startswith("- config_name:"):
            skipping = "-release" in line
        if not skipping:
            out.append(line)
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# Checking a built dataset
# --------------------------------------------------------------------------------------------------


def _read(dataset_dir: Path, config: str) -> pa.Table | None:
    path = config_path(dataset_dir, config)
    return read_parquet(path) if path.exists() else None


def _kind_of(config: str) -> str:
    _, kind = config_kind(config)
    return {"release-corpus": "corpus"}.get(kind, kind)


def check_views(
    report: Any, domain: str, rows: list[dict[str, Any]], queries: pa.Table | None, qrels: pa.Table | None
) -> None:
    """The BEIR views must be exactly what :func:`beir_views` derives from the rows."""
    want_q, want_r = beir_views(rows)
    for name, have, want, key in (
        ("queries", queries, want_q, ["id"]),
        ("qrels", qrels, want_r, ["query-id", "corpus-id"]),
    ):
        config = config_name(domain, name)
        if have is None:
            report.add(config, None, "missing_config", f"{config} is missing")
            continue
        report.checked[f"{name}_rows"] += have.num_rows
        ids = have.column(key[0]).to_pylist()
        if len(ids) != len(set(ids)) and name == "queries":
            report.add(config, None, "duplicate_id", f"{len(ids) - len(set(ids))} duplicate query ids")
        have_set = {tuple(r.values()) for r in have.select(want.schema.names).to_pylist()}
        want_set = {tuple(r.values()) for r in want.to_pylist()}
        for extra in sorted(have_set - want_set)[:50]:
            report.add(config, None, "view_inconsistent", f"{extra} is not derived from the rows")
        for missing in sorted(want_set - have_set)[:50]:
            report.add(config, None, "view_inconsistent", f"{missing} is missing (derived from the rows)")


def check_core_term_presence(
    report: Any, config: str, rows: Sequence[Mapping[str, Any]], documents: Mapping[str, str]
) -> None:
    """Every core term of a row must occur in its target's document (the title + text string a retriever
    reads, :func:`pqb.dataset.schema.document_string`; ``count_term``: whole words, any case). Counted in ``checked`` as ``core_terms`` / ``core_terms_in_document``; each miss is a
    ``core_term_not_in_document`` violation (the builder drops such targets before pairing)."""
    for i, r in enumerate(rows):
        doc = documents.get(str(r["asin"]), "")
        for t in r.get("core_terms") or []:
            report.checked["core_terms"] += 1
            if count_term(doc, t):
                report.checked["core_terms_in_document"] += 1
            else:
                report.add(
                    config, i, "core_term_not_in_document", f"core term {t!r} not in {r['asin']}'s document"
                )


def core_term_presence(report: Any) -> str:
    """The share of core terms present in their target's document, as ``pqb-build check`` prints it."""
    n, k = report.checked.get("core_terms", 0), report.checked.get("core_terms_in_document", 0)
    return f"core-term presence in target documents: {k}/{n} ({100 * k / n:.2f}%)" if n else ""


def check_readability(report: Any, config: str, rows: Sequence[dict[str, Any]]) -> None:
    """Every edit of every error row (``error_chain``, hence every prefix, and ``error_edits``) is a
    readable typo (:func:`pqb.builders.writing_errors.readability.readable`: judged without any corrector,
    so no defense the harness evaluates shares the rule; issue 29)."""
    from pqb.builders.writing_errors.readability import readable

    for i, r in enumerate(rows):
        if r.get("error_query") is None:
            continue
        report.checked["error_rows_readability"] += 1
        seen: set[tuple[int, str]] = set()
        for e in list(r.get("error_chain") or []) + list(r.get("error_edits") or []):
            key = (int(e["start"]), str(e["edited"]))
            if key in seen:
                continue
            seen.add(key)
            report.checked["edits_readability"] += 1
            if not readable(str(e["original"]), str(e["edited"])):
                report.add(config, i, "edit_not_readable", f"{e['original']!r}->{e['edited']!r}")


def check_dataset(dataset_dir: Path | None = None, configs: Sequence[str] | None = None) -> Any:
    """Schema + invariants of every (or the given) config of a built dataset; every violation reported.

    Rules: each table matches its schema; rows pass :func:`pqb.dataset.schema.check_rows` (core terms,
    pairs, edits, protected tokens, targets in the corpus); every edit is readable
    (:func:`check_readability`); corpus, query and user ids are unique; the
    queries/qrels views equal what the rows imply; every row's user has a profile in ``<d>-users``; and
    the card's statistics table equals the statistics of the files.
    """
    from pqb.dataset.schema import ValidationReport, check_rows

    dataset_dir = Path(dataset_dir or settings.default_dataset_dir())
    report = ValidationReport()
    present = published_configs(dataset_dir)
    wanted = list(configs) if configs else present
    domains = sorted({config_kind(c)[0] for c in wanted})
    for c in wanted:
        if c not in present:
            report.add(c, None, "missing_config", f"no {DATA_DIR}/{c}/{SHARD_GLOB} under {dataset_dir}")
    for domain in domains:
        for c in [c for c in present if config_kind(c)[0] == domain and (not configs or c in wanted)]:
            table = _read(dataset_dir, c)
            kind = _kind_of(c)
            report.extend(validate_table(table, kind, c))
            if kind == "corpus":
                ids = table.column("id").to_pylist()
                if len(ids) != len(set(ids)):
                    report.add(c, None, "duplicate_id", f"{len(ids) - len(set(ids))} duplicate corpus ids")
            if kind == "users":
                ids = table.column("user_id").to_pylist()
                if len(ids) != len(set(ids)):
                    report.add(c, None, "duplicate_id", f"{len(ids) - len(set(ids))} duplicate user ids")
            if kind not in ("rows", "release"):
                continue
            corpus = _read(dataset_dir, f"{domain}-corpus" if kind == "rows" else f"{domain}-release-corpus")
            corpus_ids = set(corpus.column("id").to_pylist()) if corpus is not None else None
            if kind == "rows" and corpus_ids is None:
                report.add(c, None, "missing_config", f"{domain}-corpus is missing")
            rows = table.to_pylist()
            report.extend(
                check_rows(
                    rows,
                    config=c,
                    require_core_terms=kind == "rows",
                    corpus_ids=corpus_ids,
                    release=kind == "release",
                )
            )
            if kind == "rows":
                check_views(
                    report,
                    domain,
                    rows,
                    _read(dataset_dir, f"{domain}-queries"),
                    _read(dataset_dir, f"{domain}-qrels"),
                )
                check_readability(report, c, rows)
                if corpus is not None:
                    docs = {d["id"]: document_string(d["title"], d["text"]) for d in corpus.to_pylist()}
                    check_core_term_presence(report, c, rows, docs)
                users = _read(dataset_dir, f"{domain}-users")
                have = set(users.column("user_id").to_pylist()) if users is not None else set()
                for i, r in enumerate(rows):
                    if r["user_id"] not in have:
                        report.add(
                            c, i, "user_without_profile", f"user {r['user_id']!r} not in {domain}-users"
                        )
    _check_card(report, dataset_dir)
    return report


def _check_card(report: Any, dataset_dir: Path) -> None:
    from pqb.builders.publish.card import dataset_statistics, parse_stats_table

    card = Path(dataset_dir) / "README.md"
    if not card.exists():
        report.add("README.md", None, "missing_card", "no dataset card")
        return
    report.checked["card"] += 1
    claimed = parse_stats_table(card.read_text(encoding="utf-8"))
    actual = dataset_statistics(dataset_dir)
    for domain in sorted(set(claimed) | set(actual)):
        if claimed.get(domain) != actual.get(domain):
            report.add(
                "README.md", None, "card_statistics",
                f"{domain}: card says {claimed.get(domain)}, files give {actual.get(domain)}",
            )  # fmt: skip
    text = card.read_text(encoding="utf-8")
    for c in published_configs(dataset_dir):
        if f"config_name: {c}\n" not in text:
            report.add("README.md", None, "card_configs", f"config {c} is not declared in the card's YAML")
