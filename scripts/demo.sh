#!/usr/bin/env bash
# `make demo`: build a small synthetic MMNeedle (all 21 configs, 20 positives + 20 negatives each),
# load one config back with `datasets`, evaluate the `random` baseline on every MMNeedle task (and the
# constant "-1" answer on the single-needle ones, for contrast); build MMLongBench from its offline fixture
# (all 95 configs and the 25 ablation configs, a few rows each, images stored once), run the random baseline on
# its 8K tasks and on the ablation sets, and screen the 128K ones for Qwen2.5-VL without loading it; build
# MileBench from its offline fixture, run the random baseline on Table 2's set and screen two subsets for a
# short context (the paper's left truncation); build LoCoVQA's offline stand-in and run the random baseline on
# its 48 tasks; build MMLongBench-Doc's and MM-NIAH's offline stand-ins and run the random baseline on each;
# compare the two MMNeedle baselines paired on sample ids and say, before any run and from the
# random one's, how small a difference each task can detect; write the report.
# Usage: bash scripts/demo.sh OUT_DIR      (about a minute on 2 CPU cores, fully offline)
set -euo pipefail

OUT="${1:-demo_out}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/.venv/bin"
if [[ ! -x "$BIN/harness" || ! -x "$BIN/builders" ]]; then
  echo "demo: $BIN/harness or $BIN/builders is missing; run 'make install' first" >&2
  exit 1
fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

echo "== 1/9 build the synthetic MMNeedle grid (21 configs) into $OUT/data"
"$BIN/builders" build mmneedle --source synthetic --limit 20 --out "$OUT/data" --quiet --overwrite

echo "== 2/9 load a config back with datasets.load_dataset"
"$BIN/python" - "$OUT/data/mmneedle" <<'PY'
import sys

import datasets

ds = datasets.load_dataset(sys.argv[1], "m10_n2_k1", split="test")
row = ds[0]
print(f"m10_n2_k1: {len(ds)} rows, columns: {', '.join(ds.column_names)}")
print(f"row {row['id']}: {row['num_images']} images of {row['image_sizes'][0][0]}x{row['image_sizes'][0][1]} px "
      f"(decoded: {type(row['images'][0]).__name__}), answer {row['answer']!r}, "
      f"{row['text_tokens']} text + {sum(row['image_tokens'])} vision tokens")
print("prompt:", row["prompt"].replace("<image>" * row["num_images"], f"<image> x {row['num_images']} ")[:400])
PY

echo "== 3/9 evaluate the random baseline on the mmneedle group (and the constant answer -1 on mmneedle_k1)"
"$BIN/harness" --tasks mmneedle --model random --data_dir "$OUT/data" --output_path "$OUT/results" --log_samples --no_progress
"$BIN/harness" --tasks mmneedle_k1 --model constant --model_args answer=-1 --data_dir "$OUT/data" \
  --output_path "$OUT/results" --no_progress > /dev/null

echo "== 4/9 MMLongBench: build the offline fixture, run the random baseline at 8K and on the ablation sets,"
echo "        screen 128K for qwen2.5-vl"
"$BIN/builders" build mmlongbench --source fixture --out "$OUT/data" --quiet --overwrite
"$BIN/harness" --tasks mmlongbench_8k --model random --data_dir "$OUT/data" --output_path "$OUT/results" --no_progress
"$BIN/harness" --tasks mmlongbench_ablation --model random --data_dir "$OUT/data" --output_path "$OUT/results" \
  --no_progress > /dev/null
"$BIN/harness" --tasks mmlongbench_128k --model qwen2.5-vl --data_dir "$OUT/data" --screen_only --no_progress | tail -n 3

echo "== 5/9 MileBench: build the offline fixture (29 subsets x 3 sets), run the random baseline on Table 2's set,"
echo "        screen the needles for a 600-token context (the paper's left truncation cuts what does not fit)"
"$BIN/builders" build milebench --source fixture --out "$OUT/data" --quiet --overwrite | tail -n 2
"$BIN/harness" --tasks milebench --model random --data_dir "$OUT/data" --output_path "$OUT/results" --no_progress > /dev/null
"$BIN/harness" --tasks milebench_image_needle,milebench_text_needle --model hf \
  --model_args context_length=600 --data_dir "$OUT/data" --screen_only --no_progress | tail -n 7

echo "== 6/9 LoCoVQA: build the offline stand-in (48 configs, 2 items each), run the random baseline on every task"
"$BIN/builders" build locovqa --limit 2 --cell-size 112 --out "$OUT/data" --quiet --overwrite
"$BIN/harness" --tasks locovqa --model random --data_dir "$OUT/data" --output_path "$OUT/results" --no_progress > /dev/null

echo "== 7/9 MMLongBench-Doc and MM-NIAH: build their offline stand-ins, run the random baseline on each"
"$BIN/builders" build mmlongbench_doc --source fixture --out "$OUT/data" --quiet --overwrite > /dev/null
"$BIN/builders" build mm_niah --source fixture --out "$OUT/data" --quiet --overwrite > /dev/null
"$BIN/harness" --tasks mmlongbench_doc --model random --data_dir "$OUT/data" --output_path "$OUT/results" \
  --no_progress > /dev/null
"$BIN/harness" --tasks mm_niah_val --model random --data_dir "$OUT/data" --output_path "$OUT/results" --no_progress \
  | grep "(group)"

echo "== 8/9 compare random and constant paired on MMNeedle's single-needle rows (compare.json, compare.md);"
echo "        power: the smallest difference each task detects, from MMLongBench's build before a run and from a run"
"$BIN/harness" compare "$OUT/results" --models random constant --tasks mmneedle_k1 | awk '/^## Groups/ {on = 1} /^## Tasks/ {on = 0} on'
"$BIN/harness" power --tasks mmlongbench_niah_8k --data_dir "$OUT/data" --effect 10 | sed -n 1,6p
"$BIN/harness" power "$OUT/results" --model random --tasks mmneedle_k1 --metrics exact_acc | sed -n 1,6p

echo "== 9/9 write the report"
"$BIN/harness" report "$OUT/results"
echo "demo: done. Report: $OUT/results/report.md (plots beside it); per-sample journals and logs: $OUT/results/*/journal_*.jsonl, samples_*.jsonl"
echo "demo: the commands are in $BIN: run 'source $BIN/activate' (or put $BIN on your PATH), then: harness view $OUT/results"
