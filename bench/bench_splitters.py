"""Sentence splitters for the users stage: boundary accuracy against hand-labelled reviews, and speed.

Usage::

    python bench/bench_splitters.py [--gold tests/data/sentence_boundaries/gold.jsonl] [--repeat 3]

Three splitters, each over the cleaned review text (HTML unescaped, tags to spaces, spaces collapsed:
``pqb.builders.source.users.clean_review_text``):

* ``parser`` — spaCy's dependency parser in context, as the users stage split before issue 46
  (``nlp.SENTS_DISABLE``: no tagger, attribute ruler, lemmatizer or NER);
* ``senter`` — spaCy's ``senter`` component of the same pipeline alone (its own small tok2vec);
* ``regex`` — the authors' rule, a break after ``. ! ?`` followed by white space
  (``pqb.builders.text.split_at_sentence_ends``).

**Accuracy.** The gold file holds 200 reviews drawn at random (seed 46) from every category of the
slice, with the character offset where each sentence after the first begins (labelling rules and who
labelled them: ``tests/data/sentence_boundaries/README.md``). A splitter's boundaries are the offsets
where its second, third, ... sentences begin; precision, recall and F1 count exact offsets over all
reviews (micro-averaged), and a review is "exact" when its boundaries equal the gold's.

**Speed.** CPU seconds (``time.process_time``, one process, one thread) to split every review of the
slice (all categories, about 5,800 texts), best of ``--repeat`` passes after a warm-up pass; spaCy's
model load is timed apart. ``regex + tokens`` adds what the users stage also needs without a parse: the
spaCy tokenizer's token count of each piece that has fewer white-space words than
``UserConfig.min_sentence_tokens`` (a piece with that many words has at least that many tokens).

The decision rule (issue 46): the cheapest splitter whose F1 is within 2 points of the best.

**Qualification.** Over every review of the slice, how many users (per category) each preset's thresholds
qualify from the parser's in-context sentences and from the users stage's count (``count_chunk``: the
regex, the token rule, the hash split), and how many each qualifies that the other does not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GOLD = REPO / "tests" / "data" / "sentence_boundaries" / "gold.jsonl"


def load_gold(path: Path = GOLD) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def spacy_starts(nlp: Any) -> Callable[[Sequence[str]], list[list[int]]]:
    """Sentence start offsets (after the first) of each text under a spaCy pipeline."""

    def split(texts: Sequence[str]) -> list[list[int]]:
        return [[s.start_char for s in doc.sents][1:] for doc in nlp.pipe(texts, batch_size=256)]

    return split


def regex_starts(texts: Sequence[str]) -> list[list[int]]:
    from pqb.builders.text import SENTENCE_END

    return [[m.end() for m in SENTENCE_END.finditer(t) if m.end() < len(t)] for t in texts]


def splitters() -> dict[str, tuple[Callable[[Sequence[str]], list[list[int]]], float, Any]]:
    """Each splitter with its model-load CPU seconds and its spaCy pipeline (``None`` for the regex)."""
    import spacy

    from pqb.builders.nlp import DEFAULT_SPACY_MODELS, SENTS_DISABLE, load_spacy

    out: dict[str, tuple[Callable[[Sequence[str]], list[list[int]]], float, Any]] = {}
    t = time.process_time()
    parser = load_spacy(disable=SENTS_DISABLE)
    out["parser"] = (spacy_starts(parser), time.process_time() - t, parser)
    name = parser.meta["pqb_loaded_as"]
    assert name in DEFAULT_SPACY_MODELS
    t = time.process_time()
    senter = spacy.load(name, exclude=[c for c in parser.component_names if c != "senter"])
    senter.enable_pipe("senter")
    assert senter.pipe_names == ["senter"], senter.pipe_names
    out["senter"] = (spacy_starts(senter), time.process_time() - t, senter)
    out["regex"] = (regex_starts, 0.0, None)
    return out


def scores(pred: Sequence[Sequence[int]], gold: Sequence[Sequence[int]]) -> dict[str, float]:
    tp = fp = fn = exact = 0
    for p, g in zip(pred, gold, strict=True):
        ps, gs = set(p), set(g)
        tp += len(ps & gs)
        fp += len(ps - gs)
        fn += len(gs - ps)
        exact += ps == gs
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": prec,
        "recall": rec,
        "f1": f1,
        "exact": exact / len(gold),
    }


def slice_reviews() -> list[tuple[str, str, str]]:
    """(category, user id, cleaned text) of every review of the slice with a non-empty text."""
    from pqb.builders.source.amazon import ReadStats, iter_reviews
    from pqb.builders.source.users import clean_review_text
    from pqb.dataset import settings

    out = []
    for f in sorted(Path(settings.PQB_AMAZON_DIR).glob("*.jsonl")):
        if not f.name.startswith("meta_"):
            out += [
                (f.stem, r["user_id"], clean_review_text(r["text"])) for r in iter_reviews(f, ReadStats())
            ]
    return [r for r in out if r[2]]


def qualification(reviews: Sequence[tuple[str, str, str]], parser: Any) -> dict[str, dict[str, int]]:
    """Per preset: users (category, id) the parser's in-context sentences qualify, those the users stage's
    count qualifies, and those each qualifies that the other does not (the same sentence-token rule and
    hash split on both sides; only the boundaries differ)."""
    import numpy as np

    from pqb.builders.config import PRESETS, UserConfig
    from pqb.builders.source.users import count_chunk, qualified_mask, split_bucket

    cfg = UserConfig()
    cheap = count_chunk(([t for _, _, t in reviews], cfg))  # cleaning a cleaned text changes nothing
    parsed = np.zeros_like(cheap)
    for i, doc in enumerate(parser.pipe([t for _, _, t in reviews], batch_size=256)):
        for s in doc.sents:
            text = s.text.strip()
            if text and sum(1 for t in s if not t.is_space) >= cfg.min_sentence_tokens:
                parsed[i, int(split_bucket(text) >= cfg.profile_buckets)] += 1
    users = sorted({(c, u) for c, u, _ in reviews})
    index = {u: i for i, u in enumerate(users)}
    rows = np.array([index[(c, u)] for c, u, _ in reviews])
    out = {"sentences": {"parser": int(parsed.sum()), "count": int(cheap.sum())}}
    for name, preset in PRESETS.items():
        ucfg = preset.user_config()
        by = {k: qualified_mask(np.bincount(rows, c[:, 0], len(users)), np.bincount(rows, c[:, 1], len(users)), ucfg)
              for k, c in (("parser", parsed), ("count", cheap))}  # fmt: skip
        out[name] = {"parser": int(by["parser"].sum()), "count": int(by["count"].sum()),
                     "dropped": int((by["parser"] & ~by["count"]).sum()),
                     "added": int((by["count"] & ~by["parser"]).sum())}  # fmt: skip
    return out


def kept_sentences(texts: Sequence[str], min_tokens: int) -> int:
    """The users stage's cheap pass without the hashing: split, then the tokenizer for pieces in doubt."""
    from pqb.builders.source.users import has_tokens
    from pqb.builders.text import split_at_sentence_ends

    return sum(has_tokens(s, min_tokens) for t in texts for s in split_at_sentence_ends(t))


def best_cpu(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gold", type=Path, default=GOLD)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from pqb.builders.config import UserConfig

    gold = load_gold(args.gold)
    texts = [g["text"] for g in gold]
    reviews = slice_reviews()
    corpus = [t for _, _, t in reviews]
    res: dict[str, Any] = {"gold_reviews": len(gold), "gold_boundaries": sum(len(g["boundaries"]) for g in gold),
                           "speed_reviews": len(corpus), "splitters": {}}  # fmt: skip
    found = splitters()
    for name, (split, load_s, _) in found.items():
        row = scores(split(texts), [g["boundaries"] for g in gold])
        row["load_cpu_s"] = round(load_s, 3)
        row["cpu_s"] = round(best_cpu(lambda split=split: split(corpus), args.repeat), 4)
        res["splitters"][name] = row
    min_tok = UserConfig.min_sentence_tokens
    res["regex_plus_tokens_cpu_s"] = round(best_cpu(lambda: kept_sentences(corpus, min_tok), args.repeat), 4)
    best_f1 = max(r["f1"] for r in res["splitters"].values())
    by_cost = sorted(res["splitters"].items(), key=lambda kv: kv[1]["cpu_s"])
    res["chosen"] = next(n for n, r in by_cost if r["f1"] >= best_f1 - 0.02)
    res["qualification"] = qualification(reviews, found["parser"][2])
    res["machine"] = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    res["load_average"] = os.getloadavg()[0]
    print(table(res))
    if args.out:
        args.out.write_text(json.dumps(res, indent=2), encoding="utf-8")
    return 0


def table(res: dict[str, Any]) -> str:
    n, q = res["speed_reviews"], res["qualification"]
    regex_s = res["splitters"]["regex"]["cpu_s"]
    lines = [
        f"Gold: {res['gold_reviews']} hand-labelled reviews, {res['gold_boundaries']} boundaries. "
        f"Speed: {n:,} slice reviews, CPU s, best of repeats (load average {res['load_average']:.1f}).",
        "",
        "| splitter | precision | recall | F1 | reviews exact | CPU s for the slice | ms per 1K reviews | × regex | model load CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["splitters"].items():
        lines.append(
            f"| {name} | {r['precision']:.1%} | {r['recall']:.1%} | {r['f1']:.1%} | {r['exact']:.1%} | "
            f"{r['cpu_s']:.3f} | {1000 * r['cpu_s'] / n * 1000:.1f} | {r['cpu_s'] / regex_s:.0f} | {r['load_cpu_s']:.2f} |"
        )
    t = res["regex_plus_tokens_cpu_s"]
    lines += [
        f"| regex + tokens (the users stage's cheap pass) | | | | | {t:.3f} | {1000 * t / n * 1000:.1f} | {t / regex_s:.0f} | |",
        "",
        f"Chosen (cheapest within 2 F1 points of the best): **{res['chosen']}**",
        "",
        f"Qualification over the whole slice, the parser's in-context sentences against the users stage's count "
        f"({q['sentences']['parser']:,} and {q['sentences']['count']:,} sentences):",
        "",
        "| thresholds | users the parser qualifies | users the count qualifies | qualified by the parser only (dropped) | by the count only (added) |",
        "|---|---|---|---|---|",
        *(
            f"| {name} | {r['parser']} | {r['count']} | {r['dropped']} | {r['added']} |"
            for name, r in q.items()
            if name != "sentences"
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
