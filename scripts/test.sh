#!/usr/bin/env bash
# Set up (./.venv, every offline extra) and run the test suite: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check .
pytest -q -m "not gpu and not network" "$@"
