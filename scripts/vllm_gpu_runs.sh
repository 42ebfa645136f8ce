#!/usr/bin/env bash
# The vllm backend's GPU figures of bench/RESULTS.md ("vLLM 0.25.0 on an H100"), on tiny random Qwen2.5-VL weights:
# throughput against a bare LLM.generate loop (one call per task and every task in one call) and the screen's count
# against vLLM's prompt length, sample by sample, on MMNeedle, MMLongBench 8K (the offline fixture) and MMLongBench
# 128K (release-shaped rows written by bench/build_mmlongbench.py).
#
#   scripts/vllm_gpu_runs.sh prepare WORKDIR   # no vLLM needed: checkpoints, the 128K source, every build
#   scripts/vllm_gpu_runs.sh run WORKDIR       # vLLM and a GPU: scripts/gpu_check.sh with the vllm backend on each
#
# The 128K check runs at max_model_len=262144, so vLLM takes and reports every row, MM-NIAH-Ret (T) included, whose
# prompts pass 139,264 tokens; `harness --screen_only` then shows the screen at 139,264 setting those rows aside by
# the same count. Each step's log and status line go to WORKDIR (status: one line per step with its exit code).
# Without installed `harness`/`builders` commands the checkout must be on PYTHONPATH; PYTHON names the interpreter.

set -uo pipefail

STEP="${1:?prepare or run}"
W="${2:?work folder}"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MMLB8K="niah_vh_single_8k niah_mmniah_ret_image_8k icl_food101_8k docvqa_slidevqa_8k"
MMLB128K="niah_vh_single_128k niah_vh_multi_128k niah_mmniah_ret_text_128k"
LONG_CONTEXT=262144
export GPU_CHECK_BACKENDS=vllm GPU_CHECK_MIN_AGREEMENT=0 GPU_CHECK_REUSE_DATA=1

builders() { "$PYTHON" -c 'import sys; from builders.cli import main; sys.exit(main())' "$@"; }
harness() { "$PYTHON" -c 'import sys; from harness.cli import main; sys.exit(main())' "$@"; }
step() {  # name, command...: its output to W/name.log, its exit code to W/status
  local name="$1"; shift
  local start=$SECONDS
  "$@" > "$W/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - start))s" | tee -a "$W/status"
}

mkdir -p "$W/needle" "$W/mmlb8k" "$W/mmlb128k"
case "$STEP" in
  prepare)
    step tiny_needle "$PYTHON" "$HERE/make_tiny_qwen.py" "$W/needle/tiny-qwen" --context 32768
    step tiny_mmlb8k "$PYTHON" "$HERE/make_tiny_qwen.py" "$W/mmlb8k/tiny-qwen" --context 139264
    step tiny_mmlb128k "$PYTHON" "$HERE/make_tiny_qwen.py" "$W/mmlb128k/tiny-qwen" --context "$LONG_CONTEXT"
    step build_needle builders build mmneedle --source synthetic --configs m1_n2_k1 m10_n1_k1 --limit 25 \
      --out "$W/needle/data" --quiet
    # shellcheck disable=SC2086  # the config lists are space-separated on purpose
    step build_mmlb8k builders build mmlongbench --source fixture --configs $MMLB8K --out "$W/mmlb8k/data" --quiet
    step release "$PYTHON" -c "import sys; sys.path[:0] = ['$HERE/../bench']; from pathlib import Path; \
from build_mmlongbench import write_release; r = Path('$W/release'); write_release(r, r / 'mmlb_image', 1)"
    # shellcheck disable=SC2086
    step build_mmlb128k builders build mmlongbench --source "$W/release" --configs $MMLB128K --out "$W/mmlb128k/data" \
      --quiet
    ;;
  run)
    step needle bash "$HERE/gpu_check.sh" tiny-qwen "$W/needle"
    step mmlb128k env GPU_CHECK_BENCHMARK=mmlongbench GPU_CHECK_SOURCE="$W/release" GPU_CHECK_CONFIGS="$MMLB128K" \
      GPU_CHECK_CONTEXT="$LONG_CONTEXT" bash "$HERE/gpu_check.sh" tiny-qwen "$W/mmlb128k"
    tasks=""
    for config in $MMLB128K; do tasks="${tasks:+$tasks,}mmlongbench_$config"; done
    step screen128k harness --tasks "$tasks" --model vllm --screen_only --data_dir "$W/mmlb128k/data" \
      --model_args "pretrained=$W/mmlb128k/tiny-qwen,max_model_len=139264"
    step mmlb8k env GPU_CHECK_BENCHMARK=mmlongbench GPU_CHECK_CONFIGS="$MMLB8K" bash "$HERE/gpu_check.sh" tiny-qwen \
      "$W/mmlb8k"
    ;;
  *) echo "vllm_gpu_runs: the first argument is prepare or run, not '$STEP'" >&2; exit 2 ;;
esac
