#!/usr/bin/env bash
# The GPU run, in one go, on a machine with a CUDA GPU and no network (repository root; .gpu/ built by
# bench/gpu_carry.py beside it): the default model put in place, facts about the device (bench/gpu_facts.py),
# tests/contextual/test_cuda.py, the host side alone, then bench/contextual_gpu.py in its quick mode (every peer, bertlens in
# float32 and bfloat16, the GEMM limit, the GPU's utilisation, a torch.profiler summary). Logs and JSON go to $OUT.
#
#   bash bench/gpu_run.sh          # the full quick bench: about 5 minutes on an H100
#   bash bench/gpu_run.sh smoke    # every step, shortened: about 2 minutes
set -uo pipefail
MODE=${1:-full}
OUT=${OUT:-$(mktemp -d -t bertlens-gpu.XXXXXX)}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
PY=${PYTHON:-python3}
LOG="$OUT/bench.log"
if [ "$MODE" = smoke ]; then
    T_FACTS=30 T_TESTS=55 T_HOST=12 T_BENCH=40 FACTS="--sentences 1500"
    ARGS="--sentences 400 --repeats 1 --batch-tokens 2048 16384"
else
    T_FACTS=40 T_TESTS=90 T_HOST=20 T_BENCH=200 FACTS="--sentences 4000"
    ARGS="--repeats 2 --batch-tokens 2048 16384 65536"
fi
say() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }

say "model"
SITE=$(mktemp -d -t bertlens-site.XXXXXX)
$PY bench/gpu_carry.py --unpack "$SITE" 2>&1 | tee -a "$LOG" || exit 1
export PYTHONPATH=$SITE:$PWD
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee -a "$LOG"

say "facts"
timeout "$T_FACTS" $PY bench/gpu_facts.py --data .gpu/wiki.valid.raw $FACTS 2>&1 | tee -a "$LOG"

say "tests/contextual/test_cuda.py"
timeout "$T_TESTS" $PY -m pytest -q -p no:cacheprovider tests/contextual/test_cuda.py 2>&1 | tee "$OUT/test_cuda.log" \
    | tail -25 | tee -a "$LOG"

say "host only"
timeout "$T_HOST" $PY bench/contextual_gpu.py --host-only --data .gpu/wiki.valid.raw --repeats 3 \
    --json "$OUT/host_only.json" 2>&1 | tee -a "$LOG"

say "bench ($MODE)"
timeout "$T_BENCH" $PY bench/contextual_gpu.py --quick --data .gpu/wiki.valid.raw $ARGS --json "$OUT/gpu.json" \
    --profile-dir "$OUT" 2>&1 | tee -a "$LOG"
say "done"
