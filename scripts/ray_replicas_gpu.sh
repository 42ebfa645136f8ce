#!/usr/bin/env bash
# Model replicas on Ray on a GPU machine (docs/scaling.md): the same rows through one replica in the harness process
# and through RAY_GPU_REPLICAS (2) replicas on a Ray instance the run starts on this machine, for the vllm and hf
# backends, with a tiny random Qwen2.5-VL (scripts/make_tiny_qwen.py) or a checkpoint. Reports per backend the
# samples/s of each (evaluation time, from the results), whether the results files are the same (timing and the
# record of the replicas aside) and how many journalled answers differ, and where each replica ran. Needs as many
# GPUs as replicas (each vllm replica takes tensor_parallel_size of them): with fewer, the replicas' run stops at once
# saying what it needs.
#
#   pip install -e '.[hf,vllm,ray]'
#   scripts/ray_replicas_gpu.sh [CHECKPOINT|tiny-qwen] [WORKDIR]
#
# Knobs (environment): RAY_GPU_REPLICAS (2), RAY_GPU_BACKENDS ("vllm hf"), RAY_GPU_CONFIGS (MMNeedle configs,
# "m1_n2_k1 m10_n1_k1"), RAY_GPU_LIMIT (positives and negatives per config, 25), RAY_GPU_VLLM_ARGS / RAY_GPU_HF_ARGS
# (extra ,k=v model args), RAY_ADDRESS (a cluster to use instead of a local instance), PYTHON (python).

set -euo pipefail

CHECKPOINT="${1:-tiny-qwen}"
WORKDIR="${2:-$(mktemp -d -t mmlongeval-ray-gpu.XXXXXX)}"
REPLICAS="${RAY_GPU_REPLICAS:-2}"
BACKENDS="${RAY_GPU_BACKENDS:-vllm hf}"
CONFIGS="${RAY_GPU_CONFIGS:-m1_n2_k1 m10_n1_k1}"
LIMIT="${RAY_GPU_LIMIT:-25}"
PYTHON="${PYTHON:-python}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "ray_replicas_gpu: $*" >&2; exit 2; }
for entry in harness:harness.run.cli builders:builders.cli; do
  cli="${entry%%:*}" module="${entry#*:}"
  if ! command -v "$cli" >/dev/null; then
    "$PYTHON" -c "import $module" 2>/dev/null || die "the '$cli' command is not installed (pip install -e '.[hf,vllm,ray]')"
    eval "$cli() { \"\$PYTHON\" -c 'import sys; from $module import main; sys.exit(main())' \"\$@\"; }"
  fi
done
"$PYTHON" -c "import ray" 2>/dev/null || die "ray is not importable by $PYTHON (pip install -e '.[ray]')"
command -v nvidia-smi >/dev/null || die "no nvidia-smi: this check needs NVIDIA GPUs"
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader >&2 || die "nvidia-smi sees no GPU"

mkdir -p "$WORKDIR"
if [ "$CHECKPOINT" = tiny-qwen ]; then
  CHECKPOINT="$WORKDIR/tiny-qwen"
  [ -f "$CHECKPOINT/config.json" ] || "$PYTHON" "$HERE/make_tiny_qwen.py" "$CHECKPOINT" --context 32768 >&2
fi
TASKS=""
for config in $CONFIGS; do
  TASKS="${TASKS:+$TASKS,}mmneedle_${config}_pos,mmneedle_${config}_neg"
done
# shellcheck disable=SC2086  # CONFIGS is a space-separated list on purpose
[ -d "$WORKDIR/data/mmneedle" ] || builders build mmneedle --source synthetic --configs $CONFIGS --limit "$LIMIT" \
  --out "$WORKDIR/data" --quiet

for backend in $BACKENDS; do
  case "$backend" in
    vllm) ARGS="pretrained=$CHECKPOINT,max_model_len=32768,max_pixels=1003520${RAY_GPU_VLLM_ARGS:-}" ;;
    hf) ARGS="pretrained=$CHECKPOINT,max_pixels=1003520${RAY_GPU_HF_ARGS:-}" ;;
    *) die "RAY_GPU_BACKENDS names vllm and hf, not '$backend'" ;;
  esac
  for size in 1 "$REPLICAS"; do
    out="$WORKDIR/$backend-$size"
    rm -rf "$out"
    ray=()
    [ "$size" = 1 ] || ray=(--ray "${RAY_ADDRESS:-local}")
    echo "ray_replicas_gpu: $backend, $size replica(s)" >&2
    harness --tasks "$TASKS" --model "$backend" --model_args "$ARGS,data_parallel_size=$size" "${ray[@]}" \
      --data_dir "$WORKDIR/data" --output_path "$out" --no_cache --no_progress > "$out.log" 2>&1 \
      || { tail -5 "$out.log" >&2; die "$backend with $size replica(s) failed (log: $out.log)"; }
  done
  "$PYTHON" - "$WORKDIR/$backend-1" "$WORKDIR/$backend-$REPLICAS" "$backend" <<'EOF'
import json, sys
from pathlib import Path

one, many, backend = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
def results(folder):
    return json.loads(sorted(folder.rglob("results_*.json"))[-1].read_text())
def comparable(r):
    r = json.loads(json.dumps(r))
    for key in ("date", "total_evaluation_time_seconds"):
        r.pop(key, None)
    for key in ("argv", "cache", "model_calls", "model_args"):
        r["config"].pop(key, None)
    r["config"].get("backend_stats", {}).pop("replicas", None)
    for key in ("engine_seconds", "count_seconds", "engine_call_seconds", "engine_calls", "engine_requests"):
        r["config"].get("backend_stats", {}).pop(key, None)
    return r
def answers(folder):
    return {(p.name, r["sample_id"]): r.get("response") for p in folder.rglob("journal_*.jsonl")
            for r in map(json.loads, p.read_text().splitlines()[1:])}
a, b = results(one), results(many)
samples = sum(c["effective"] for c in a["n-samples"].values())
rate = lambda r: samples / float(r["total_evaluation_time_seconds"])
differ = sum(1 for k, v in answers(one).items() if answers(many).get(k) != v)
replicas = b["config"]["backend_stats"]["replicas"]
print(f"{backend}: {samples} samples; 1 replica in process {rate(a):.2f} samples/s, "
      f"{replicas['data_parallel_size']} Ray replicas {rate(b):.2f} samples/s; results file the same: "
      f"{comparable(a) == comparable(b)}; answers that differ: {differ}; placement: {replicas['placement']}; "
      f"images: {replicas['images']['route']}")
EOF
done
