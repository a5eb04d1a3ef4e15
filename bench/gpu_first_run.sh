#!/usr/bin/env bash
# bench/gpu_first_run.sh: the engine's first GPU run on ONE H100/H200, under 8 minutes, from the repo root.
# Needs only python3 with torch + triton (+ numpy); no pip install, no network, no weights, no pytest.
# It succeeds, or every failed step names its cause in $OUT/<step>.log and $OUT/summary.txt; exit status 1
# when any step failed (0 when all passed).
#   GPU:          bash bench/gpu_first_run.sh                 (logs in $OUT, default ./gpu_out)
#   CPU dry run:  SMALL=1 TRITON_INTERPRET=1 bash bench/gpu_first_run.sh   (toy sizes, interpreter)
# Steps (each with its own timeout inside one 470 s budget, so a hang in one cannot eat the rest):
#   env          device, memory, versions
#   engine       bench/gpu_engine_check.py: the tiny NVFP4 hybrid served by LLMEngine with Triton + CUDA graphs
#                vs the torch reference kernels (fallbacks, capture, finite logits, tokens)
#   gpu_check    bench/gpu_check.py: every kernel vs its reference at Puzzle dims; Puzzle-75B-A9B 8 x 1M fp8 KV
#                sized by the engine's budget on 79.1 GiB (an H100's, capped on a larger card), graph vs eager,
#                step vs bandwidth ideal, 64K chunked prefill
#   super        bench/gpu_check.py: Nemotron-3-Super dims, 1 x 1M (when time is left)
set -u
OUT=${OUT:-./gpu_out}
mkdir -p "$OUT"
: >"$OUT/summary.txt"
PY=${PY:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
[ "${SMALL:-0}" = 1 ] || unset TRITON_INTERPRET  # compiled kernels on the GPU
START=$(date +%s)
BUDGET=${BUDGET:-470}
FAILED=0
left() { echo $((BUDGET - ($(date +%s) - START))); }
step() { # step NAME SECONDS CMD...: runs with min(SECONDS, budget left), its log in $OUT/NAME.log
  local name=$1 want=$2
  shift 2
  local t
  t=$(left)
  [ "$t" -gt "$want" ] && t=$want
  if [ "$t" -lt 20 ]; then
    echo "$name: SKIPPED (budget spent)" | tee -a "$OUT/summary.txt"
    return
  fi
  echo "=== $name (timeout ${t}s, t+$(($(date +%s) - START))s) ==="
  timeout -k 5 "$t" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$OUT/$name.log"
  local why=""
  [ $rc = 124 ] && why=" (TIMEOUT after ${t}s)"
  [ $rc != 0 ] && FAILED=1 && why="$why: $(grep -E 'FAIL|Error|error' "$OUT/$name.log" | tail -n 3 | tr '\n' ' ')"
  echo "$name: rc=$rc at t+$(($(date +%s) - START))s$why" | tee -a "$OUT/summary.txt"
}

step env 30 "$PY" - <<'EOF'
import sys
import torch
try:
    import triton
    tv = triton.__version__
except ImportError:
    tv = "MISSING"
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", tv)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info()
    print(p.name, f"cc {p.major}.{p.minor}", "SMs", p.multi_processor_count,
          f"total {total / 2**30:.2f} GiB free {free / 2**30:.2f} GiB")
else:
    print("NO CUDA DEVICE")
EOF

if [ "${SMALL:-0}" = 1 ]; then
  step engine 200 "$PY" bench/gpu_engine_check.py --tiny
  step gpu_check 300 "$PY" bench/gpu_check.py --tiny
else
  step engine 90 "$PY" bench/gpu_engine_check.py
  step gpu_check 300 "$PY" bench/gpu_check.py --skip super --cap-gib 79.1 --prefill 65536 --steps 5
  step super 120 "$PY" bench/gpu_check.py --skip kernels,puzzle --steps 3
fi
echo "total $(($(date +%s) - START))s"
cat "$OUT/summary.txt"
exit $FAILED
