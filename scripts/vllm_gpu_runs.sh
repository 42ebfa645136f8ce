#!/usr/bin/env bash
# The vllm backend's GPU figures of bench/RESULTS.md ("vLLM 0.25.0 on an H100", its issue 21 follow-up and the
# prefix cache "measured on a GPU"), on tiny random Qwen2.5-VL weights: throughput against a bare LLM.generate loop
# and the screen's count against vLLM's prompt length, sample by sample, on MMNeedle, MMLongBench 8K (the offline
# fixture) and MMLongBench 128K (release-shaped rows written by bench/build_mmlongbench.py); and the cache order
# (issue 23) against long-first on the length-true fixture's NIAH leaves at 8K-128K, all lengths in one run.
#
#   scripts/vllm_gpu_runs.sh prepare WORKDIR [STEP...]  # no vLLM needed: checkpoints, the 128K source, every build
#   scripts/vllm_gpu_runs.sh run WORKDIR [STEP...]      # vLLM and a GPU: each run below
#
# Without STEPs, every step runs, in this order:
#   prepare: tiny_needle tiny_mmlb8k tiny_mmlb128k build_needle build_mmlb8k release build_mmlb128k tiny_prefix
#            build_prefix
#   run:     needle mmlb128k screen128k mmlb8k mmlb8k_caches prefix_cache prefix_length prefix_bare prefix_report
#
# needle, mmlb8k, mmlb128k: scripts/gpu_check.sh with the vllm backend, then the bare loop (MMLongBench 8K: its passes
# one call, per task, one call again, so the first pass starts on a fresh engine as our run does). The 128K check runs
# at max_model_len=262144, so vLLM takes and reports every row, MM-NIAH-Ret (T) included, whose prompts pass 139,264
# tokens; screen128k (`harness --screen_only`) then shows the screen at 139,264 setting those rows aside by the same
# count.
# mmlb8k_caches (issue 21's 8K gap, bench/RESULTS.md): the 8K check twice on one set of compile caches that starts
# empty (VLLM_CACHE_ROOT, where vLLM also keeps the Triton kernels it compiles while generating; Triton's, Inductor's
# and CUDA's own), each time ours, then the bare loop's `backend_order` pass (what our run sends, on a fresh engine)
# and `one_call`: first ours on cold caches beside a bare loop on the caches ours has just filled (the third machine's
# footing), then both on warm caches. Reports in W/mmlb8k/cold and W/mmlb8k/warm (vllm.log, bare.md, bare.json).
# prefix_*: the 40 NIAH configs (`--source fixture:full --fixture-ids 1`, bench/prefix_cache.py's set, 180 rows) in
# one harness run each with request_order=cache (the default) and request_order=length, then the bare loop in dataset
# order (one pass, the backend's chunks); every engine at max_model_len=$PREFIX_CONTEXT (the tiny tokenizer counts
# MM-NIAH text rows near twice our figures) with a KV cache of $PREFIX_BLOCKS blocks of 16 tokens
# (num_gpu_blocks_override: bench/prefix_cache.py's H100 cache for a 7B model, 879,255 tokens; set
# PREFIX_BLOCKS=auto for vLLM's own sizing). prefix_report: scripts/prefix_cache_measured.py over the three.
# Each step's log and status line go to WORKDIR (status: one line per step with its exit code and seconds).
# Without installed `harness`/`builders` commands the checkout must be on PYTHONPATH; PYTHON names the interpreter.

set -uo pipefail

STEP="${1:?prepare or run}"
W="${2:?work folder}"
shift 2
STEPS=" $* "
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MMLB8K="niah_vh_single_8k niah_mmniah_ret_image_8k icl_food101_8k docvqa_slidevqa_8k"
MMLB128K="niah_vh_single_128k niah_vh_multi_128k niah_mmniah_ret_text_128k"
LONG_CONTEXT=262144
PREFIX_CONTEXT="${PREFIX_CONTEXT:-327680}"
PREFIX_BLOCKS="${PREFIX_BLOCKS:-54953}"
PREFIX_ARGS="pretrained=$W/prefix/tiny-qwen,max_model_len=$PREFIX_CONTEXT,gpu_memory_utilization=0.85"
[ "$PREFIX_BLOCKS" = auto ] || PREFIX_ARGS="$PREFIX_ARGS,num_gpu_blocks_override=$PREFIX_BLOCKS"
export GPU_CHECK_BACKENDS=vllm GPU_CHECK_MIN_AGREEMENT=0 GPU_CHECK_REUSE_DATA=1

builders() { "$PYTHON" -c 'import sys; from builders.cli import main; sys.exit(main())' "$@"; }
harness() { "$PYTHON" -c 'import sys; from harness.run.cli import main; sys.exit(main())' "$@"; }
wanted() { [ "$STEPS" = "  " ] || [[ "$STEPS" == *" $1 "* ]]; }
step() {  # name, command...: its output to W/name.log, its exit code to W/status (only the steps asked for)
  local name="$1"; shift
  wanted "$name" || return 0
  local start=$SECONDS
  "$@" > "$W/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - start))s" | tee -a "$W/status"
}

niah_configs() {  # bench/prefix_cache.py's set: every NIAH leaf at 8K-128K
  "$PYTHON" -c 'from builders.mmlongbench.leaves import LEAVES, LENGTHS
print(" ".join(f"{leaf.name}_{n}" for n in LENGTHS for leaf in LEAVES if leaf.category == "niah"))'
}
set_up() {  # the engine start and the count's load a run's log reports (what gpu_check.sh subtracts)
  awk '/vllm engine ready in/ { for (i = 1; i <= NF; i++) if ($i == "in") e = $(i + 1) }
       /vllm prompt count ready in/ { for (i = 1; i <= NF; i++) if ($i == "in") c = $(i + 1) }
       END { printf "%.1f", e + c }' "$1"
}

caches_cold_then_warm() {  # the 8K check on empty, then on filled, compile caches under W/caches8k (mmlb8k_caches)
  local run caches="$W/caches8k"
  rm -rf "$caches"
  for run in cold warm; do
    VLLM_CACHE_ROOT="$caches/vllm" TRITON_CACHE_DIR="$caches/triton" TORCHINDUCTOR_CACHE_DIR="$caches/inductor" \
      CUDA_CACHE_PATH="$caches/cuda" GPU_CHECK_BENCHMARK=mmlongbench GPU_CHECK_CONFIGS="$MMLB8K" \
      GPU_CHECK_BARE_PASSES=backend_order,one_call bash "$HERE/gpu_check.sh" tiny-qwen "$W/mmlb8k" || return
    rm -rf "${W:?}/mmlb8k/$run" && mkdir -p "$W/mmlb8k/$run"
    mv "$W/mmlb8k/vllm" "$W/mmlb8k/vllm.log" "$W/mmlb8k/bare.json" "$W/mmlb8k/bare.md" "$W/mmlb8k/$run/"
  done
}

mkdir -p "$W/needle" "$W/mmlb8k" "$W/mmlb128k" "$W/prefix"
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
    step tiny_prefix "$PYTHON" "$HERE/make_tiny_qwen.py" "$W/prefix/tiny-qwen" --context "$PREFIX_CONTEXT"
    # shellcheck disable=SC2046  # the config list is space-separated on purpose
    step build_prefix builders build mmlongbench --source fixture:full --fixture-ids 1 --configs $(niah_configs) \
      --out "$W/prefix/data" --overwrite --quiet
    ;;
  run)
    step needle bash "$HERE/gpu_check.sh" tiny-qwen "$W/needle"
    step mmlb128k env GPU_CHECK_BENCHMARK=mmlongbench GPU_CHECK_SOURCE="$W/release" GPU_CHECK_CONFIGS="$MMLB128K" \
      GPU_CHECK_CONTEXT="$LONG_CONTEXT" bash "$HERE/gpu_check.sh" tiny-qwen "$W/mmlb128k"
    tasks=""
    for config in $MMLB128K; do tasks="${tasks:+$tasks,}mmlongbench_$config"; done
    step screen128k harness --tasks "$tasks" --model vllm --screen_only --data_dir "$W/mmlb128k/data" \
      --model_args "pretrained=$W/mmlb128k/tiny-qwen,max_model_len=139264"
    step mmlb8k env GPU_CHECK_BENCHMARK=mmlongbench GPU_CHECK_CONFIGS="$MMLB8K" GPU_CHECK_BARE_PASSES=one_call,per_task,one_call \
      bash "$HERE/gpu_check.sh" tiny-qwen "$W/mmlb8k"
    step mmlb8k_caches caches_cold_then_warm
    tasks=""
    for config in $(niah_configs); do tasks="${tasks:+$tasks,}mmlongbench_$config"; done
    for order in cache length; do
      step "prefix_$order" harness --tasks "$tasks" --model vllm --model_args "$PREFIX_ARGS,request_order=$order" \
        --no_cache --data_dir "$W/prefix/data" --output_path "$W/prefix/$order"
    done
    step prefix_bare "$PYTHON" "$HERE/vllm_bare_loop.py" --tasks "$tasks" --model_args "$PREFIX_ARGS" \
      --data_dir "$W/prefix/data" --passes one_call --ours "$W/prefix/cache" \
      --ours_exclude "$(set_up "$W/prefix_cache.log" 2>/dev/null || echo 0)" --json "$W/prefix/bare.json" \
      --out "$W/prefix/bare.md"
    bare=()
    [ -f "$W/prefix/bare.json" ] && bare=(--bare "$W/prefix/bare.json")
    step prefix_report "$PYTHON" "$HERE/prefix_cache_measured.py" cache="$W/prefix/cache" length="$W/prefix/length" \
      "${bare[@]}" --out "$W/prefix/report.md" --json "$W/prefix/report.json"
    ;;
  *) echo "vllm_gpu_runs: the first argument is prepare or run, not '$STEP'" >&2; exit 2 ;;
esac
