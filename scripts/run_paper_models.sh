#!/usr/bin/env bash
# Reproduce the paper's seven-system table on a GPU machine with the Hugging Face Hub reachable:
#
#   bash scripts/run_paper_models.sh                 # all seven systems, --tasks pqb, then the leaderboard
#   MODELS="bm25 gte-base" bash scripts/run_paper_models.sh      # a subset
#   DATASET=/path/to/pqb TASKS=pqb_error bash scripts/run_paper_models.sh
#
# Systems (checkpoints by Hub id, settings in harness/model_presets.py and reference spec §2):
#   bm25               bm25s lucene, k1=1.5, b=0.75, English stopwords (CPU)
#   splade             naver/splade-cocondenser-ensembledistil, 128-token docs/queries
#   gte-base           thenlper/gte-base, normalised, no prefixes
#   bge-m3             BAAI/bge-m3 dense+sparse+multi-vector, per-query z-scored 1.0/0.3/1.0 (no 16-token cut)
#   colbertv2          colbert-ir/colbertv2.0 with [Q]/[D] markers, [MASK] augmentation, punctuation skiplist
#   llama-3.1-8b       meta-llama/Llama-3.1-8B-Instruct yes/no judge over BM25 top-25 of 100 (gated: set HF_TOKEN)
#   qwen3-reranker-8b  Qwen/Qwen3-Reranker-8B official judge prompt over BM25 top-25 of 100
#
# Every result file records the exact weights (Hub id + resolved commit). Embeddings and runs are
# cached under $PQB_CACHE_DIR, so a rerun after an interruption re-encodes nothing already done
# (--overwrite only-missing also skips finished tasks). Several GPUs: dense encoders spread over all of
# them for corpora >= 10k docs (MULTI_GPU=auto); the 8B rerankers shard with MULTI_GPU=true.
# Needs: pip install -e ".[neural,llm]" (torch with CUDA). Expect hours for all three domains.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .venv/bin/activate ] && . .venv/bin/activate

MODELS="${MODELS:-bm25 splade gte-base bge-m3 colbertv2 llama-3.1-8b qwen3-reranker-8b}"
TASKS="${TASKS:-pqb}"
DEVICE="${DEVICE:-cuda}"
BATCH_SIZE="${BATCH_SIZE:-auto}"
MULTI_GPU="${MULTI_GPU:-auto}"
OUT="${OUT:-results/paper}"
LEADERBOARD="${LEADERBOARD:-leaderboard/paper}"
DATASET_ARGS=()
[ -n "${DATASET:-}" ] && DATASET_ARGS=(--dataset_path "$DATASET")

if [ "$DEVICE" = cuda ]; then
  python - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("run_paper_models.sh: DEVICE=cuda but torch sees no GPU; install a CUDA torch or set DEVICE=cpu.")
print(f"GPUs: {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}")
PY
fi

for model in $MODELS; do
  echo "=== $model ==="
  model_args=""
  case "$model" in
    bm25) device_args=() ;;  # lexical, CPU
    *) device_args=(--device "$DEVICE" --batch_size "$BATCH_SIZE"); model_args="multi_gpu=$MULTI_GPU" ;;
  esac
  pqb-harness run --model "$model" ${model_args:+--model_args "$model_args"} --tasks "$TASKS" \
    "${device_args[@]}" "${DATASET_ARGS[@]}" --output_path "$OUT" --overwrite only-missing
done

pqb-harness leaderboard "$OUT" --out "$LEADERBOARD"
echo "Leaderboard: $LEADERBOARD (tables, plots, index.html, paper_comparison.md)"
