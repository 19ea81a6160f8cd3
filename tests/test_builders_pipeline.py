"""``pqb-build all``: domain discovery, the embedded default, the summary, and (slow) a real rebuild that
must reproduce the committed ``pqb_dataset/`` parquet files byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pqb.builders.cli import build_parser
from pqb.builders.config import EMBEDDED_DEFAULT, BuildConfig
from pqb.builders.pipeline import DomainResult, discover_domains, summary
from pqb.dataset import settings


def test_discover_domains_needs_reviews_and_meta(tmp_path: Path) -> None:
    for name in ("Video_Games.jsonl", "meta_Video_Games.jsonl", "Baby_Products.jsonl.gz",
                 "meta_Baby_Products.jsonl.gz", "Software.jsonl", "README.md"):  # fmt: skip
        (tmp_path / name).write_text("")
    assert discover_domains(tmp_path) == ["baby_products", "video_games"]
    with pytest.raises(FileNotFoundError, match="PQB_AMAZON_DIR"):
        discover_domains(tmp_path / "absent")


def test_no_arguments_means_all_with_the_embedded_default() -> None:
    from pqb.builders.cli.all import config_from_args

    args = build_parser().parse_args(["all"])
    assert config_from_args(args) == EMBEDDED_DEFAULT
    assert EMBEDDED_DEFAULT.link == "any" and EMBEDDED_DEFAULT.threshold_kind == "heldout"
    assert EMBEDDED_DEFAULT.threshold_q == 0.95 and EMBEDDED_DEFAULT.user_config().max_sentences is None
    assert args.backend == "realizer" and args.n == 50 and args.max_pairs_tried == 1
    assert BuildConfig().link == "reviewers"  # the paper's setting stays the library default


def test_paper_preset_has_the_authors_thresholds_and_caps() -> None:
    """``--preset paper``: a Gaussian needs >= 40 profile and >= 10 held-out sentences, a syntactic profile
    reads at most 200 sentences (160 + 40), an error profile 50; options override it, and the users
    thresholds take the build's seed and link rule."""
    from pqb.builders.cli.all import config_from_args
    from pqb.builders.config import PAPER, thresholds_name

    cfg = config_from_args(build_parser().parse_args(["all", "--preset", "paper"]))
    assert cfg == PAPER
    users = cfg.user_config()
    assert (users.min_profile, users.min_heldout, users.max_sentences) == (40, 10, 200)
    assert users.caps() == (160, 40) and cfg.error_max_sentences == 50
    assert cfg.link == users.link == "reviewers" and cfg.threshold_kind == "chi2"
    assert thresholds_name(users.as_dict(), cfg.error_max_sentences) == "paper"
    assert thresholds_name(EMBEDDED_DEFAULT.user_config().as_dict(), None) == "embedded"
    other = config_from_args(
        build_parser().parse_args(["all", "--preset", "paper", "--seed", "3", "--link", "any"])
    )
    assert (other.user_config().seed, other.user_config().link, other.user_config().min_profile) == (
        3,
        "any",
        40,
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args(["all", "--preset", "huge"])


def test_options_without_a_subcommand_mean_all(monkeypatch: pytest.MonkeyPatch) -> None:
    from pqb.builders import cli

    seen: list[list[str]] = []
    monkeypatch.setattr(cli, "build_parser", lambda: _Recorder(seen))
    with pytest.raises(SystemExit):
        cli.main(["--no-progress", "--strict"])
    assert seen == [["all", "--no-progress", "--strict"]]


class _Recorder:
    def __init__(self, seen: list[list[str]]) -> None:
        self.seen = seen

    def parse_args(self, argv: list[str]) -> None:
        self.seen.append(list(argv))
        raise SystemExit(0)


def test_summary_reports_counts_gates_and_skips() -> None:
    ok = DomainResult("video_games")
    ok.stats = {
        "ingest": {"products": 10, "targets": 4, "reviews": 50,
                   "reviews_read": {"lines": 53, "records": 50, "duplicate": 2, "invalid_utf8": 1, "truncated": 1},
                   "meta_read": {"lines": 10, "records": 10, "malformed": 0}},
        "generate": {"gates": {"generated": 200, "kept": 150, "rejected_lexical": 50,
                               "products_without_valid_candidates": 1}},
        "pair": {"rows": 4, "counts": {"paired": 2, "error_pairs": 3, "fail_no_candidates": 1,
                                       "fail_one_user": 1, "inject_ok": 3, "inject_no_profile": 1}},
    }  # fmt: skip
    ok.seconds = {"ingest": 0.1}
    skipped = DomainResult("software", note="no target products")
    text = summary([ok, skipped], 1.0)
    assert "4 rows = 2 syntactic pairs, 3 error pairs" in text
    assert "{'no_candidates': 1, 'one_user': 1}" in text and "lexical=50" in text
    assert "software (Software): skipped: no target products" in text
    assert (
        "input: reviews 53 lines -> 50 records (invalid_utf8=1, duplicate=2, truncated=1); meta 10 lines -> 10 records"
        in text
    )


def test_no_progress_silences_the_bars_inside_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.utils

    from pqb.builders import parses
    from pqb.builders.nlp import load_spacy
    from pqb.builders.parses import ParseCache, split_sentences
    from pqb.dataset import progress

    drawn: list[bool | None] = []  # tqdm's disable= for each bar the stage makes (None: on a terminal)

    def spy(iterable, *, disable=False, **kwargs):
        drawn.append(progress.tqdm_disable(disable))
        return progress.bar(iterable, disable=disable, **kwargs)

    monkeypatch.setattr(parses, "bar", spy)
    nlp = load_spacy()
    with progress.progress_bars(False):
        split_sentences(["Quiet please. Thanks."], nlp=nlp, cache=ParseCache(None))
        assert huggingface_hub.utils.are_progress_bars_disabled()  # the libraries' own bars too
    assert not huggingface_hub.utils.are_progress_bars_disabled()
    split_sentences(["Now a bar. It shows."], nlp=nlp, cache=ParseCache(None))
    assert drawn == [True, None]


def test_a_text_over_spacy_max_length_is_a_one_line_error_before_parsing() -> None:
    from pqb.builders.errors import TextTooLongError
    from pqb.builders.parses import ParseCache, split_sentences

    class TinyNlp:
        def __init__(self) -> None:
            self.meta = {"lang": "en", "name": "tiny", "version": "0"}
            self.max_length = 10

        def pipe(self, *_: object, **__: object) -> None:
            raise AssertionError("must not parse")

    with pytest.raises(
        TextTooLongError, match=r"a text of 11 characters is over spaCy's max_length \(10\).*ingest --force"
    ):
        split_sentences(["x" * 11], nlp=TinyNlp(), cache=ParseCache(None))


@pytest.mark.slow
def test_real_slice_rebuild_reproduces_the_committed_dataset(tmp_path: Path) -> None:
    """One full offline build of the embedded default (minutes on 2 cores) into a temp dir."""
    from pqb.builders.pipeline import build

    committed = settings.REPO_ROOT / "pqb_dataset" / "data"
    synthetic_typos = os.environ.get("PQB_TESTS_SYNTHETIC_TYPOS") == "1"  # tests/conftest.py
    if not settings.PQB_AMAZON_DIR.is_dir() or not committed.is_dir() or synthetic_typos:
        pytest.skip(
            "needs the offline slice at $PQB_AMAZON_DIR, real slips at $PQB_TYPOS_DIR and a committed pqb_dataset/"
        )
    results = build(None, work=tmp_path / "work", dataset_dir=tmp_path / "ds", progress=False)
    assert any(r.rows for r in results)
    ours = {
        p.relative_to(tmp_path / "ds" / "data"): p.read_bytes()
        for p in (tmp_path / "ds" / "data").rglob("*.parquet")
    }
    theirs = {
        p.relative_to(committed): p.read_bytes()
        for p in committed.rglob("*.parquet")
        if "-release" not in str(p)
    }
    assert ours.keys() == theirs.keys()
    assert [str(k) for k in ours if ours[k] != theirs[k]] == []
    assert (tmp_path / "ds" / "README.md").read_text() == (committed.parent / "README.md").read_text()
