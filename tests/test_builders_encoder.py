"""Encoder determinism and persistence, no leakage of held-out text, and a tiny end-to-end build."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pqb.builders.config import EncoderConfig
from pqb.builders.parses import Parsed
from pqb.builders.syntax.encoder import SyntaxEncoder
from pqb.dataset.io import sha256_file

FAST = EncoderConfig(n_components=8, epochs=3, batch_size=16, seed=0)


def _rule_sets(n_users: int = 5, per_user: int = 12, seed: int = 0) -> tuple[list, list, list]:
    rng = np.random.default_rng(seed)
    rules, users, products = [], [], []
    pool = [f"R{i}" for i in range(40)]
    for u in range(n_users):
        own = pool[u * 6 : u * 6 + 6]
        for j in range(per_user):
            rs = set(rng.choice(own, 3, replace=False)) | set(rng.choice(pool, 3, replace=False))
            rules.append(frozenset(rs))
            users.append(f"u{u}")
            products.append(f"p{j % 3}")
    return rules, users, products


def test_fit_is_deterministic_and_roundtrips(tmp_path: Path) -> None:
    rules, users, products = _rule_sets()
    a, b = SyntaxEncoder.fit(rules, users, products, FAST), SyntaxEncoder.fit(rules, users, products, FAST)
    fa, fb = a.save(tmp_path / "a"), b.save(tmp_path / "b")
    assert [sha256_file(p) for p in fa] == [sha256_file(p) for p in fb]
    Z = a.encode_rule_sets(rules[:5])
    assert Z.shape == (5, 16)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-6)
    back = SyntaxEncoder.load(tmp_path / "a")
    np.testing.assert_array_equal(back.encode_rule_sets(rules[:5]), Z)
    assert back.meta["train"]["vocab_size"] == len(a.vocab)


def test_load_from_workdir_or_clear_error(tmp_path: Path) -> None:
    rules, users, products = _rule_sets()
    SyntaxEncoder.fit(rules, users, products, FAST).save(tmp_path / "syntax")
    assert SyntaxEncoder.load(tmp_path).config == FAST
    with pytest.raises(FileNotFoundError, match="pqb-build profiles"):
        SyntaxEncoder.load(tmp_path / "nothing")


def test_heldout_sentences_never_reach_the_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sentinel rule that only held-out sentences have must not enter the vocabulary (nor SVD/MLP)."""
    from pqb.builders.config import BuildConfig
    from pqb.builders.syntax import stage as stages
    from pqb.builders.workdir import SENTENCES_SCHEMA, USERS_TABLE_SCHEMA, WorkDir, write_parquet

    rules, users, products = _rule_sets()
    rows, fake_rules = [], {}
    for i, (rs, u, p) in enumerate(zip(rules, users, products, strict=True)):
        split = "heldout" if i % 4 == 0 else "profile"
        text = f"sentence {i}"
        fake_rules[text] = rs | ({"SENTINEL|HELDOUT"} if split == "heldout" else set())
        rows.append({"user_id": u, "parent_asin": p, "review_idx": i, "sent_idx": 0, "sentence_id": f"r{i}s0",
                     "text": text, "split": split})  # fmt: skip
    d = tmp_path / "video_games"
    write_parquet(pa.Table.from_pylist(rows, schema=SENTENCES_SCHEMA), d / "sentences.parquet")
    urows = [
        {"user_id": f"u{u}", "n_sentences": 12, "n_profile": 9, "n_heldout": 3, "qualified": True}
        for u in range(5)
    ]
    write_parquet(pa.Table.from_pylist(urows, schema=USERS_TABLE_SCHEMA), d / "users.parquet")

    monkeypatch.setattr(stages, "parse_texts", lambda texts, **_: [Parsed((t,), (), ()) for t in texts])
    monkeypatch.setattr(stages, "rules_of", lambda p: frozenset(fake_rules[p.pos[0]]))
    stats = stages.run_profiles(WorkDir(tmp_path, "video_games"), BuildConfig(encoder=FAST, n_subsamples=3))
    vocab = json.loads((d / "syntax" / "vocab.json").read_text())["rules"]
    assert "SENTINEL|HELDOUT" not in vocab
    assert stats["train_sentences"] == sum(r["split"] == "profile" for r in rows)
    assert stats["gaussians"] == 5


# --------------------------------------------------------------------------------------------------
# tiny end-to-end build in the official layout (real spaCy)
# --------------------------------------------------------------------------------------------------

SUBJ = ["I", "My son", "We", "This game", "The controller", "It"]
TEMPLATES = [
    "{s} really liked the graphics and the music.",
    "Honestly, {s} would buy this again without thinking twice.",
    "{s} works great on the old console that we keep in the basement.",
    "When the package arrived, {s} was already broken.",
    "Do not buy this if {s} needs a quick fix.",
    "The story is long, but {s} never got bored.",
    "{s} plays it every single night after dinner.",
]


def _tiny_source(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    reviews = []
    for u in range(6):
        for r in range(3):
            sents = [
                TEMPLATES[(u + k * (r + 1)) % len(TEMPLATES)].format(s=SUBJ[(u + k) % len(SUBJ)])
                for k in range(5)
            ]
            text = " ".join(s[0].upper() + s[1:] for s in sents)
            asin = ["G1", "G2", "G3"][(u + r) % 3]
            reviews.append({"rating": 5.0, "title": "t", "text": text, "parent_asin": asin, "asin": asin,
                            "user_id": f"USER{u}", "timestamp": r})  # fmt: skip
    (src / "Video_Games.jsonl").write_text("\n".join(json.dumps(r) for r in reviews) + "\n")
    details = {
        "Brand": "Acme",
        "Color": "Red",
        "Material": "Plastic",
        "Style": "Classic",
        "Rated": "Everyone",
    }
    meta = [{"parent_asin": a, "title": f"Game {a}", "details": details, "features": ["Fun"], "categories": ["Video Games"],
             "description": ["A classic red plastic game for everyone."]}  # attests its attributes (issue 43)
            for a in ("G1", "G2", "G3")] + [{"parent_asin": "G4", "title": ""}]  # fmt: skip
    (src / "meta_Video_Games.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\nnot json\n")
    return src


def _build(work: Path, src: Path) -> dict:
    from pqb.builders.config import BuildConfig, UserConfig
    from pqb.builders.reports.attribution import run_validate_syntax
    from pqb.builders.source.stage import run_ingest, run_users
    from pqb.builders.syntax.stage import run_profiles
    from pqb.builders.workdir import WorkDir

    wd = WorkDir(work, "video_games")
    users = UserConfig(min_sentences=8, min_profile=5, min_heldout=1)
    cfg = BuildConfig(source=src, users=users, encoder=FAST, n_subsamples=3, n_boot=10)
    out = {"ingest": run_ingest(wd, cfg)}
    out["users"] = run_users(wd, cfg)
    out["profiles"] = run_profiles(wd, cfg)
    out["validate"] = run_validate_syntax(wd, cfg)
    return out


def test_tiny_build_is_deterministic_and_resumable(tmp_path: Path) -> None:
    src = _tiny_source(tmp_path)
    a = _build(tmp_path / "w1", src)
    assert (
        a["ingest"]["products"] == 3
        and a["ingest"]["targets"] == 3
        and a["ingest"]["meta_read"]["malformed"] == 1
    )
    assert a["users"]["users_qualified"] >= 2 and a["profiles"]["gaussians"] >= 2
    _build(tmp_path / "w2", src)
    names = ["products.parquet", "corpus.parquet", "reviews.parquet", "sentences.parquet", "users.parquet",
             "links.parquet", "syntax/vocab.json", "syntax/svd.safetensors", "syntax/encoder.safetensors",
             "syntax/gaussians.parquet", "syntax/embeddings.parquet", "validation/syntax_attribution.json"]  # fmt: skip
    for n in names:
        assert sha256_file(tmp_path / "w1/video_games" / n) == sha256_file(tmp_path / "w2/video_games" / n), n
    again = _build(tmp_path / "w1", src)
    assert all(again[k].get("skipped") for k in again)
    enc = SyntaxEncoder.load(tmp_path / "w1/video_games")
    Z = enc.encode(["cheap red controller for kids", "I want a plastic game that is classic"])
    assert Z.shape == (2, 16) and np.allclose(np.linalg.norm(Z, axis=1), 1)


@pytest.mark.slow
def test_real_slice_end_to_end(tmp_path: Path) -> None:
    """ingest → users → profiles → validate syntax on the offline slice at $PQB_AMAZON_DIR (≈2 min on 2 cores)."""
    from pqb.builders.config import BuildConfig
    from pqb.builders.reports.attribution import run_validate_syntax
    from pqb.builders.source.stage import run_ingest, run_users
    from pqb.builders.syntax.stage import run_profiles
    from pqb.builders.workdir import WorkDir
    from pqb.dataset import settings

    if not (Path(settings.PQB_AMAZON_DIR) / "Video_Games.jsonl").exists():
        pytest.skip("offline slice not available")
    wd, cfg = (
        WorkDir(tmp_path, "video_games"),
        BuildConfig(n_boot=20, link="any"),
    )  # the slice's reviewers miss the targets
    ing = run_ingest(wd, cfg)
    # 1,345 lines, 2 exact duplicates on (user, product, text) dropped
    assert ing["reviews"] == 1343 and ing["products"] == 1488 and ing["users_ge5_reviews"] == 115
    users = run_users(wd, cfg)
    assert users["users_qualified"] >= 50
    prof = run_profiles(wd, cfg)
    assert (
        prof["gaussians"] == users["linked_users"] <= users["users_qualified"]
        and prof["audit_pass"]["audit_numerics"] == prof["gaussians"]
    )
    val = run_validate_syntax(wd, cfg)
    assert val["rank1_diag"]["balanced"] > 0.5  # better than chance on held-out sentences


def test_cli_stages_and_insufficient_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pqb.builders.cli import main

    src = _tiny_source(tmp_path)
    common = ["--domain", "video_games", "--workdir", str(tmp_path / "w")]
    assert main(["ingest", *common, "--source", str(src)]) == 0
    assert '"targets": 3' in capsys.readouterr().out
    assert main(["users", *common, "--min-sentences", "1000"]) == 0  # nobody qualifies
    assert main(["profiles", *common]) == 1
    assert "0 qualified user(s)" in capsys.readouterr().err
    assert main(["ingest", *common, "--source", str(src)]) == 0
    assert "up to date, skipped" in capsys.readouterr().out
