"""The message table: each bad input or bad invocation of ``pqb-build`` gives one ``error:`` line that
names what is wrong, where (``file:line`` for input) and the fix, with exit code 1 (data) or 2 (usage),
and never a traceback."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pqb.builders.cli import main
from pqb.builders.text import MAX_TEXT_CHARS

GOOD = json.dumps({"user_id": "U1", "parent_asin": "P1", "text": "Works well. Love it."}).encode()
META = json.dumps({"parent_asin": "P1", "title": "Pad", "details": {"Brand": "Acme"}}).encode()
NO_TEXT = json.dumps({"user_id": "U2", "parent_asin": "P1"}).encode()
WRONG_TYPE = json.dumps({"user_id": "U2", "parent_asin": "P1", "text": "Fine.", "rating": "five"}).encode()
LONG = json.dumps({"user_id": "U2", "parent_asin": "P1", "text": "Long. " * MAX_TEXT_CHARS}).encode()
NOT_UTF8 = b'{"user_id": "U2", "parent_asin": "P1", "text": "caf\xe9"}'


def _gz_cut(lines: list[bytes]) -> bytes:
    packed = gzip.compress(b"\n".join(lines * 50) + b"\n", mtime=0)
    return packed[: len(packed) // 2]


# (id, argv after the subcommand's own options, reviews file name, its bytes, exit code, stderr fragments)
CASES = [
    ("truncated-gz", ["ingest"], "Video_Games.jsonl.gz", _gz_cut([GOOD, NO_TEXT]), 1,
     ["Video_Games.jsonl.gz:", "truncated or corrupt: download it again"]),
    ("empty-reviews", ["ingest"], "Video_Games.jsonl", b"", 1,
     ["Video_Games.jsonl: the reviews file has no records (0 non-blank lines)", "pick another --domain"]),
    ("empty-reviews-all", ["all"], "Video_Games.jsonl", b"\n\n", 1, ["the reviews file has no records"]),
    ("all-bad-reviews", ["ingest"], "Video_Games.jsonl", b"{oops\n" + NO_TEXT, 1,
     ["none of its 2 lines is a usable reviews record (malformed=1, missing_required=1; first: "
      "Video_Games.jsonl:1: malformed line"]),
    ("strict-malformed", ["ingest", "--strict"], "Video_Games.jsonl", GOOD + b"\n[1, 2]", 1,
     ["Video_Games.jsonl:2: malformed line (expected a JSON object, got list)", "rerun without --strict"]),
    ("strict-malformed-all", ["all", "--strict"], "Video_Games.jsonl", GOOD + b"\n{oops", 1,
     ["Video_Games.jsonl:2: malformed line"]),
    ("strict-utf8-all", ["all", "--strict"], "Video_Games.jsonl", GOOD + b"\n" + NOT_UTF8, 1,
     ["Video_Games.jsonl:2: invalid UTF-8 at byte"]),
    ("strict-required-all", ["all", "--strict"], "Video_Games.jsonl", GOOD + b"\n" + NO_TEXT, 1,
     ["Video_Games.jsonl:2: required field 'text' is missing"]),
    ("strict-wrong-type", ["ingest", "--strict"], "Video_Games.jsonl", WRONG_TYPE, 1,
     ["Video_Games.jsonl:1: field 'rating' is str, expected int or float", "read the field as missing"]),
    ("strict-overlong", ["ingest", "--strict"], "Video_Games.jsonl", LONG, 1,
     [f"Video_Games.jsonl:1: text of {6 * MAX_TEXT_CHARS} characters is over the {MAX_TEXT_CHARS}-character cap"]),
    ("lenient-counts", ["ingest"], "Video_Games.jsonl", b"\n".join([GOOD, b"{oops", NOT_UTF8, NO_TEXT, GOOD]), 0,
     ["warning: Video_Games.jsonl:3: invalid UTF-8", "warning: Video_Games.jsonl:4: required field 'text'",
      "reviews: 5 lines -> 1 records (malformed=1, invalid_utf8=1, missing_required=1, duplicate=1)"]),
    ("hub-offline", ["ingest", "--source", "hub"], "Video_Games.jsonl", GOOD, 1,
     ["cannot fetch raw/review_categories/Video_Games.jsonl from the Hub dataset",
      "LocalEntryNotFoundError", "pass --source <dir>"]),
    ("no-such-source", ["ingest", "--source", "{tmp}/nope"], "Video_Games.jsonl", GOOD, 2,
     ["source '", "nope' is neither 'hub' nor an existing directory"]),
    ("no-such-source-all", ["all", "--source", "{tmp}/nope"], "Video_Games.jsonl", GOOD, 2,
     ["nope not found; pass --source <dir|hub> or set PQB_AMAZON_DIR"]),
    ("no-category-file", ["ingest", "--domain", "software"], "Video_Games.jsonl", GOOD, 2,
     ["no reviews file for category 'Software'", "pick another --domain"]),
    ("stage-order", ["errors"], "Video_Games.jsonl", GOOD, 2,
     ["sentences.parquet does not exist; run `pqb-build users --domain video_games` first"]),
    ("stage-order-profiles", ["profiles"], "Video_Games.jsonl", GOOD, 2,
     ["sentences.parquet is missing in", "run `pqb-build users --domain video_games --workdir"]),
    ("stage-order-users", ["users"], "Video_Games.jsonl", GOOD, 2,
     ["reviews.parquet is missing in", "run `pqb-build ingest --domain video_games --workdir"]),
    ("unknown-option", ["all", "--bogus"], "Video_Games.jsonl", GOOD, 2, ["unrecognized arguments: --bogus"]),
    ("negative-n", ["all", "--n", "-5"], "Video_Games.jsonl", GOOD, 2, ["argument --n: must be >= 1, got -5"]),
    ("quantile-out-of-range", ["all", "--threshold-q", "1.5"], "Video_Games.jsonl", GOOD, 2,
     ["argument --threshold-q: must be strictly between 0 and 1"]),
    ("zero-epochs", ["profiles", "--epochs", "0"], "Video_Games.jsonl", GOOD, 2, ["argument --epochs: must be >= 1"]),
    ("one-profile-sentence", ["users", "--min-profile", "1"], "Video_Games.jsonl", GOOD, 2,
     ["argument --min-profile: must be >= 2"]),
    ("negative-seed", ["all", "--seed", "-1"], "Video_Games.jsonl", GOOD, 2, ["argument --seed: must be >= 0"]),
    ("negative-n-boot", ["validate", "syntax", "--n-boot", "-5"], "Video_Games.jsonl", GOOD, 2,
     ["argument --n-boot: must be >= 1"]),
    ("words-inverted", ["generate", "--min-words", "30", "--max-words", "5"], "Video_Games.jsonl", GOOD, 2,
     ["--min-words 30 / --max-words 5: need 1 <= min <= max"]),
]  # fmt: skip


def _argv(args: list[str], tmp: Path) -> list[str]:
    args = [a.replace("{tmp}", str(tmp)) for a in args]
    command, rest = args[0], args[1:]
    if command not in {"ingest", "all"} or "--source" in rest:
        return [command, "--workdir", str(tmp / "work"), *rest]
    extra = ["--no-publish", "--dataset", str(tmp / "ds")] if command == "all" else []
    return [
        command,
        "--source",
        str(tmp / "src"),
        "--workdir",
        str(tmp / "work"),
        *extra,
        "--no-progress",
        *rest,
    ]


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code or 0)


@pytest.fixture
def offline_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Hub as seen with no network (what ``hf_hub_download`` raises then), whatever the local cache."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    def unreachable(**_: object) -> str:
        raise LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub. Check.")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)


@pytest.mark.parametrize(
    ("argv", "name", "data", "code", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.usefixtures("offline_hub")
def test_message_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], name: str, data: bytes, code: int,
    fragments: list[str],
) -> None:  # fmt: skip
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / name).write_bytes(data)
    (tmp_path / "src" / "meta_Video_Games.jsonl").write_bytes(META + b"\n")
    rc = _run(_argv(argv, tmp_path))
    err = capsys.readouterr().err
    assert rc == code, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    if code:
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err


def test_a_5mb_review_is_cut_and_the_users_stage_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's E088 abort: a 5 MB review now reaches spaCy cut to the cap and the stage completes."""
    big = json.dumps(
        {"user_id": "U1", "parent_asin": "P1", "text": "This is a sentence. " * 260_000}
    ).encode()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Video_Games.jsonl").write_bytes(big + b"\n" + GOOD + b"\n")
    (tmp_path / "src" / "meta_Video_Games.jsonl").write_bytes(META + b"\n")
    assert main(_argv(["ingest"], tmp_path)) == 0
    assert "(truncated=1)" in capsys.readouterr().err
    assert main(["users", "--workdir", str(tmp_path / "work"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and '"sentences":' in out


def test_meta_duplicates_and_title_less_products_are_located_and_a_conflict_fails_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The auditor's ``src_dup``: a repeated ``parent_asin`` with other content and a title-less record
    passed ``--strict`` without a location, and the summary said 1,490 usable records for 1,488 kept."""
    other = json.dumps({"parent_asin": "P1", "title": "COMPLETELY DIFFERENT PRODUCT"}).encode()
    no_title = json.dumps({"parent_asin": "P2", "title": ""}).encode()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Video_Games.jsonl").write_bytes(GOOD + b"\n")
    meta = b"\n".join([META, other, no_title, META]) + b"\n"
    (tmp_path / "src" / "meta_Video_Games.jsonl").write_bytes(meta)
    assert _run(_argv(["ingest"], tmp_path)) == 0
    out, err = capsys.readouterr()
    assert "warning: meta_Video_Games.jsonl:2: parent_asin 'P1' again, with other content than line 1" in err
    assert "warning: meta_Video_Games.jsonl:3: no title (a product needs one)" in err
    assert "warning: meta_Video_Games.jsonl:4: same record as line 1 (parent_asin 'P1')" in err
    assert "meta: 4 lines -> 1 records (missing_required=1, duplicate=2)" in err
    stats = json.loads(out[out.index("{") :])
    counts = ("products", "meta_records", "duplicate_meta", "products_without_title")
    assert [stats[k] for k in counts] == [1, 1, 2, 1]
    assert _run(_argv(["ingest", "--strict", "--force"], tmp_path)) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "meta_Video_Games.jsonl:2: parent_asin 'P1' again, with other content than line 1" in err


def test_the_stages_run_one_by_one_default_to_what_all_builds() -> None:
    """``pqb-build users`` defaulted to ``--link reviewers`` and ``pqb-build profiles`` to ``--threshold
    chi2`` while ``pqb-build all`` uses the embedded default (``any``, held-out q95): the stages run by
    hand built another dataset than ``all`` from the same flags."""
    from pqb.builders.cli import build_parser
    from pqb.builders.cli.all import config_from_args

    parser = build_parser()
    everything = config_from_args(parser.parse_args(["all"]))
    users = parser.parse_args(["users"])
    profiles = parser.parse_args(["profiles"])
    assert (users.link, users.link_users_per_product, users.seed) == (
        everything.link, everything.link_users_per_product, everything.seed,
    )  # fmt: skip
    assert (users.min_sentences, users.min_profile, users.min_heldout, users.max_sentences) == (
        10, 8, 2, None,
    ) == tuple(getattr(everything.user_config(), k) for k in ("min_sentences", "min_profile", "min_heldout",
                                                                "max_sentences"))  # fmt: skip
    assert (profiles.threshold, profiles.threshold_q) == (everything.threshold_kind, everything.threshold_q)
