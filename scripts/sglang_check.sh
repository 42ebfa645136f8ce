#!/usr/bin/env bash
# The `sglang` backend beside `vllm` for someone with a GPU: the same checkpoint on the same rows through both
# engines; reports how often their answers agree, their metrics side by side, samples/s of each (each engine's
# start-up and prompt-count load left out), and each screen's prompt tokens against the prompt length each engine
# reported, sample by sample (scripts/compare_backends.py).
#
# vLLM 0.33 pins torch 2.14.0 and SGLang 0.5.23 torch 2.14.1, so each engine has its own environment:
#   python -m venv ~/venv-vllm   && ~/venv-vllm/bin/pip install -e '.[vllm]'
#   python -m venv ~/venv-sglang && ~/venv-sglang/bin/pip install -e '.[sglang]'
#   VLLM_PYTHON=~/venv-vllm/bin/python SGLANG_PYTHON=~/venv-sglang/bin/python scripts/sglang_check.sh [CHECKPOINT] [WORKDIR]
#   SGLANG_CHECK_BENCHMARK=mmlongbench ... scripts/sglang_check.sh   # one MMLongBench config, as the paper runs it
#
# CHECKPOINT defaults to Qwen/Qwen2.5-VL-3B-Instruct (downloaded by each engine on first use); `tiny-qwen` writes a
# tiny random Qwen2.5-VL (scripts/make_tiny_qwen.py) for a machine with no hub access: its answers are noise, but
# every code path of both backends runs. WORKDIR defaults to a new temporary folder. Knobs (environment):
#   SGLANG_CHECK_BENCHMARK  mmneedle (default) or mmlongbench
#   SGLANG_CHECK_CONFIGS    the benchmark's configs, space-separated (default: "m1_n2_k1 m10_n1_k1";
#                           mmlongbench: "niah_vh_single_8k")
#   SGLANG_CHECK_SOURCE     mmlongbench: the release folder (default: fixture, the offline stand-in)
#   SGLANG_CHECK_LIMIT      mmneedle: positives and negatives per config (default: 25)
#   SGLANG_CHECK_MAX_PIXELS the image processor's pixel cap, given to both (default: 1003520; mmlongbench: none)
#   SGLANG_CHECK_CONTEXT    the context length both screen against (default: 32768; mmlongbench: 139264)
#   SGLANG_CHECK_VLLM_ARGS / SGLANG_CHECK_SGLANG_ARGS   extra ,k=v model args for one backend
#   SGLANG_CHECK_MIN_AGREEMENT  fail (exit 1) below this answer agreement (default: 0.9)
#   SGLANG_CHECK_BACKENDS   which run (default: "vllm sglang"; one alone reuses the other's run already in WORKDIR)
#   VLLM_PYTHON / SGLANG_PYTHON  the interpreter of each engine's environment (default: python); the build and the
#                           comparison run with SGLANG_PYTHON
# Greedy decoding on both sides, the same rendered prompts (the checkpoint's chat template) and the same images;
# kernels and bf16 can still flip a few answers, hence an agreement threshold rather than identity. Both runs start
# from empty folders with --no_cache, so every sample is generated and samples/s measures the engines.

set -euo pipefail

CHECKPOINT="${1:-Qwen/Qwen2.5-VL-3B-Instruct}"
WORKDIR="${2:-$(mktemp -d -t mmlongeval-sglang-check.XXXXXX)}"
BENCHMARK="${SGLANG_CHECK_BENCHMARK:-mmneedle}"
case "$BENCHMARK" in
  mmneedle)
    CONFIGS="${SGLANG_CHECK_CONFIGS:-m1_n2_k1 m10_n1_k1}"
    MAX_PIXELS="${SGLANG_CHECK_MAX_PIXELS-1003520}"
    CONTEXT="${SGLANG_CHECK_CONTEXT:-32768}" ;;
  mmlongbench)
    CONFIGS="${SGLANG_CHECK_CONFIGS:-niah_vh_single_8k}"
    MAX_PIXELS="${SGLANG_CHECK_MAX_PIXELS-}"
    CONTEXT="${SGLANG_CHECK_CONTEXT:-139264}" ;;
  *) echo "sglang_check: SGLANG_CHECK_BENCHMARK must be mmneedle or mmlongbench, not '$BENCHMARK'" >&2; exit 2 ;;
esac
LIMIT="${SGLANG_CHECK_LIMIT:-25}"
PIXEL_ARG="${MAX_PIXELS:+,max_pixels=$MAX_PIXELS}"
BACKENDS="${SGLANG_CHECK_BACKENDS:-vllm sglang}"
VLLM_PYTHON="${VLLM_PYTHON:-python}"
SGLANG_PYTHON="${SGLANG_PYTHON:-python}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "sglang_check: $*" >&2; exit 2; }
runs() { case " $BACKENDS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# The harness and builders commands of one environment (an installed package or a checkout on PYTHONPATH).
# the command's module: builders.cli, harness.run.cli
cli() { local python="$1" module="$2.cli"; shift 2; [[ $module == harness.cli ]] && module=harness.run.cli
  "$python" -c "import sys; from $module import main; sys.exit(main())" "$@"; }

runs vllm || runs sglang || die "SGLANG_CHECK_BACKENDS must name vllm, sglang or both, not '$BACKENDS'"
command -v nvidia-smi >/dev/null || die "no nvidia-smi: this check needs an NVIDIA GPU"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >&2 || die "nvidia-smi sees no GPU"
for backend in vllm sglang; do
  if runs "$backend"; then
    python_var="${backend^^}_PYTHON"
    "${!python_var}" -c "import $backend, harness.run.cli" 2>/dev/null \
      || die "$backend or the harness is not importable by ${!python_var} (pip install -e '.[$backend]' there)"
  fi
done

mkdir -p "$WORKDIR"
if [ "$CHECKPOINT" = tiny-qwen ]; then
  CHECKPOINT="$WORKDIR/tiny-qwen"
  [ -f "$CHECKPOINT/config.json" ] || "$SGLANG_PYTHON" "$HERE/make_tiny_qwen.py" "$CHECKPOINT" --context "$CONTEXT" >&2
fi
echo "sglang_check: checkpoint $CHECKPOINT, work folder $WORKDIR" >&2

# 1. One build (no download needed): the same rows feed both engines.
TASKS=""
if [ ! -d "$WORKDIR/data" ]; then
  # shellcheck disable=SC2086  # CONFIGS is a space-separated list on purpose
  if [ "$BENCHMARK" = mmneedle ]; then
    cli "$SGLANG_PYTHON" builders build mmneedle --source synthetic --configs $CONFIGS --limit "$LIMIT" --out "$WORKDIR/data" --quiet
  else
    cli "$SGLANG_PYTHON" builders build mmlongbench --source "${SGLANG_CHECK_SOURCE:-fixture}" --configs $CONFIGS --out "$WORKDIR/data" --quiet
  fi
fi
for config in $CONFIGS; do
  if [ "$BENCHMARK" = mmneedle ]; then
    TASKS="${TASKS:+$TASKS,}mmneedle_${config}_pos,mmneedle_${config}_neg"
  else
    TASKS="${TASKS:+$TASKS,}mmlongbench_${config}"
  fi
done

# 2. Each engine on the rows; set-up (its engine's start and its prompt count's load, which each backend prints) is
#    subtracted from its evaluation time in the comparison.
setup() { sed -n "s/.*$1 \(engine\|prompt count\) ready in \([0-9.]*\) s.*/\2/p" "$2" | awk '{ s += $1 } END { printf "%.1f", s }'; }
declare -A SETUP
run() {
  local backend="$1" python="$2" args="$3"
  rm -rf "${WORKDIR:?}/$backend"
  cli "$python" harness --tasks "$TASKS" --model "$backend" --model_args "$args" --no_cache \
    --data_dir "$WORKDIR/data" --output_path "$WORKDIR/$backend" --log_samples 2>&1 | tee "$WORKDIR/$backend.log"
}
VLLM_ARGS="pretrained=$CHECKPOINT$PIXEL_ARG,max_model_len=$CONTEXT,gpu_memory_utilization=0.85${SGLANG_CHECK_VLLM_ARGS:+,$SGLANG_CHECK_VLLM_ARGS}"
SGLANG_ARGS="pretrained=$CHECKPOINT$PIXEL_ARG,context_length=$CONTEXT,mem_fraction_static=0.85${SGLANG_CHECK_SGLANG_ARGS:+,$SGLANG_CHECK_SGLANG_ARGS}"
if runs vllm; then run vllm "$VLLM_PYTHON" "$VLLM_ARGS"; fi
if runs sglang; then run sglang "$SGLANG_PYTHON" "$SGLANG_ARGS"; fi
for backend in vllm sglang; do
  [ -f "$WORKDIR/$backend.log" ] || die "no $backend run in $WORKDIR (SGLANG_CHECK_BACKENDS ran only one)"
  SETUP[$backend]=$(setup "$backend" "$WORKDIR/$backend.log")
  echo "sglang_check: $backend set-up ${SETUP[$backend]}s (engine start and prompt count)" >&2
done
grep -h "sglang image-embedding cache" "$WORKDIR/sglang.log" >&2 || true

# 3. Agreement, metrics, samples/s, and each screen's count against each engine's prompt length, sample by sample.
"$SGLANG_PYTHON" "$HERE/compare_backends.py" "$WORKDIR/vllm" "$WORKDIR/sglang" --labels vllm sglang \
  --exclude "${SETUP[vllm]}" "${SETUP[sglang]}" --out "$WORKDIR/comparison.md" --json "$WORKDIR/comparison.json" \
  --min_agreement "${SGLANG_CHECK_MIN_AGREEMENT:-0.9}"
echo "sglang_check: report in $WORKDIR/comparison.md" >&2
