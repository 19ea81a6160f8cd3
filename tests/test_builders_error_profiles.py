"""Profile building from sentences (pqb.builders.writing_errors.profiles), with a deterministic fake corrector."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pqb.builders.config import BuildConfig
from pqb.builders.errors import MissingInputError
from pqb.builders.workdir import WorkDir, read_parquet, write_parquet
from pqb.builders.writing_errors import profiles as profiles_mod
from pqb.builders.writing_errors.context import new_counts
from pqb.builders.writing_errors.profiles import (
    ErrorProfiles,
    ProfilesWriter,
    _user_chunks,
    _user_starts,
    domain_lexicon,
    run_errors,
)
from pqb.dataset.io import atomic_write_json
from pqb.dataset.schema import CHAR_MECHANISMS

FIXES = {"gsme": "game", "controllet": "controller", "grwat": "great", "teh": "the", "realy": "really",
         "Their": "There", "fsst": "fast", "lovw": "love", "amazon": "Amazon"}  # fmt: skip


class FakeCorrector:
    """Word-for-word corrections from a table: a stand-in for a spelling/GEC back-end."""

    backend_id = "fake:1"

    def correct(self, sentences: list[str]) -> list[str]:
        pat = re.compile(r"\b(" + "|".join(FIXES) + r")\b")
        return [pat.sub(lambda m: FIXES[m.group(0)], s) for s in sentences]


SENTENCES = {
    "u_keys": [  # only keyboard-adjacent slips
        "This gsme is a lot of fun to play.",
        "The controllet feels grwat in my hands.",
        "I lovw it and play it every day.",
        "Shipping was fsst and cheap.",
    ],
    "u_other": ["I realy like teh story.", "Their is a lot to do in this game.", "Got it on amazon."],
    "u_clean": ["A solid game with a good story.", "Would buy again for my kids."],
}


def make_workdir(root: Path, heldout: bool = True) -> WorkDir:
    rows = []
    for u, ss in SENTENCES.items():
        for i, s in enumerate(ss):
            rows.append({"user_id": u, "parent_asin": "A1", "review_idx": 0, "sent_idx": i,
                         "sentence_id": f"{u}:{i}", "text": s, "split": "profile"})  # fmt: skip
        if heldout:
            rows.append({"user_id": u, "parent_asin": "A1", "review_idx": 1, "sent_idx": 9,
                         "sentence_id": f"{u}:9", "text": "Teh gsme is fine.", "split": "heldout"})  # fmt: skip
    wd = WorkDir(root, "toy")
    write_parquet(pa.Table.from_pylist(rows), wd.path / "sentences.parquet")
    return wd


def test_run_errors_builds_profiles(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path)
    stats = run_errors(wd, BuildConfig(), corrector=FakeCorrector())
    assert stats["users"] == 3 and stats["users_with_char_edits"] == 2
    prof = ErrorProfiles.load(wd)
    keys = prof.users["u_keys"]
    assert keys["mechanisms"] == {"keyboard_adjacent": 5}
    assert prof.users["u_other"]["mechanisms"] == {"transposition": 1, "deletion": 1, "homophone": 1}
    assert prof.users["u_other"]["n_surface"] == 1  # amazon -> Amazon is a case slip (profiled only)
    # where in the word: gsme, grwat, fsst interior; controllet, lovw on the last letter
    assert keys["positions"] == {"interior": 3, "last": 2}
    assert prof.users["u_other"]["positions"] == {"interior": 1, "last": 2}  # realy; teh, Their
    assert prof.glob["positions"] == {"interior": 4, "last": 4}
    # held-out sentences are never profiled ("Teh gsme" would add slips to every user)
    assert prof.users["u_clean"]["n_char"] == 0
    p = prof.mechanism_probs("u_keys")
    assert max(p, key=p.get) == "keyboard_adjacent" and sum(p.values()) == pytest.approx(1)
    assert set(p) == set(CHAR_MECHANISMS)
    # a clean writer is shrunk toward the global model, not inverted to rate 0.5
    g = prof.global_mechanism_probs()
    assert prof.mechanism_probs("u_clean") == pytest.approx(g)
    assert prof.summary("u_clean")["error_rate"] < prof.global_rate
    edits = read_parquet(wd.path / "errors" / "edits.parquet").to_pylist()
    assert {e["original"] for e in edits if e["char_level"]} >= {"gsme", "controllet", "teh", "realy"}
    assert all(e["sig_coarse"] for e in edits)
    assert {e["original"]: e["position"] for e in edits if e["char_level"]}["controllet"] == "last"
    assert all(e["position"] is None for e in edits if not e["char_level"])
    # ERRANT sees lemmas: a misspelling is typed R:SPELL, not a same-lemma inflection
    types = {e["original"]: e["errant_type"] for e in edits}
    assert types["gsme"] == types["controllet"] == "R:SPELL"


def test_run_errors_is_deterministic_and_skips_when_fresh(tmp_path: Path) -> None:
    a, b = make_workdir(tmp_path / "a"), make_workdir(tmp_path / "b")
    run_errors(a, BuildConfig(), corrector=FakeCorrector())
    run_errors(b, BuildConfig(), corrector=FakeCorrector())
    for name in ("errors/edits.parquet", "errors/profiles.json"):
        assert (a.path / name).read_bytes() == (b.path / name).read_bytes()
    before = json.loads(a.manifest_path.read_text())["stages"]["errors"]["seconds"]
    run_errors(WorkDir(tmp_path / "a", "toy"), BuildConfig(), corrector=FakeCorrector())  # fresh: skipped
    assert json.loads(a.manifest_path.read_text())["stages"]["errors"]["seconds"] == before


def test_missing_sentences_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MissingInputError, match="pqb-build users"):
        run_errors(WorkDir(tmp_path, "toy"), BuildConfig(), corrector=FakeCorrector())


LEXICON_ROWS = [  # not grouped by user: a's two "zelda" sit four rows apart
    ("b", "Zelda is fun"), ("a", "I like Zelda"), ("c", "fun fun"), ("c", "Mario jumps"), ("a", "zelda rocks"),
    ("b", "rocks"), ("c", "NES is OK"), ("b", "Mario runs"), ("a", "Luigi waits"),
]  # fmt: skip


@pytest.mark.parametrize("batch", [2, 65_536])
@pytest.mark.parametrize("order", ["as_given", "reversed", "grouped"])
def test_domain_lexicon_counts_user_by_user(order: str, batch: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pqb.builders.writing_errors.profiles.LEXICON_BATCH", batch)  # users cross batches
    rows = {"as_given": LEXICON_ROWS, "reversed": LEXICON_ROWS[::-1], "grouped": sorted(LEXICON_ROWS)}[order]
    table = pa.table({"user_id": [u for u, _ in rows], "text": [t for _, t in rows]})
    lex = domain_lexicon(table, None, min_users=2)
    by_user = np.argsort(np.array([u for u, _ in rows]), kind="stable")  # the stage passes its own sort
    assert domain_lexicon(table, None, min_users=2, by_user=by_user) == lex
    # by hand: a {i, like, zelda x2, rocks, luigi, waits}; b {zelda, is, fun, rocks, mario, runs};
    # c {fun x2, mario, jumps, nes, is, ok}
    assert lex.words == {"zelda", "rocks", "is", "fun", "mario"}  # written by >= 2 users
    assert lex.habitual == {"zelda", "fun"}  # one user wrote it twice; "rocks" twice but by two users
    assert lex.names == {
        "zelda",
        "mario",
    }  # mid-sentence capital (Zelda), capitalised twice (Mario); not Luigi
    prods = pa.table({"title": ["Luigi Kart"], "brand": ["Nintendo"], "text": ["A racer"]})
    with_products = domain_lexicon(table, prods, min_users=2)
    assert with_products.words == lex.words | {"luigi", "kart", "nintendo", "a", "racer"}
    assert with_products.names == lex.names | {"luigi", "kart", "nintendo"}


def test_profiles_writer_gives_the_bytes_of_one_json_dump(tmp_path: Path) -> None:
    users = {f"u{i}é": new_counts() | {"mechanisms": {"deletion": i}, "n_char": i} for i in range(5)}
    prof = ErrorProfiles(glob=new_counts() | {"mechanisms": {}}, users=users, meta={"backend": "fake:1"})
    atomic_write_json(tmp_path / "one.json", prof.to_json(), indent=None)
    with ProfilesWriter(tmp_path / "chunked.json") as out:
        for part in ({k: users[k] for k in list(users)[:2]}, {}, {k: users[k] for k in list(users)[2:]}):
            out.add_users(part)
        out.finish(prof.glob, prof.smoothing, prof.meta)
    assert (tmp_path / "chunked.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    prof.save(tmp_path / "saved.json")
    assert (tmp_path / "saved.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    empty = ErrorProfiles(glob=new_counts())
    atomic_write_json(tmp_path / "e1.json", empty.to_json(), indent=None)
    empty.save(tmp_path / "e2.json")
    assert (tmp_path / "e1.json").read_bytes() == (tmp_path / "e2.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "chunked.json",
        "e1.json",
        "e2.json",
        "one.json",
        "saved.json",
    ]
    with ProfilesWriter(tmp_path / "bad.json") as out, pytest.raises(ValueError, match="sorted order"):
        out.add_users({"u2": users["u2é"]})
        out.add_users({"u1": users["u1é"]})


@pytest.mark.parametrize("window", [7, 64, 1 << 24])
def test_load_some_users_reads_the_file_as_a_stream(tmp_path: Path, monkeypatch, window: int) -> None:
    """``load(path, users)`` equals the whole load restricted to those users, whatever the read window
    (values longer than the window, numbers cut at its edge), in both files' layouts."""
    users = {
        f"u{i}é": new_counts() | {"mechanisms": {"deletion": i * 1234567}, "n_char": i} for i in range(6)
    }
    prof = ErrorProfiles(
        glob=new_counts() | {"mechanisms": {"x": 1}}, users=users, meta={"backend": "fake:1"}
    )
    prof.save(tmp_path / "profiles.json")
    atomic_write_json(tmp_path / "indented.json", prof.to_json(), indent=2)
    monkeypatch.setattr(profiles_mod, "PROFILES_WINDOW", window)
    want = ["u1é", "u4é", "nobody"]
    for name in ("profiles.json", "indented.json"):
        got = ErrorProfiles.load(tmp_path / name, want)
        assert got.users == {u: users[u] for u in ("u1é", "u4é")}
        assert (got.glob, got.meta, got.smoothing) == (prof.glob, prof.meta, prof.smoothing)
        assert ErrorProfiles.load(tmp_path / name, []).users == {}
    (tmp_path / "cut.json").write_text((tmp_path / "profiles.json").read_text()[:-40])
    with pytest.raises(ValueError):
        ErrorProfiles.load(tmp_path / "cut.json", want)


def test_user_chunks_cut_at_user_boundaries_across_batches() -> None:
    ids = ["c", "a", "b", "a", "c", "c", "b", "a", "d"]
    col = pa.chunked_array([ids[:4], ids[4:]])
    rows = np.argsort(np.array(ids), kind="stable")  # a a a b b c c c d
    starts = _user_starts(col, rows, batch=2)
    assert starts.tolist() == [3, 5, 8]
    assert _user_starts(col, rows[:1]).tolist() == []
    assert _user_chunks(starts, len(rows), 2) == [(0, 3), (3, 5), (5, 8), (8, 9)]
    assert _user_chunks(starts, len(rows), 4) == [(0, 5), (5, 9)]
    assert _user_chunks(starts, len(rows), 100) == [(0, 9)]
    assert _user_chunks(np.zeros(0, np.int64), 0, 2) == []


def test_sentences_rewritten_while_the_stage_reads_them_leave_it_stale(tmp_path: Path, monkeypatch) -> None:
    """The stage reads its sentences before it knows its config (the corrector's lexicon comes from them).
    Hashed only afterwards, a sentences file rewritten in between (another ``pqb-build users`` on the same
    work dir) was recorded with its new bytes beside profiles of the old ones, and the next run skipped."""
    wd = make_workdir(tmp_path)
    path = wd.path / "sentences.parquet"
    read = profiles_mod._sentence_table

    def read_then_rewrite(workdir: WorkDir):
        out = read(workdir)
        rows = [{**r, "text": r["text"].replace("gsme", "game")} for r in read_parquet(path).to_pylist()]
        write_parquet(pa.Table.from_pylist(rows), path)
        return out

    monkeypatch.setattr(profiles_mod, "_sentence_table", read_then_rewrite)
    run_errors(wd, BuildConfig(), corrector=FakeCorrector())  # profiles of the sentences as read
    assert ErrorProfiles.load(wd).users["u_keys"]["mechanisms"] == {"keyboard_adjacent": 5}
    monkeypatch.setattr(profiles_mod, "_sentence_table", read)
    again = run_errors(WorkDir(tmp_path, "toy"), BuildConfig(), corrector=FakeCorrector())
    assert not again.get("skipped"), "profiles of the old sentences were taken as built"
    assert ErrorProfiles.load(wd).users["u_keys"]["mechanisms"] == {"keyboard_adjacent": 4}
