"""Named presets: a short model name that means a registered retriever plus default ``model_args``.

``pqb-harness run --model gte-base`` is ``--model dense --model_args pretrained=thenlper/gte-base,...``;
explicit ``--model_args`` override preset values. Each entry: ``{"model": <registered name>,
"args": {...}, "description": "..."}``. Presets name the paper's checkpoints by Hub id; a local path
can always be given with ``pretrained=/path``.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {}
