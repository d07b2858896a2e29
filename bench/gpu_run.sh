#!/usr/bin/env bash
# The GPU run, in one go, on a machine with a CUDA GPU and no network (repository root; .gpu/ built by
# bench/gpu_carry.py beside it): the default model put in place, facts about the device, tests/test_cuda.py, the host
# side alone, then bench/contextual_gpu.py in its quick mode (every peer, bertlens in float32 and bfloat16, the GEMM
# limit, the GPU's utilisation, a torch.profiler summary). Logs and JSON go to $OUT.
#
#   bash bench/gpu_run.sh          # the full quick bench: about 4 minutes on an H100
#   bash bench/gpu_run.sh smoke    # a short check of every step: about a minute
set -uo pipefail
MODE=${1:-full}
OUT=${OUT:-/tmp/bertlens-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
PY=${PYTHON:-python3}
LOG="$OUT/bench.log"
say() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }

say "model"
$PY bench/gpu_carry.py --unpack /tmp/site 2>&1 | tee -a "$LOG" || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee -a "$LOG"

say "facts"
$PY - <<'EOF' 2>&1 | tee -a "$LOG"
import time, torch
from bertlens import load_model
from bertlens.contextual.device_step import attention_kind
model = load_model()
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())
for dtype in ("float32", "bfloat16", "float16"):
    print("attention", dtype, attention_kind(model, "cuda", dtype))
x = torch.zeros(16, device="cuda")
for _ in range(100):
    x.add_(1)
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(2000):
    x.add_(1)
queued = time.perf_counter() - start
torch.cuda.synchronize()
print(f"launch: {queued / 2000 * 1e6:.1f} us a kernel queued, {(time.perf_counter() - start) / 2000 * 1e6:.1f} us done")
EOF

say "tests/test_cuda.py"
TESTS=tests/test_cuda.py
timeout 200 $PY -m pytest -q -p no:cacheprovider $TESTS 2>&1 | tee "$OUT/test_cuda.log" | tail -15 | tee -a "$LOG"

say "host only"
timeout 120 $PY bench/contextual_gpu.py --host-only --data .gpu/wiki.valid.raw --repeats 3 \
    --json "$OUT/host_only.json" 2>&1 | tee -a "$LOG"

say "bench ($MODE)"
if [ "$MODE" = smoke ]; then
    ARGS="--sentences 600 --repeats 1 --batch-tokens 2048 16384"
else
    ARGS="--repeats 2 --batch-tokens 2048 16384 65536"
fi
timeout 330 $PY bench/contextual_gpu.py --quick --data .gpu/wiki.valid.raw $ARGS --json "$OUT/gpu.json" \
    --profile-dir "$OUT" 2>&1 | tee -a "$LOG"
say "done"
