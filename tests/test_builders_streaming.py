"""Streaming builders (issue 16): the same bytes whatever the chunking, the executor or a kill midway.

Every speed-up here must leave the artifacts byte-identical, so each test compares against the
one-shot form (one table written at once, one chunk, the per-pair sort, the in-process map).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pqb.builders.config import BuildConfig, EncoderConfig
from pqb.builders.executor import LocalExecutor, make_executor
from pqb.builders.nlp import PARSE_DISABLE, load_spacy
from pqb.builders.parses import CACHE_COUNTS, ParseCache, split_sentences
from pqb.builders.source.amazon import ReadStats, iter_reviews
from pqb.builders.source.loadtest import (
    LOAD_TEST_PREFIX,
    distinct_shares,
    generate_reviews,
    split_sentences_cheaply,
)
from pqb.builders.source.stage import run_ingest, run_users
from pqb.builders.source.users import UserConfig, clean_review_text, link_rows
from pqb.builders.syntax.stage import encoder_training_users, run_profiles
from pqb.builders.workdir import ROW_GROUP_SIZE, ParquetStreamWriter, WorkDir, iter_rows, write_parquet
from pqb.builders.writing_errors.profiles import run_errors
from pqb.dataset import settings

SCHEMA = pa.schema([("user_id", pa.string()), ("review_idx", pa.int64()), ("text", pa.string())])
FILES = ("reviews", "products", "corpus", "sentences", "users", "links")
LATER = ("syntax/vocab.json", "syntax/svd.safetensors", "syntax/encoder.safetensors", "syntax/embeddings.parquet",
         "syntax/gaussians.parquet", "errors/edits.parquet", "errors/profiles.json")  # fmt: skip


def _rows(n: int) -> list[dict]:
    return [{"user_id": f"u{i % 977}", "review_idx": i, "text": "x" * (i % 50)} for i in range(n)]


@pytest.mark.parametrize("n", [0, 5, ROW_GROUP_SIZE, 2 * ROW_GROUP_SIZE + 3])
@pytest.mark.parametrize("step", [1000, ROW_GROUP_SIZE + 1])
def test_stream_writer_gives_write_parquet_bytes(tmp_path: Path, n: int, step: int) -> None:
    rows = _rows(n)
    write_parquet(pa.Table.from_pylist(rows, schema=SCHEMA), tmp_path / "whole.parquet")
    with ParquetStreamWriter(tmp_path / "streamed.parquet", SCHEMA) as out:
        for i in range(0, max(n, 1), step):
            out.write_rows(rows[i : i + step])
    assert (tmp_path / "whole.parquet").read_bytes() == (tmp_path / "streamed.parquet").read_bytes()


def test_stream_writer_leaves_nothing_when_killed(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), ParquetStreamWriter(tmp_path / "x.parquet", SCHEMA) as out:
        out.write_rows(_rows(10))
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("chunk", [1, 7, 40_000, 200_000])
def test_iter_rows_gives_the_taken_rows_in_chunks(tmp_path: Path, chunk: int) -> None:
    """Rows spread over three row groups (one holding none of them) come back in order, ``chunk`` at a time."""
    n = 2 * ROW_GROUP_SIZE + 3
    table = pa.Table.from_pylist(_rows(n), schema=SCHEMA)
    write_parquet(table, tmp_path / "t.parquet")
    rng = np.random.default_rng(chunk)
    rows = np.sort(rng.choice(ROW_GROUP_SIZE, 500, replace=False))  # the first group
    rows = np.concatenate([rows, [n - 3, n - 1]])  # none from the second, two from the third
    parts = list(iter_rows(tmp_path / "t.parquet", ["review_idx", "text"], rows, chunk))
    assert [p.num_rows for p in parts] == [min(chunk, len(rows) - a) for a in range(0, len(rows), chunk)]
    assert pa.concat_tables(parts).equals(table.select(["review_idx", "text"]).take(rows))
    assert list(iter_rows(tmp_path / "t.parquet", ["text"], np.array([], np.int64), chunk)) == []
    with pytest.raises(ValueError, match="ascending"):
        list(iter_rows(tmp_path / "t.parquet", ["text"], np.array([5, 3]), chunk))
    with pytest.raises(IndexError, match="past its"):
        list(iter_rows(tmp_path / "t.parquet", ["text"], np.array([3, n]), chunk))


def _real_slice() -> Path:
    if not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file():
        pytest.skip("needs the offline slice at $PQB_AMAZON_DIR")
    return settings.PQB_AMAZON_DIR


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_load_test_generator_resamples_real_reviews_and_says_so(tmp_path: Path) -> None:
    src = _real_slice()
    info = generate_reviews(src, "Video_Games", 777, tmp_path / "lt", seed=3, texts="resampled")
    lines = _lines(tmp_path / "lt" / "Video_Games.jsonl")
    assert len(lines) == info["reviews"] == 777
    assert all(r["user_id"].startswith(LOAD_TEST_PREFIX) for r in lines)
    real = {r["text"] for r in _lines(src / "Video_Games.jsonl")}
    assert {r["text"] for r in lines} <= real  # resampled, never invented
    assert "LOAD TEST" in (tmp_path / "lt" / "LOADTEST.md").read_text()
    assert (tmp_path / "lt" / "meta_Video_Games.jsonl").read_bytes() == (
        src / "meta_Video_Games.jsonl"
    ).read_bytes()
    again = tmp_path / "again"
    generate_reviews(src, "Video_Games", 777, again, seed=3, texts="resampled")
    assert (again / "Video_Games.jsonl").read_bytes() == (tmp_path / "lt" / "Video_Games.jsonl").read_bytes()
    with pytest.raises(ValueError, match="texts must be one of"):
        generate_reviews(src, "Video_Games", 5, tmp_path / "x", texts="copied")  # type: ignore[arg-type]


def test_distinct_load_test_texts_are_real_words_in_real_shapes_that_do_not_repeat(tmp_path: Path) -> None:
    """The users and products are the resampled ones; each text has its real review's sentence count,
    is made of the slice's words, and texts and sentences repeat less often than in the real slice
    (so no cache answers more often than on real reviews); a seed gives the same bytes."""
    src = _real_slice()
    generate_reviews(src, "Video_Games", 3000, tmp_path / "copy", seed=4, texts="resampled")
    info = generate_reviews(src, "Video_Games", 3000, tmp_path / "lt", seed=4)
    copied, made = (
        _lines(tmp_path / "copy" / "Video_Games.jsonl"),
        _lines(tmp_path / "lt" / "Video_Games.jsonl"),
    )
    assert [(r["user_id"], r["parent_asin"], r["rating"]) for r in made] == [
        (r["user_id"], r["parent_asin"], r["rating"]) for r in copied
    ]
    assert [len(split_sentences_cheaply(r["text"])) for r in made] == [
        max(1, len(split_sentences_cheaply(r["text"]))) for r in copied
    ]
    real = [r["text"] for r in _lines(src / "Video_Games.jsonl")]
    vocab = {w.lower() for t in real for w in re.findall(r"[A-Za-z]+", t)}
    assert {w.lower() for r in made for w in re.findall(r"[A-Za-z]+", r["text"])} <= vocab
    ours, theirs = distinct_shares([r["text"] for r in made]), distinct_shares(real)
    # what a benchmark reports: the written texts, and the real ones the builders read (valid records)
    usable = [r["text"] for r in iter_reviews(src / "Video_Games.jsonl", ReadStats())]
    assert (info["shares"], info["real_shares"]) == (ours, distinct_shares(usable))
    assert (
        ours["distinct_texts"] > theirs["distinct_texts"]
        and ours["distinct_sentences"] > theirs["distinct_sentences"]
    )
    assert not {r["text"] for r in made} & set(real)
    assert '"distinct"' in (tmp_path / "lt" / "LOADTEST.md").read_text()
    generate_reviews(src, "Video_Games", 3000, tmp_path / "again", seed=4)
    assert (tmp_path / "again" / "Video_Games.jsonl").read_bytes() == (
        tmp_path / "lt" / "Video_Games.jsonl"
    ).read_bytes()
    generate_reviews(src, "Video_Games", 3000, tmp_path / "other", seed=5)
    assert not {r["text"] for r in _lines(tmp_path / "other" / "Video_Games.jsonl")} & {
        r["text"] for r in made
    }


def test_parse_cache_counts_distinct_lookups_and_hits(tmp_path: Path) -> None:
    texts = ["One. Two.", "Three.", "One. Two."]
    cache = ParseCache(tmp_path / "p.sqlite")
    before = Counter(CACHE_COUNTS)
    split_sentences(texts, nlp=CountingNlp(), cache=cache)
    split_sentences([*texts, "Four."], nlp=CountingNlp(), cache=cache)
    assert CACHE_COUNTS - before == Counter({"sents lookups": 2 + 3, "sents hits": 2})


def test_parse_cache_is_keyed_by_the_conversion_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit of ``_sents`` (how a sentence's tokens are counted) leaves the model id as it was: keyed by
    it alone, the rerun users stage was served the old code's counts."""
    from pqb.builders import parses

    cache = ParseCache(tmp_path / "p.sqlite")
    assert split_sentences(["One two, three."], nlp=CountingNlp(), cache=cache)[0][0][1] == 3
    monkeypatch.setitem(parses._CONVERT, "sents", lambda doc: [[s.text.strip(), 0] for s in doc.sents])
    monkeypatch.setattr(parses, "parse_code_id", lambda: "edited code", raising=False)
    assert split_sentences(["One two, three."], nlp=CountingNlp(), cache=cache)[0][0][1] == 0


def test_sentence_boundaries_need_neither_tagger_nor_attribute_ruler() -> None:
    """The users stage splits with the parser alone (``SENTS_DISABLE``): same sentences and token counts
    as the whole pipeline, on real reviews."""
    texts = [clean_review_text(r["text"]) for r in _lines(_real_slice() / "Video_Games.jsonl")[:300]]
    full = load_spacy(disable=PARSE_DISABLE)
    assert {"tagger", "attribute_ruler"} <= set(full.pipe_names)
    lean = split_sentences(texts, cache=ParseCache(None))
    assert sum(map(len, lean)) > len(texts)
    assert lean == split_sentences(texts, nlp=full, cache=ParseCache(None))


def _build(work: Path, src: Path, executor: object = None, *, later: bool = False) -> dict[str, bytes]:
    """Ingest and users (and, with ``later``, profiles with a small encoder and errors) → their bytes."""
    cfg = BuildConfig(source=src, link="any", executor=executor, threshold_kind="heldout",  # type: ignore[arg-type]
                      encoder=EncoderConfig(epochs=2), encoder_max_sentences=400)  # fmt: skip
    wd = WorkDir(work, "video_games")
    run_ingest(wd, cfg)
    run_users(wd, cfg)
    out = {f: (work / "video_games" / f"{f}.parquet").read_bytes() for f in FILES}
    if later:
        run_profiles(wd, cfg)
        run_errors(wd, cfg)
        out |= {f: (work / "video_games" / f).read_bytes() for f in LATER}
    return out


def test_ingest_and_users_chunking_does_not_change_a_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "lt"
    generate_reviews(_real_slice(), "Video_Games", 400, src)
    whole = _build(tmp_path / "whole", src)
    monkeypatch.setattr("pqb.builders.source.stage.INGEST_BATCH", 7)
    monkeypatch.setattr("pqb.builders.source.stage.USERS_CHUNK", 33)
    monkeypatch.setattr("pqb.builders.parses.PARSE_CHUNK", 5)
    assert _build(tmp_path / "chunked", src) == whole


class CountingNlp:
    """A fake pipeline that splits on '.', counts what it parses, and dies when told to."""

    max_length = 1000

    def __init__(self, die_after: int | None = None) -> None:
        self.meta = {"lang": "en", "name": "counting", "version": "0"}
        self.parsed: list[str] = []
        self.die_after = die_after

    def pipe(self, texts: list[str], batch_size: int = 1):
        for t in texts:
            if self.die_after is not None and len(self.parsed) >= self.die_after:
                raise KeyboardInterrupt("killed")
            self.parsed.append(t)
            yield _Doc(t)


class _Sent:
    def __init__(self, text: str) -> None:
        self.text = text
        self._tokens = [_Tok() for _ in text.split()]

    def __iter__(self):
        return iter(self._tokens)


class _Tok:
    is_space = False


class _Doc:
    def __init__(self, text: str) -> None:
        self.sents = [_Sent(s + ".") for s in text.split(".") if s.strip()]


def test_a_kill_loses_at_most_one_parse_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pqb.builders.parses.PARSE_CHUNK", 10)
    texts = [f"text number {i}. second part" for i in range(35)]
    cache = ParseCache(tmp_path / "parses.sqlite")
    with pytest.raises(KeyboardInterrupt):
        split_sentences(texts, nlp=CountingNlp(die_after=25), cache=cache)
    resumed = CountingNlp()
    out = split_sentences(texts, nlp=resumed, cache=cache)
    assert len(resumed.parsed) == 35 - 20  # two whole chunks were cached before the kill
    assert out == split_sentences(texts, nlp=CountingNlp(), cache=ParseCache(None))


def _old_link_rows(targets, reviewers, qualified, cfg):
    """The rule as first written: every qualified user hashed and sorted for every target (and, since
    issue 46, no links under ``reviewers`` for a target with fewer than two qualified reviewers)."""
    qset, out = set(qualified), []
    for asin in sorted(set(targets)):
        own = sorted(u for u in set(reviewers.get(asin, ())) if u in qset)
        if cfg.link == "reviewers" and len(own) < 2:
            continue
        chosen = list(own)
        if cfg.link == "any":
            rank = lambda u: hashlib.sha1(f"pqb-link|{cfg.seed}|{asin}|{u}".encode()).hexdigest()  # noqa: E731,B023
            rest = sorted((u for u in qset if u not in own), key=rank)
            chosen += rest[: max(0, cfg.link_users_per_product - len(chosen))]
        out += [{"asin": asin, "user_id": u} for u in sorted(chosen)]
    return out


@pytest.mark.parametrize("k", [1, 4, 9])
def test_links_equal_the_per_target_sort(k: int) -> None:
    rng = np.random.default_rng(k)
    qualified = [f"user{i}" for i in range(300)]
    targets = [f"B{i:04d}" for i in range(40)]
    reviewers = {
        t: set(rng.choice([*qualified, "unqualified"], size=int(rng.integers(0, 6)))) for t in targets
    }
    for link in ("any", "reviewers"):
        cfg = UserConfig(link=link, link_users_per_product=k, seed=k)  # type: ignore[arg-type]
        assert link_rows(targets, reviewers, qualified, cfg) == _old_link_rows(
            targets, reviewers, qualified, cfg
        )


def test_links_through_worker_processes_equal_the_per_target_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """``link="any"`` maps chunks of targets through the executor; the links must not depend on it."""
    monkeypatch.setattr("pqb.builders.source.users.LINK_CHUNK", 7)  # 40 targets: 6 chunks, the last short
    qualified = [f"user{i}" for i in range(300)]
    targets = [f"B{i:04d}" for i in range(40)]
    reviewers = {t: {qualified[i]} for i, t in enumerate(targets[:10])}
    cfg = UserConfig(link="any", link_users_per_product=4, seed=3)
    ex = LocalExecutor(2)
    try:
        assert link_rows(targets, reviewers, qualified, cfg, executor=ex) == _old_link_rows(
            targets, reviewers, qualified, cfg
        )
    finally:
        ex.close()


def _gaussians(n: int, seed: int):
    from pqb.builders.syntax.gaussian import RankOneDiagGaussian

    rng = np.random.default_rng(seed)
    gs = {}
    for i in range(n):
        Z = rng.normal(size=(30, 16)) * rng.uniform(0.2, 3.0) + rng.normal(size=16)
        gs[f"u{i:03d}"] = RankOneDiagGaussian.fit_many([Z])[0]
    gs["u900"] = gs["u001"]  # an exact tie: the pair order must fall back to the ids
    return gs


def test_sym_kl_matrix_is_within_its_bound_of_sym_kl() -> None:
    from pqb.builders.syntax.gaussian import sym_kl, sym_kl_matrix

    gs = list(_gaussians(25, 0).values())
    D, E = sym_kl_matrix(gs)
    exact = np.array([[sym_kl(a, b) if i != j else 0.0 for j, b in enumerate(gs)] for i, a in enumerate(gs)])
    assert (np.abs(D - exact) <= E).all()
    assert float(E.max()) < 1e-5 * float(exact.max())  # tight enough to screen


@pytest.mark.parametrize("limit", [1, 3, None])
def test_ranked_pairs_equal_the_full_sort(limit: int | None) -> None:
    from pqb.builders.pairing.pairs import ranked_pairs
    from pqb.builders.syntax.gaussian import bhattacharyya, sym_kl

    gs = _gaussians(30, 1)
    users = [*gs, "unfitted"]
    for distance in (sym_kl, bhattacharyya):
        fitted = sorted(gs)
        full = sorted(
            ((float(distance(gs[a], gs[b])), a, b) for a, b in itertools.combinations(fitted, 2)),
            key=lambda t: (-t[0], t[1], t[2]),
        )
        assert ranked_pairs(users, gs, distance, limit) == full[:limit]


def test_ranked_pairs_evaluate_each_distinct_pair_of_clones_once() -> None:
    """Copies of a user (the same Gaussian bytes, as in a LOAD TEST) tie at every distance: the order
    still equals the full sort by (distance, ids), with one exact call per distinct parameter pair."""
    import copy

    from pqb.builders.pairing.pairs import ranked_pairs
    from pqb.builders.syntax.gaussian import sym_kl

    base = _gaussians(6, 2)
    gs = {f"{u}-copy{c}": copy.deepcopy(g) for u, g in base.items() for c in range(8)}
    calls: list[int] = []

    def counted(a, b) -> float:
        calls.append(1)
        return sym_kl(a, b)

    fitted = sorted(gs)
    full = sorted(
        ((float(sym_kl(gs[a], gs[b])), a, b) for a, b in itertools.combinations(fitted, 2)),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    assert ranked_pairs(list(gs), gs, counted, 40) == full[:40]
    same = {"u900": "u001"}  # one Gaussian under two ids
    param = {u: same.get(u.split("-")[0], u.split("-")[0]) for u in gs}
    assert len(calls) == len({(param[a], param[b]) for a, b in itertools.combinations(fitted, 2)}) < 36


def test_profiles_and_errors_chunking_does_not_change_a_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding chunks (each padded to MIN_ENCODE_ROWS), audit chunks and error-detection chunks of
    any size give the bytes of one chunk; the encoder trains on the capped, hash-chosen users."""
    src = tmp_path / "lt"
    generate_reviews(_real_slice(), "Video_Games", 600, src)
    whole = _build(tmp_path / "whole", src, later=True)
    manifest = json.loads((tmp_path / "whole" / "video_games" / "manifest.json").read_text())
    prof = manifest["stages"]["profiles"]["stats"]
    assert prof["encoder_eligible_sentences"] > 400 >= prof["train_sentences"] > 0  # the cap applied
    monkeypatch.setattr("pqb.builders.syntax.stage.ENCODE_CHUNK", 7)
    monkeypatch.setattr("pqb.builders.syntax.stage.AUDIT_CHUNK", 2)
    monkeypatch.setattr("pqb.builders.writing_errors.profiles.ERRORS_CHUNK", 3)
    assert _build(tmp_path / "chunked", src, later=True) == whole


def test_encoder_training_users_are_whole_users_under_the_cap() -> None:
    counts = {f"u{i}": 1 + i % 7 for i in range(200)}
    assert encoder_training_users(counts, sum(counts.values()), seed=0) == set(counts)
    chosen = encoder_training_users(counts, 100, seed=0)
    assert sum(counts[u] for u in chosen) <= 100 and len(chosen) > 20
    shuffled = dict(reversed(list(counts.items())))
    assert encoder_training_users(shuffled, 100, seed=0) == chosen  # order of the input is irrelevant
    assert encoder_training_users(counts, 100, seed=1) != chosen


def test_fresh_errors_stage_builds_no_corrector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "lt"
    generate_reviews(_real_slice(), "Video_Games", 200, src)
    _build(tmp_path / "w", src)
    wd = WorkDir(tmp_path / "w", "video_games")
    run_errors(wd, BuildConfig())

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a fresh errors stage built its corrector")

    monkeypatch.setattr("pqb.builders.writing_errors.detection.get_corrector", refuse)
    monkeypatch.setattr("pqb.builders.writing_errors.profiles.domain_lexicon", refuse)
    monkeypatch.setattr("pqb.builders.writing_errors.profiles.read_parquet", refuse)
    assert run_errors(WorkDir(tmp_path / "w", "video_games"), BuildConfig())["skipped"]


def test_freshness_is_decided_before_any_model_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "lt"
    generate_reviews(_real_slice(), "Video_Games", 60, src)
    _build(tmp_path / "w", src)

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a fresh stage loaded spaCy")

    monkeypatch.setattr("pqb.builders.parses.load_spacy", refuse)
    assert run_users(WorkDir(tmp_path / "w", "video_games"), BuildConfig(source=src, link="any"))["skipped"]


def test_installed_model_id_is_the_loaded_one() -> None:
    from pqb.builders.nlp import installed_spacy_model_id, load_spacy, spacy_model_id

    assert installed_spacy_model_id() == spacy_model_id(load_spacy())


def test_executor_choice_is_checked() -> None:
    from pqb.builders.errors import UsageError

    with pytest.raises(UsageError, match="unknown executor"):
        make_executor("spark")
    with pytest.raises(UsageError, match=">= 1"):
        LocalExecutor(0)


@pytest.mark.slow
def test_local_processes_and_a_two_worker_ray_cluster_write_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every executor map (users-stage parses, profiles encoding and audits, error detection) on 2 local
    processes and on a local Ray cluster of two worker nodes (started here, loopback only) gives the
    in-process bytes."""
    # loopback for the driver and every Ray process it starts (they inherit the environment)
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = pytest.importorskip("ray", reason="Ray is the optional `ray` extra (installed by scripts/setup.sh)")
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    from pqb.builders.executor import RayExecutor

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # in case ray was imported before
    src = tmp_path / "lt"
    generate_reviews(_real_slice(), "Video_Games", 300, src)
    monkeypatch.setattr("pqb.builders.writing_errors.profiles.ERRORS_CHUNK", 200)  # several chunks
    counted = Counter(CACHE_COUNTS)
    inline = _build(tmp_path / "inline", src, later=True)
    inline_counts, counted = CACHE_COUNTS - counted, Counter(CACHE_COUNTS)
    local = LocalExecutor(2)
    try:
        monkeypatch.setattr(settings, "PQB_CACHE_DIR", tmp_path / "cache-local")  # cold: workers parse
        assert _build(tmp_path / "local", src, executor=local, later=True) == inline
        # the correction cache is looked up in the workers; their counts come back to this process
        lookups = {k: v for k, v in (CACHE_COUNTS - counted).items() if k.endswith("lookups")}
        assert lookups == {k: v for k, v in inline_counts.items() if k.endswith("lookups")}
        assert lookups["correction lookups"] > 0
    finally:
        local.close()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.add_node(num_cpus=1)
        ex = RayExecutor(address=cluster.address)
        try:
            assert ex.workers == 2
            monkeypatch.setattr(settings, "PQB_CACHE_DIR", tmp_path / "cache-ray")
            assert _build(tmp_path / "ray", src, executor=ex, later=True) == inline
        finally:
            ex.close()
            ray.shutdown()
    finally:
        cluster.shutdown()
