"""The slip channel (pqb.builders.writing_errors.channel), readability, and the typo study's features."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from pqb_fixtures import toy_channel

from pqb.builders.errors import MissingInputError
from pqb.builders.writing_errors.channel import (
    SlipChannel,
    holdout,
    letter_case,
    read_slips,
    single_edit,
    typos_path,
)
from pqb.builders.writing_errors.injection import apply_mechanism, mechanism_variants
from pqb.builders.writing_errors.readability import readable
from pqb.dataset import settings

CSV = """repository,wrong,correct,commit,file,line
a/one,UnkownSender,UnknownSender,c,f.py,1
a/two,get_adress,get_address,c,f.py,2
a/three,HTTPServr,HTTPServer,c,f.py,3
a/four,fooBar,bazQux,c,f.py,4
a/five,recieve_it_now,receive_it,c,f.py,5
,nmae,name,c,f.py,6
a/one,unkownReceiver,unknownReceiver,c,g.py,7
a/two,adress,address,c,f.py,8
"""


def test_read_slips_splits_identifiers_and_keeps_one_differing_word(tmp_path, caplog) -> None:
    (tmp_path / "srcd_typos_calibration.csv").write_text(CSV)
    with caplog.at_level("WARNING"):
        got = [(s.typed, s.intended, s.source) for s in read_slips(tmp_path)]
    assert "1 row(s)" in caplog.text and "srcd_typos_calibration.csv:7" in caplog.text  # no repository
    assert got == [  # a repository's repeat of a slip (another line, another identifier, case) counts once
        ("Unkown", "Unknown", "a/one"),
        ("adress", "address", "a/two"),
        ("Servr", "Server", "a/three"),
    ]
    (tmp_path / "srcd_typos_calibration.csv").write_text(CSV + "a/six,adress,address,c,f.py,9\n")
    assert [s.source for s in read_slips(tmp_path)][-1] == "a/six"  # the same slip in another repository


def test_a_missing_calibration_file_is_one_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(settings, "PQB_TYPOS_DIR", tmp_path / "nowhere")
    with pytest.raises(MissingInputError, match="PQB_TYPOS_DIR"):
        typos_path()


def test_single_edit_reads_one_letter_operation() -> None:
    assert single_edit("teh", "the") == ("trans", "h", "e")
    assert single_edit("taning", "tanning") == ("del", "n", "True")
    assert single_edit("gam", "game") == ("del", "e", "False")
    assert single_edit("gamme", "game") == ("ins", "m", "m", "e")
    assert single_edit("gsme", "game") == ("sub", "a", "s")
    assert single_edit("gxyz", "game") is None


def test_holdout_is_a_stable_salted_share() -> None:
    names = [f"org/repo{i}" for i in range(4000)]
    share = sum(map(holdout, names)) / len(names)
    assert 0.17 < share < 0.23
    assert [holdout(n) for n in names[:50]] == [holdout(n) for n in names[:50]]


def test_channel_weights_follow_the_slips_and_smooth_unseen_letters() -> None:
    ch = toy_channel()
    # the data deletes doubled letters: "taning" outweighs dropping a single letter of the same word
    assert ch.weight("tanning", "taning") > ch.weight("tanning", "tnning")
    # inserted vowels are the data's habit; a rare letter never seen keeps a small, non-zero weight
    vowel, rare = ch.weight("gaming", "gaming".replace("ming", "miing")), ch.weight("gaming", "gamqing")
    assert vowel > 2 * rare > 0
    assert ch.weight("gaming", "gxyz") == 0.0  # not a single-letter slip
    p = ch.insert_letter("m", "i")
    assert abs(sum(p.values()) - 1) < 1e-12
    q = ch.substitute_letter("a")
    assert abs(sum(q.values()) - 1) < 1e-12 and "a" not in q


def test_new_letters_take_the_case_of_their_neighbours() -> None:
    assert letter_case("USB", 1, "x", inserted=True) == "X"
    assert letter_case("Game", 1, "x", inserted=True) == "x"
    assert (
        letter_case("Game", 0, "x", inserted=True) == "x"
    )  # before a capital, after nothing: the word's own
    assert letter_case("Game", 0, "x", inserted=False) == "X"
    assert letter_case("NEXiLUX", 7, "x", inserted=True) == "X"  # after the final capital of a run
    assert letter_case("NEXiLUX", 4, "x", inserted=True) == "x"  # between i and L: mixed, lower
    assert letter_case("Ng", 2, "x", inserted=True) == "x"
    for word in ("USB", "Game", "rgb", "PlayStation"):
        for mech in ("insertion", "repetition", "substitution", "keyboard_adjacent"):
            for forms in mechanism_variants(word, mech).values():
                for _, form in forms:
                    if word.isupper():
                        assert form.isupper(), (word, form)
                    else:  # no new capital, none lost ("aGame" keeps the G, never "AGame" or "GAme")
                        assert sum(map(str.isupper, form)) == sum(map(str.isupper, word)), (word, form)


def test_no_lower_case_word_gains_a_capital() -> None:
    rng = np.random.default_rng(0)
    ch = toy_channel()
    for word in ("controller", "wireless", "headset"):
        for mech in (
            "insertion",
            "repetition",
            "substitution",
            "keyboard_adjacent",
            "transposition",
            "deletion",
        ):
            for _ in range(30):
                new = apply_mechanism(word, mech, rng, None, ch)
                assert new is not None and new == new.lower(), (mech, new)


def test_channel_draws_follow_its_weights() -> None:
    """Seeded statistical test: deletions of "tanning" drawn through the channel pick each form in
    proportion to its weight (chi-square; critical value 20.5 at p = 0.001 for 5 degrees of freedom)."""
    ch = toy_channel()
    word = "tanning"
    forms = [f for g in mechanism_variants(word, "deletion").values() for _, f in g]
    w = np.array([ch.weight(word, f) for f in forms])
    rng = np.random.default_rng(3)
    n = 4000
    got = Counter(apply_mechanism(word, "deletion", rng, None, ch) for _ in range(n))
    exp: Counter[str] = Counter()
    for f, x in zip(forms, w, strict=True):  # "taning" drops either n: two sites, one form
        exp[f] += n * x / w.sum()
    chi2 = sum((got[f] - e) ** 2 / e for f, e in exp.items())
    assert len(exp) == 6 and chi2 < 20.5, (chi2, got)


def test_readability_needs_no_dictionary() -> None:
    assert readable("from", "form")  # a real-word slip is allowed
    assert readable("controller", "controler")
    assert not readable("to", "ot")  # 1-2 letter words never carry a typo
    assert not readable("Game", "GAME")  # case only
    assert not readable("game", "gxyz")  # beyond one edit for a short word
    assert readable("controller", "cnotroler")  # two edits allowed on a long word
    assert not readable("cat", "c")


def test_population_counts_use_the_detectors_rules() -> None:
    ch = SlipChannel([], provenance={})
    assert ch.slips_used == 0 and ch.population == {"mechanisms": {}, "positions": {}}
    ch = toy_channel()
    assert sum(ch.population["mechanisms"].values()) == sum(ch.population["positions"].values()) > 0


@pytest.mark.slow
@pytest.mark.skipif(
    not (settings.PQB_TYPOS_DIR / "srcd_typos_calibration.csv").is_file(),
    reason="needs the real slips at $PQB_TYPOS_DIR (data outside the repository, never committed)",
)
def test_real_slips_load_and_split_by_repository() -> None:
    slips = read_slips()
    assert len(slips) > 2500  # 3,574 word pairs, 2,789 distinct per repository
    held = {s.source for s in slips if holdout(s.source)}
    est = {s.source for s in slips if not holdout(s.source)}
    assert held and est and not held & est


def test_a_build_without_real_slips_stops_before_any_work(tmp_path, monkeypatch) -> None:
    from pqb.builders.pipeline import build

    monkeypatch.setattr(settings, "PQB_TYPOS_DIR", tmp_path / "none")
    with pytest.raises(MissingInputError, match="PQB_TYPOS_DIR"):
        build(["video_games"], work=tmp_path / "work", dataset_dir=tmp_path / "ds", progress=False)
    assert not (tmp_path / "work").exists() and not (tmp_path / "ds").exists()


def test_study_features_read_each_slip_by_one_rule() -> None:
    from pqb.builders.reports.typo_study import summarise, tvd

    pairs = [("taning", "tanning"), ("gamer", "game"), ("gsme", "game"), ("teh", "the"), ("gmae", "game"),
             ("UgSB", "USB"), ("xyzw", "game"), ("gaame", "game")]  # fmt: skip
    got = summarise(pairs, n_boot=50, seed=0, correctors=False)["features"]
    assert got["ins"]["share"] == pytest.approx(3 / 8) and got["multi"]["share"] == pytest.approx(1 / 8)
    assert got["ins_vowel"]["share"] == pytest.approx(1 / 3)  # the doubled "a" of "gaame"
    assert got["ins_vowel_undoubled"]["share"] == 0.0 and got["ins_vowel_undoubled"]["n"] == 2  # "gamer", "UgSB"
    assert got["del_doubled"]["share"] == 1.0 and got["sub_neighbour"]["share"] == 1.0  # s is next to a
    assert got["ins_case"]["share"] == pytest.approx(1 / 3)  # "UgSB": a lower-case letter inside capitals
    assert got["implausible"]["share"] == pytest.approx(1 / 7)  # the wrong-case insertion
    lo, hi = got["ins"]["ci"]
    assert 0 <= lo <= 3 / 8 <= hi <= 1
    assert tvd({"deletion": 2}, {"deletion": 1, "insertion": 1}) == pytest.approx(0.5)


def test_typo_study_runs_on_a_work_dir_without_pairs(tmp_path, monkeypatch) -> None:
    from pqb.builders.reports.typo_study import run_typo_study
    from pqb.builders.workdir import WorkDir

    rows = [
        f"r/{i},{t},{w},c,f.py,{i}"
        for i in range(60)
        for t, w in [("taning", "tanning"), ("gmae", "game")][i % 2 :][:1]
    ]
    (tmp_path / "typos").mkdir()
    (tmp_path / "typos" / "srcd_typos_calibration.csv").write_text(
        "repository,wrong,correct,commit,file,line\n" + "\n".join(rows)
    )
    monkeypatch.setattr(settings, "PQB_TYPOS_DIR", tmp_path / "typos")
    monkeypatch.setattr(settings, "PQB_RELEASE_DIR", tmp_path / "no-release")
    out = run_typo_study(WorkDir(tmp_path / "work", "video_games"), n_boot=20)
    assert set(out["columns"]) == {"simulated, held-out words", "real, held-out", "real, estimation share"}
    assert out["columns"]["real, held-out"]["n"] + out["columns"]["real, estimation share"]["n"] == 60
    md = (tmp_path / "work" / "video_games" / "validation" / "typo_study.md").read_text()
    assert "| deletion of one of a doubled letter |" in md and "ODbL" in md


def test_channel_tables_match_a_hand_count() -> None:
    """Three slips counted by hand: 'taning' (drop a doubled n), 'gmae' (swap ma), 'gamre' (insert r
    after m, before e)."""
    from pqb.builders.writing_errors.channel import LETTER_PRIOR_WEIGHT, RATE_PRIOR_WEIGHT, Slip

    ch = SlipChannel([Slip("taning", "tanning", "a"), Slip("gmae", "game", "b"), Slip("gamre", "game", "c")])
    assert ch.slips_used == 3
    assert ch.ops == Counter({("del", "n", "True"): 1, ("trans", "a", "m"): 1, ("ins", "m", "r", "e"): 1})
    # chances: 'n' stands doubled twice in "tanning"; 'am' occurs once in each "game"; gaps after 'm': 2
    letters = len("tanning") + 2 * len("game")
    base_del = 1 / letters
    assert ch._rate(("del", "n", "True")) == pytest.approx(
        (1 + RATE_PRIOR_WEIGHT * base_del) / (2 + RATE_PRIOR_WEIGHT)
    )
    base_trans = 1 / (6 + 3 + 3)  # bigrams of tanning, game, game
    assert ch._rate(("trans", "a", "m")) == pytest.approx(
        (1 + RATE_PRIOR_WEIGHT * base_trans) / (2 + RATE_PRIOR_WEIGHT)
    )
    # 'r' is a QWERTY neighbour of the next letter 'e', not of 'm': its word chose it, so it counts as one
    # neighbour slip after 'm', spread over the neighbours of the gap it is applied to
    assert ch._letter == Counter() and ch._bound == Counter({("ins", "m", "neighbour"): 1})
    w = LETTER_PRIOR_WEIGHT
    # an insertion's class share goes to its letters by their frequency in the intended words, plus one:
    # "tanning game game" has n 3, a 3, g 3, m 2, e 2, t 1, i 1, so n 4, g 4, a 4, m 3, e 3, t 2, i 2, rest 1.
    # Class shares (count + 1) / (1 + 5): neighbour 2/6, the four others 1/6 each. Between 'm' and 'e',
    # with 'g' nearby: copy {m, e}, neighbours {n, j, k, w, r, s, d} (weights 4 + 6 x 1 = 10), vowels
    # {a, i, o, u}, nearby {g}, 12 other letters (t 2, 11 x 1: 13)
    p = ch.insert_letter("m", "e", "aegm")
    assert p["r"] == pytest.approx((1 / 10 + w * (2 / 6) / 10) / (1 + w)) == pytest.approx(p["j"])
    assert p["n"] == pytest.approx((4 / 10 + w * (2 / 6) * 4 / 10) / (1 + w))
    assert p["x"] == pytest.approx(w * (1 / 6) / 13 / (1 + w))
    assert p["t"] == pytest.approx(w * (1 / 6) * 2 / 13 / (1 + w))
    assert p["g"] == pytest.approx(w * (1 / 6) / (1 + w)) and abs(sum(p.values()) - 1) < 1e-12
    # between 'm' and 'a', nothing nearby: neighbours of 'm' and 'a' {n, j, k, q, w, s, z} (10); the
    # nearby class is empty, so the four others share 5/6; 13 other letters (g 4, t 2, 11 x 1: 17)
    q = ch.insert_letter("m", "a", "")
    assert q["n"] == pytest.approx((4 / 10 + w * (2 / 5) * 4 / 10) / (1 + w))
    assert q["r"] == pytest.approx(w * (1 / 5) / 17 / (1 + w)) and abs(sum(q.values()) - 1) < 1e-12
    # a substitution's class share is spread evenly (channel.SPREAD)
    sub = ch.substitute_letter("m", "")  # neighbours {j, k, n}: 2/3 of the prior (count + 1 shares)
    assert sub["j"] == pytest.approx(sub["n"])


def test_a_slip_its_word_chose_counts_for_its_class_not_its_letter() -> None:
    """'gane' (m typed as its QWERTY neighbour n) counts as the letter n; 'gage' (m typed as the g two
    places before it: an anticipation) counts as one *nearby* slip of 'm', spread over whatever letters
    are nearby where the channel is applied, and nowhere when none is. Hand count below."""
    from pqb.builders.writing_errors.channel import LETTER_PRIOR_WEIGHT, Slip, context_class

    assert context_class(("sub", "m", "g"), "aeg") == "nearby"
    assert context_class(("sub", "m", "n"), "aeg") is None
    assert context_class(("ins", "n", "n", "e"), "") is None  # a doubling depends only on 'n'
    assert context_class(("ins", "m", "e", "e"), "") == "copy"  # a copy of the next letter
    ch = SlipChannel([Slip("gane", "game", "a"), Slip("gage", "game", "b")])
    assert ch._letter == Counter({("sub", "m", "n"): 1}) and ch._bound == Counter({("sub", "m", "nearby"): 1})
    w = LETTER_PRIOR_WEIGHT
    # class shares (count + 1) / (2 + 5): neighbour 2/7, vowel 1/7, sound 1/7, nearby 2/7, other 1/7.
    # For 'm' there is no vowel class, and its sound-alike 'n' is already a neighbour.
    plain = ch.substitute_letter("m", "")  # neighbours {j, k, n} 2/3 of the prior, 22 others 1/3
    assert plain["n"] == pytest.approx((1 + w * (2 / 3) / 3) / (1 + w))
    assert plain["k"] == pytest.approx(w * (2 / 3) / 3 / (1 + w))
    assert plain["t"] == pytest.approx(w * (1 / 3) / 22 / (1 + w)) == pytest.approx(plain["b"])
    near = ch.substitute_letter("m", "tz")  # neighbours 2/5, nearby {t, z} 2/5, 20 others 1/5
    assert near["t"] == pytest.approx((0.5 + w * (2 / 5) / 2) / (2 + w)) == pytest.approx(near["z"])
    assert near["n"] == pytest.approx((1 + w * (2 / 5) / 3) / (2 + w))
    assert near["b"] == pytest.approx(w * (1 / 5) / 20 / (2 + w))
    assert abs(sum(plain.values()) - 1) < 1e-12 and abs(sum(near.values()) - 1) < 1e-12


def test_a_user_without_slips_gets_the_population_channel_and_prior() -> None:
    from pqb.builders.writing_errors.context import Smoothing
    from pqb.builders.writing_errors.profiles import ErrorProfiles, empty_counts

    glob = empty_counts()
    glob["mechanisms"] = {"deletion": 3}
    prof = ErrorProfiles(glob=glob, users={"quiet": empty_counts()}, smoothing=Smoothing())
    ch = toy_channel()
    pop = prof.with_population(ch.population)
    assert pop.mechanism_probs("quiet") == pop.global_mechanism_probs() == pop.mechanism_probs(None)
    assert pop.position_probs("quiet") == pop.global_position_probs()
    want = Counter(ch.population["mechanisms"]) + Counter({"deletion": 3})
    assert {m: pop.glob["mechanisms"].get(m, 0) for m in want} == dict(want)
    assert prof.glob["mechanisms"] == {"deletion": 3}  # the loaded profiles are not changed


def test_the_population_channel_follows_a_rewritten_calibration_file(tmp_path) -> None:
    """The channel is memoised per process: keyed by the path alone, a file rewritten in between kept
    its old slips (and the old sha256 in the pair stage's key)."""
    from pqb.builders.writing_errors.channel import population_channel, population_slips

    path = tmp_path / "srcd_typos_calibration.csv"
    path.write_text(CSV)
    before = population_channel(path=path).settings()
    path.write_text("\n".join(CSV.splitlines()[:2]) + "\n")  # one slip left, same path
    after = population_channel(path=path).settings()
    assert after["typos_sha256"] != before["typos_sha256"]
    assert after["real_slips"] == population_slips(path)[1]["real_slips"] != before["real_slips"]


TWO_LETTER_FIXTURE = (  # (typed, intended, label of a pair at distance 2)
    ("maintance", "maintenance", "slip"),  # drop: "en" missing
    ("Positition", "Position", "slip"),  # repeat: "it" typed twice
    ("Torelance", "Tolerance", "slip"),  # swap: l and r, two places apart
    ("glosarry", "glossary", "slip"),  # pair: one s dropped, r doubled
    ("Insutry", "Industry", "slip"),  # pair
    ("regist", "register", "other"),  # a truncation: not a slip
    ("Adresss", "Address", None),  # unlabelled: not counted
    ("Managment", "Management", None),  # single-letter slips on long words: the denominator
    ("Controler", "Controller", None),
    ("recieve", "receive", None),
    ("wirelss", "wireless", None),
    ("taning", "tanning", None),  # a single-letter slip on a 7-letter word
    ("gmae", "game", None),  # a short word: neither
)


def _two_letter_channel() -> SlipChannel:
    from pqb.builders.writing_errors.channel import Slip, pair_key

    labels = {pair_key(t, w): lab for t, w, lab in TWO_LETTER_FIXTURE if lab}
    slips = [Slip(t, w, f"r/{i}") for i, (t, w, _) in enumerate(TWO_LETTER_FIXTURE)]
    slips.append(Slip("Controllr", "Controller", "detector:video_games"))  # the detector's: not counted
    return SlipChannel(slips, labels=labels)


def test_two_letter_kinds_and_rate_match_a_hand_count() -> None:
    """Hand count of the fixture: 5 labelled two-letter slips (drop, repeat, swap, 2 pairs) and 5
    single-letter slips on words of 7+ letters ("tanning" included); the truncation, the unlabelled
    pair, the short word and the detector's slip do not count. Kind and position shares are add-one."""
    from pqb.builders.writing_errors.channel import two_letter_kind

    assert [two_letter_kind(t, w) for t, w, _ in TWO_LETTER_FIXTURE[:6]] == [
        "drop", "repeat", "swap", "pair", "pair", "drop",
    ]  # fmt: skip
    assert two_letter_kind("Managment", "Management") is None  # one letter
    assert two_letter_kind("Mngmnt", "Management") is None  # more than two
    ch = _two_letter_channel()
    assert ch.two_letter_n == Counter({"pair": 2, "drop": 1, "repeat": 1, "swap": 1})
    assert ch.two_letter_rate == pytest.approx(5 / 10)
    assert ch.two_letter_shares == pytest.approx({"drop": 2 / 9, "repeat": 2 / 9, "swap": 2 / 9, "pair": 3 / 9})
    assert ch.two_letter_positions == pytest.approx({"first": 1 / 8, "interior": 6 / 8, "last": 1 / 8})
    assert toy_channel().two_letter_rate == 0.0  # no two-letter slip in the toy slips: none injected


def test_two_letter_slips_follow_the_channel() -> None:
    """Seeded statistical test: over 6,000 slips of long words, the share that touches two letters is
    the channel's rate, their kinds its shares (chi-square, 16.3 at p = 0.001 for 3 degrees of freedom);
    each is readable, at distance 2, and labelled ``two_letter``; words of 6 letters never take one."""
    from pqb.builders.writing_errors.channel import two_letter_kind
    from pqb.builders.writing_errors.injection import slip_word

    ch = _two_letter_channel()
    probs = {"deletion": 0.5, "insertion": 0.2, "substitution": 0.2, "transposition": 0.1}
    pos = {"first": 0.1, "interior": 0.7, "last": 0.2}
    rng = np.random.default_rng(11)
    words = ["controller", "headphones", "Nintendo", "keyboard", "wireless"]
    n, kinds = 6000, Counter()
    for i in range(n):
        word = words[i % len(words)]
        typed, mech = slip_word(word, "deletion", probs, pos, rng, ch)
        if mech == "two_letter" and typed is not None:
            assert readable(word, typed) and two_letter_kind(typed, word) is not None
            kinds[two_letter_kind(typed, word)] += 1
        assert slip_word("tanned", "deletion", probs, pos, rng, ch)[1] == "deletion"
    two = sum(kinds.values())
    assert abs(two / n - ch.two_letter_rate) < 4 * (0.25 / n) ** 0.5, two
    exp = {k: two * ch.two_letter_shares[k] for k in ch.two_letter_shares}
    chi2 = sum((kinds[k] - e) ** 2 / e for k, e in exp.items())
    assert chi2 < 16.3, (chi2, kinds)


def test_the_two_letter_labels_hold_no_slip() -> None:
    """The labels file is keyed by hashes (the slips are ODbL data, read from outside the repository)."""
    import json

    from pqb.builders.writing_errors.channel import TWO_LETTER_LABELS_FILE, two_letter_labels

    labels = two_letter_labels()
    assert len(labels) > 100 and set(labels.values()) == {"slip", "other"}
    assert all(len(k) == 16 and int(k, 16) >= 0 for k in labels)
    assert set(json.loads(TWO_LETTER_LABELS_FILE.read_text())) == {"about", "labels"}


def test_spread_likelihoods_prefer_the_spread_the_slips_follow() -> None:
    """Cross-validated choice of how a class share is spread (channel.SPREAD): slips that insert the
    intended words' most frequent letter ("e", a vowel here, not a neighbour or nearby copy of the q's
    around the gap) are predicted better by the frequency spread than by the even one."""
    from pqb.builders.reports.typo_study import spread_likelihoods
    from pqb.builders.writing_errors.channel import Slip

    slips = [Slip("eeeeqqqqqqeqq", "eeeeqqqqqqqq", f"org/r{i}") for i in range(40)]
    cv = spread_likelihoods(slips)
    assert cv["ins"]["n"] == 40 and cv["sub"] == {"n": 0, "uniform": None, "frequency": None}
    assert cv["ins"]["frequency"] > cv["ins"]["uniform"]


def test_the_simulated_column_draws_the_population_mix_on_every_word() -> None:
    """Seeded statistical test of ``typo_study.simulate``: ``draws`` slips per editable word (seeded, so the
    same twice), and the QWERTY-neighbour share of its substitutions is the population mix's
    keyboard_adjacent / (keyboard_adjacent + substitution), within 4 standard errors. (With one draw per
    word the card's column once read 42.4% where the mix gives 32%: simulation noise, not the channel.)"""
    from pqb.builders.reports.typo_study import simulate
    from pqb.builders.writing_errors.mechanisms import classify

    ch = toy_channel()
    words = ["games", "tanning", "garden", "at", "remote", "quiet", "cables"]  # "at" cannot take a slip
    few = simulate(words, ch, seed=1, draws=3)
    assert len(few) == 3 * 6 and few == simulate(words, ch, seed=1, draws=3)
    assert all(w != "at" for _, w in few)
    got = Counter(classify(t, w) for t, w in simulate(words[:3] + words[4:], ch, seed=2, draws=600))
    mech = ch.population["mechanisms"]
    p = (mech.get("keyboard_adjacent", 0) + 1) / (mech.get("keyboard_adjacent", 0) + mech.get("substitution", 0) + 2)
    n = got["keyboard_adjacent"] + got["substitution"]
    assert n > 200 and abs(got["keyboard_adjacent"] / n - p) < 4 * (p * (1 - p) / n) ** 0.5, (got, p)
