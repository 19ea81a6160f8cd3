"""A tiny PQB dataset written by tests (SYNTHETIC: hand-written products, users and queries).

``make_tiny_dataset(root)`` writes a dataset folder in the published layout — a dataset card
``README.md`` whose YAML ``configs:`` lists one parquet file per config — so that
``datasets.load_dataset(str(root), "video_games")`` works offline. Nothing here is real Amazon
data; the texts are invented to exercise ranks, ties, pairs of 2 and 3 users, and typo edits.
Other engineers' CLI tests reuse this function: keep its signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pqb.dataset.schema import CONFIG_SCHEMAS, config_name, edit_position, query_id

# (id suffix, title, brand, category, extra text). "G00X" duplicates "G01" exactly: a tie that sorts first.
_PRODUCTS: list[tuple[str, str, str, str, str]] = [
    (
        "G01",
        "Wireless Controller for Switch",
        "PadCo",
        "Controllers",
        "long battery life, textured grip, motion",
    ),
    (
        "G00X",
        "Wireless Controller for Switch",
        "PadCo",
        "Controllers",
        "long battery life, textured grip, motion",
    ),
    (
        "G02",
        "Racing Wheel with Pedals",
        "DriveMax",
        "Wheels",
        "force feedback motor, pedals, paddle shifters",
    ),
    (
        "G03",
        "Gaming Headset with Microphone",
        "EchoGear",
        "Headsets",
        "surround sound, detachable microphone",
    ),
    ("G04", "Memory Card 256GB for Nintendo", "StorIt", "Storage", "fast memory card with extra storage"),
    ("G05", "Charging Dock for Controllers", "PadCo", "Accessories", "charges two wireless controllers"),
    ("G06", "Headset Stand", "EchoGear", "Accessories", "holds any gaming headset, rgb light"),
    ("G07", "Arcade Fight Stick", "DriveMax", "Controllers", "sanwa buttons, long cable"),
    ("G08", "Console Carrying Case", "StorIt", "Cases", "hard shell case with storage for cards"),
    ("G09", "Steering Wheel Attachment for Joy-Con", "DriveMax", "Wheels", "snap-in racing wheel shells"),
    ("G10", "Surround Sound Speaker Bar", "EchoGear", "Audio", "sound bar for tv and console"),
    ("G11", "Battery Pack for Controller", "PadCo", "Accessories", "rechargeable battery, usb-c"),
]

_FILLER_WORDS = (
    "wireless",
    "controller",
    "headset",
    "racing",
    "memory",
    "card",
    "sound",
    "fast",
    "grip",
    "storage",
    "pedals",
    "microphone",
    "switch",
    "battery",
    "console",
    "cable",
)
_PRODUCTS += [
    (f"F{i:02d}", f"Accessory {i} " + " ".join(_FILLER_WORDS[(i * 3 + j) % 16] for j in range(3)), "Generic",
     "Accessories", " ".join(_FILLER_WORDS[(i * 5 + j) % 16] for j in range(4)))
    for i in range(24)
]  # fmt: skip
"""Synthetic distractors sharing query words, so ranks spread beyond the top 10."""

# (row suffix, asin, user, pair, query, core terms, typo spec [(word, edited, mechanism)]).
_ROWS: list[tuple[str, str, str, str, str, list[str], list[tuple[str, str, str]]]] = [
    (
        "r1",
        "G01",
        "u1",
        "p1",
        "looking for a wireless controller for the switch with long battery life and a comfy grip",
        ["wireless", "controller", "switch", "battery", "grip"],
        [("life", "lfie", "transposition")],
    ),
    (
        "r2",
        "G01",
        "u2",
        "p1",
        "need wireless controller, switch compatible, good battery, solid grip",
        ["wireless", "controller", "switch", "battery", "grip"],
        [],
    ),
    (
        "r3",
        "G02",
        "u3",
        "p2",
        "a racing wheel with pedals and strong force feedback for my console",
        ["racing", "wheel", "pedals", "force", "feedback"],
        [],
    ),
    (
        "r4",
        "G02",
        "u4",
        "p2",
        "racing wheel plus pedals, force feedback is a must",
        ["racing", "wheel", "pedals", "force", "feedback"],
        [("must", "mustt", "repetition"), ("plus", "pluss", "repetition")],
    ),
    (
        "r5",
        "G03",
        "u1",
        "p3",
        "gaming headset with a clear microphone and surround sound that fits over glasses",
        ["gaming", "headset", "microphone", "surround", "sound"],
        [("clear", "cleer", "homophone")],
    ),
    (
        "r6",
        "G03",
        "u3",
        "p3",
        "want a gaming headset, surround sound, detachable microphone",
        ["gaming", "headset", "microphone", "surround", "sound"],
        [("want", "wnat", "transposition")],
    ),
    (
        "r7",
        "G04",
        "u1",
        "p4",
        "memory card for nintendo, fast with lots of storage",
        ["memory", "card", "nintendo", "fast", "storage"],
        [],
    ),
    (
        "r8",
        "G04",
        "u2",
        "p4",
        "fast memory card, nintendo, more storage please",
        ["memory", "card", "nintendo", "fast", "storage"],
        [("please", "pleaes", "transposition")],
    ),
    (
        "r9",
        "G04",
        "u4",
        "p4",
        "nintendo memory card that is fast and adds storage",
        ["memory", "card", "nintendo", "fast", "storage"],
        [("adds", "ads", "deletion")],
    ),
]
# fmt: on

_USERS = ("u1", "u2", "u3", "u4")


def _edits(query: str, spec: Sequence[tuple[str, str, str]]) -> tuple[str | None, list[dict[str, Any]]]:
    if not spec:
        return None, []
    edits = []
    for word, edited, mechanism in spec:
        start = f" {query} ".index(f" {word}") if f" {word}" in f" {query} " else query.index(word)
        edits.append(
            {
                "start": start,
                "end": start + len(word),
                "original": word,
                "edited": edited,
                "mechanism": mechanism,
                "location": "content_word",
                "position": edit_position(word, edited),
            }
        )
    edits.sort(key=lambda e: e["start"])
    out, pos = [], 0
    for e in edits:
        out += [query[pos : e["start"]], e["edited"]]
        pos = e["end"]
    return "".join([*out, query[pos:]]), edits


def tiny_tables(domain: str = "video_games") -> dict[str, pa.Table]:
    """The five configs of one synthetic domain as Arrow tables in the published schemas."""
    pre = "" if domain == "video_games" else f"{domain[:3]}-"
    corpus = [
        {"id": pre + pid, "title": t, "text": f"product: {t}\nbrand: {b}\ncategory: {c}\nfeatures:\n#1: {x}"}
        for pid, t, b, c, x in _PRODUCTS
    ]
    rows = []
    for rid, asin, user, pair, query, core, spec in _ROWS:
        err, edits = _edits(query, spec)
        rows.append({
            "id": f"{pre}{rid}", "domain": domain, "asin": pre + asin, "user_id": f"{pre}{user}",
            "pair_id": f"{pre}{pair}", "query": query, "error_query": err, "error_edits": edits,
            "error_chain": edits, "profile_evidence": 3 if err else None, "backoff": False if err else None,
            "core_terms": core, "protected_terms": [], "attributes": [{"name": "synthetic", "value": "yes"}],
            "syntax": {"own_loglik": -1.0, "own_d2": 1.0, "partner_d2": 9.0, "threshold": 5.0,
                       "partner_threshold": 5.0, "pair_distance": 2.0},
        })  # fmt: skip
    queries = [{"id": query_id(r["id"]), "text": r["query"]} for r in rows]
    queries += [{"id": query_id(r["id"], True), "text": r["error_query"]} for r in rows if r["error_query"]]
    qrels = [{"query-id": q["id"], "corpus-id": _target(rows, q["id"]), "score": 1} for q in queries]
    users = [
        {"user_id": f"{pre}{u}", "domain": domain, "mu": [0.0, 0.1], "v": [1.0, 0.0], "lam": 0.5,
         "sigma2": [1.0, 1.0], "threshold": 5.0, "threshold_kind": "q95", "n_sentences": 20,
         "n_profile_sentences": 15, "n_heldout_sentences": 5, "n_tokens": 300, "n_char_errors": 3,
         "error_rate": 0.01, "mechanisms": [{"mechanism": "transposition", "count": 3, "prob": 1.0}]}
        for u in _USERS
    ]  # fmt: skip
    data = {"rows": rows, "corpus": corpus, "queries": queries, "qrels": qrels, "users": users}
    return {kind: pa.Table.from_pylist(v, schema=CONFIG_SCHEMAS[kind]) for kind, v in data.items()}


def _target(rows: list[dict[str, Any]], qid: str) -> str:
    rid = qid.removesuffix("_error")
    return next(r["asin"] for r in rows if r["id"] == rid)


def make_tiny_dataset(root: Path, domains: Sequence[str] = ("video_games",)) -> Path:
    """Write the synthetic dataset for ``domains`` under ``root`` and return ``root``."""
    root = Path(root)
    card = ["---", "pretty_name: PQB tiny synthetic test dataset", "configs:"]
    for domain in domains:
        for kind, table in tiny_tables(domain).items():
            name = config_name(domain, kind)
            rel = f"data/{name}/test-00000-of-00001.parquet"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, root / rel)
            card += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {rel}"]
    card += ["---", "", "# PQB tiny dataset", "", "SYNTHETIC test data written by tests/pqb_fixtures.py.", ""]
    (root / "README.md").write_text("\n".join(card), encoding="utf-8")
    return root


# Hand-written slips (SYNTHETIC, not the real calibration data): a slip channel for tests that must not
# depend on the real slips at $PQB_TYPOS_DIR. Doubled-letter deletions and inserted vowels dominate, as in real typing.
TOY_SLIPS: tuple[tuple[str, str], ...] = (
    ("taning", "tanning"), ("adress", "address"), ("comming", "coming"), ("runing", "running"),
    ("buton", "button"), ("recieve", "receive"), ("teh", "the"), ("wirelss", "wireless"),
    ("gaiming", "gaming"), ("controoler", "controller"), ("heaadset", "headset"), ("blakc", "black"),
    ("keybaord", "keyboard"), ("mosue", "mouse"), ("cabel", "cable"), ("grat", "great"),
    ("bateries", "batteries"), ("somthing", "something"), ("wnat", "want"), ("dsik", "disk"),
    ("lenght", "length"), ("contorller", "controller"), ("swtich", "switch"), ("gamne", "game"),
    ("edtion", "edition"), ("comforatble", "comfortable"), ("realy", "really"), ("qiuet", "quiet"),
)  # fmt: skip


def toy_channel() -> Any:
    """A :class:`SlipChannel` over :data:`TOY_SLIPS` (imported lazily: builders are an optional extra)."""
    from pqb.builders.writing_errors.channel import Slip, SlipChannel

    return SlipChannel(
        [Slip(t, w, f"toy/{i % 5}") for i, (t, w) in enumerate(TOY_SLIPS)], provenance={"toy": True}
    )


def write_toy_typos(folder: Path) -> Path:
    """:data:`TOY_SLIPS` as a calibration CSV in ``folder`` (SYNTHETIC: for tests without the real slips)."""
    rows = [f"synthetic/repo{i % 7},{t},{w},0,synthetic.py,{i}" for i, (t, w) in enumerate(TOY_SLIPS)]
    (folder / "srcd_typos_calibration.csv").write_text(
        "repository,wrong,correct,commit,file,line\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    return folder
