"""Writes `mmlongbench_doc.yaml`'s metric list and judge metrics from `utils.CELLS` (run from the repo root:
`python -m tasks.mmlongbench_doc._make_yaml`); `test_the_yaml_is_what_make_yaml_writes` checks it."""

from __future__ import annotations

from pathlib import Path

from tasks.mmlongbench_doc.utils import CELLS

YAML = Path(__file__).with_name("mmlongbench_doc.yaml")
HEAD = """\
# MMLongBench-Doc (Ma et al., NeurIPS 2024 D&B; mayubo2333/MMLongBench-Doc @d73f0dc): every question, its document's
# pages after it (`run_api.py`: the question as the text part, then one image per page). Written by _make_yaml.py.
task: mmlongbench_doc
dataset_path: mmlongbench_doc
dataset_name: test
test_split: test
output_type: generate_until
doc_to_visual: images
doc_to_text: prompt
doc_to_target: answer
random_answer: !function utils.random_answer
# Several questions ask about one document (8 on average): the document is the item (docs/statistics.md).
cluster_key: doc_id
process_results: !function utils.process_results
benchmark: !function benchmark.BENCHMARK
# run_api.py / run_lvlm.py: --max_tokens 1024, --temperature 0.0.
generation_kwargs:
  max_gen_toks: 1024
  temperature: 0.0
  do_sample: false
  until: []
# `acc`, `f1` and the cells of `show_results` (evidence sources; single-page, cross-page, unanswerable; document
# types) on the extractor's answer (the judge, below); `unextracted_*` score the reply itself where no judge runs
# (the random baseline), not the paper's figures.
metric_list:
"""
TAIL = """\
judge:
  prompts: !function utils.judge_prompts
  parse: !function utils.judge_parse
  score: !function utils.judge_score
  metrics: [{metrics}]
  # eval/extract_answer.py: model "gpt-4o" (in mid-2024 the 2024-05-13 snapshot), temperature 0.0, max_tokens 256,
  # top_p 1, no penalties.
  model: gpt-4o-2024-05-13
  generation_kwargs:
    max_gen_toks: 256
    temperature: 0.0
    top_p: 1.0
    do_sample: false
metadata:
  version: 1.0
  official_commit: d73f0dc
  builder_command: "builders build mmlongbench_doc --source RELEASE_DIR --out {{data_dir}} (or --source fixture for the offline stand-in)"
  builder_source: hf://yubo2333/MMLongBench-Doc
"""


def metric_entries(prefix: str) -> list[str]:
    entries = [
        f"  - metric: {prefix}acc\n    aggregation: mean\n    higher_is_better: true",
        f"  - metric: {prefix}f1\n    aggregation: !function utils.generalized_f1\n    higher_is_better: true",
    ]
    return entries + [
        f"  - metric: {prefix}acc_{cell}\n    aggregation: mean\n    higher_is_better: true\n    some_rows: true"
        for cell in CELLS
    ]


def render() -> str:
    judged = ["acc", "f1", *(f"acc_{cell}" for cell in CELLS)]
    entries = metric_entries("") + metric_entries("unextracted_")
    return HEAD + "\n".join(entries) + "\n" + TAIL.format(metrics=", ".join(judged))


if __name__ == "__main__":
    YAML.write_text(render())
