"""Precision and recall of the slip detector on two labelled sets: dev and held-out.

Both sets (issue 12, LLM-agent labelling; their headers say how) hold every token of one defined
universe over categories of the ``amazon2023-mini`` slice: every flag of the issue-4 detector, every
lower-case out-of-dictionary token, every sentence-initial capitalised one, mid-sentence capitalised
ones near a common word, and the tokens of fully read sentences. Each is labelled slip / not slip with
a kind (``char`` = single-word misspelling, the injectable kind; ``merge``, ``apostrophe``,
``realword``).

* ``tests/data/detector_labels.jsonl`` (dev): 8 categories, every user. The detector's rules were
  chosen while looking at it, so its figures are optimistic.
* ``tests/data/detector_labels_heldout.jsonl`` (held-out): 15 other categories, only users absent from
  the dev set (its header's ``users_disjoint_from``), labelled before the detector was changed and never
  used to choose a rule. Its figures are the headline.

:func:`evaluate` rebuilds each category's sentences and domain lexicon from the review files (the same
cleaning, spaCy sentence split and lexicon as the ``errors`` stage), runs the detector over every
sentence, and matches flags to labels by (category, ±30-character fragment, offset). Precision counts
any labelled slip as correct; recall is over ``char`` slips (the profile's evidence) and over all slips.
Flags outside the labelled universe are counted, never silently dropped. The result is written to
``builders/writing_errors/detector_quality.json``, which the dataset card quotes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pqb.dataset.io import atomic_write_json

LABELS = Path(__file__).resolve().parents[2] / "tests" / "data" / "detector_labels.jsonl"
HELDOUT = LABELS.with_name("detector_labels_heldout.jsonl")
QUALITY_FILE = Path(__file__).resolve().parents[1] / "writing_errors" / "detector_quality.json"
WINDOW = 30


def load_labels(path: Path = LABELS) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header object and the label rows."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]


def user_key(user_id: str) -> str:
    """The labels' user field: the first 8 hex digits of sha1(user_id) (no raw ids in the repository)."""
    return hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:8]


def fragment_key(category: str, sentence: str, start: int, token: str) -> tuple[str, str, int]:
    lo = max(0, start - WINDOW)
    return category, sentence[lo : min(len(sentence), start + len(token) + WINDOW)], start - lo


def score(
    labels: Iterable[dict[str, Any]], flagged: set[tuple[str, str, int]], unlabelled: int
) -> dict[str, Any]:
    """Precision / recall of ``flagged`` label keys (see the module docstring)."""
    labels = list(labels)
    index = {(r["category"], r["fragment"], r["offset"]): r for r in labels}
    hits = [index[k] for k in flagged if k in index]
    tp = sum(r["is_slip"] for r in hits)
    char = [r for r in labels if r["is_slip"] and r["kind"] == "char"]
    slips = [r for r in labels if r["is_slip"]]

    def found(rs: list[dict[str, Any]]) -> int:
        return sum((r["category"], r["fragment"], r["offset"]) in flagged for r in rs)

    return {
        "labelled_tokens": len(labels),
        "labelled_slips": len(slips),
        "labelled_char_slips": len(char),
        "flags_labelled": len(hits),
        "flags_unlabelled": unlabelled,
        "true_positives": tp,
        "precision": tp / len(hits) if hits else 0.0,
        "recall_char": found(char) / len(char) if char else 0.0,
        "recall_all": found(slips) / len(slips) if slips else 0.0,
        "by_category": {
            c: {
                "flags": sum(r["category"] == c for r in hits),
                "tp": sum(r["category"] == c and r["is_slip"] for r in hits),
            }
            for c in sorted({r["category"] for r in labels})
        },
    }


def evaluate(
    amazon_dir: Path,
    make_detector: Callable[[list[tuple[str, str]], Any], Any] | None = None,
    labels_path: Path = LABELS,
) -> dict[str, Any]:
    """Run the ``errors`` stage's detector over every labelled category of ``amazon_dir`` and score it."""
    import pyarrow as pa

    from pqb.builders.nlp import load_spacy
    from pqb.builders.source.users import clean_review_text
    from pqb.builders.writing_errors.detection import SymSpellCorrector, fix_missing_apostrophes
    from pqb.builders.writing_errors.profiles import domain_lexicon

    header, labels = load_labels(labels_path)
    disjoint = header.get("users_disjoint_from")
    excluded = {r["user"] for r in load_labels(labels_path.with_name(disjoint))[1]} if disjoint else set()
    nlp = load_spacy()
    flagged: set[tuple[str, str, int]] = set()
    unlabelled = 0
    index = {(r["category"], r["fragment"], r["offset"]) for r in labels}
    for cat in sorted({r["category"] for r in labels}):
        reviews = [
            json.loads(x)
            for x in (amazon_dir / f"{cat}.jsonl").read_text(encoding="utf-8").split("\n")
            if x.strip()
        ]
        meta = [
            json.loads(x)
            for x in (amazon_dir / f"meta_{cat}.jsonl").read_text(encoding="utf-8").split("\n")
            if x.strip()
        ]
        texts = [clean_review_text(r.get("text") or "") for r in reviews]
        docs = nlp.pipe(texts, batch_size=128)
        sents = [
            (r["user_id"], s.text) for r, d in zip(reviews, docs, strict=True) for s in d.sents if len(s) >= 3
        ]
        prods = pa.table(
            {
                "title": [m.get("title") or "" for m in meta],
                "brand": [m.get("store") or (m.get("details") or {}).get("Brand") or "" for m in meta],
                "text": [
                    " ".join([*(m.get("features") or []), *(m.get("description") or []),
                              *(str(v) for v in (m.get("details") or {}).values())])
                    for m in meta
                ],
            }
        )  # fmt: skip
        if make_detector is None:
            lex = domain_lexicon(
                pa.table({"user_id": [u for u, _ in sents], "text": [t for _, t in sents]}), prods
            )
            det = SymSpellCorrector(extra_words=lex.words, names=lex.names, habitual=lex.habitual, nlp=nlp)
        else:
            det = make_detector(sents, prods)
        for uid, s in sents:
            if excluded and user_key(uid) in excluded:
                continue  # another set's user: outside this set's universe
            text = fix_missing_apostrophes(s)
            doc = nlp.make_doc(text)
            for i, _fix in det.flags(doc):
                k = fragment_key(cat, text, doc[i].idx, doc[i].text)
                if k in index:
                    flagged.add(k)
                else:
                    unlabelled += 1
    out = score(labels, flagged, unlabelled)
    out["labels"] = str(labels_path.name)
    out["labelling"] = header.get("_header", "")[:120]
    return out


def main(amazon_dir: str, write: bool = True) -> dict[str, Any]:
    """Score both sets; the held-out figure is the headline the card quotes."""
    result = {"headline": "heldout", "heldout": evaluate(Path(amazon_dir), labels_path=HELDOUT)}
    result["dev"] = evaluate(Path(amazon_dir), labels_path=LABELS)
    if write:
        atomic_write_json(QUALITY_FILE, result)
    return result


def quality() -> dict[str, Any] | None:
    """The committed measurement quoted by the card (``None`` when it was never measured)."""
    return json.loads(QUALITY_FILE.read_text()) if QUALITY_FILE.is_file() else None


def summary_counts(labels: Iterable[dict[str, Any]]) -> Counter[str]:
    return Counter(f"{r['source']}:{r['is_slip']}" for r in labels)
