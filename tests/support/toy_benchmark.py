"""A tiny benchmark that belongs to no paper, so the harness is tested without any benchmark's code: its files.

Its builder is `toy_builder.py` (the builders' shared core does the rest: the build skeleton, the data contract's
columns, the image storage): config `colors` (one square per row: "What colour is the square?") and config
`pairs` (two squares: "Are the two squares the same colour?"), embedded or with shared image storage;
`build_toy` builds it. `write_toy_tasks` writes its task folder: a template, two tasks, two groups, `utils.py` with
the scorer and the random baseline's hook, and `benchmark.py`, its declaration (`TOY_DECLARATION`: the toy paper's
models, one run by an alias, one that none can run); `CARD_TEMPLATE` is its card.

`test_adding_a_benchmark.py` drops `toy_builder.py` in as `builders/toy/__init__.py` of a copy of the project,
with the task folder and `CARD_TEMPLATE`, to show that a benchmark is its own files only.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tests.support.toy_builder import CONFIGS, ToyBuild

__all__ = ["CARD_TEMPLATE", "CONFIGS", "TOY_DECLARATION", "build_toy", "write_toy_tasks"]


def build_toy(out_dir: Path, **options: Any) -> Path:
    """Build `out_dir/toy` (both configs, or `configs`; added to a toy build already there) and return it;
    `options`: `rows` and the `BuildOptions` (`image_storage`, `overwrite`, ...)."""
    path = ToyBuild.build(out_dir, **options)
    assert path is not None
    return path


CARD_TEMPLATE = """# Toy

Coloured squares ({{ configs | length }} configs), built by `{{ manifest.builder }}`; content `{{ manifest.content_hash }}`.

{% include "_image_table.md.jinja" %}"""


# docs/ADDING_A_BENCHMARK.md shows this file as it is (`test_adding_a_benchmark.py` checks it).
TOY_DECLARATION = """\
\"\"\"The toy benchmark, declared once: its paper's models (every task and group names it, `benchmark: !function
benchmark.BENCHMARK`).\"\"\"

from harness.config.benchmark import BenchmarkDeclaration
from harness.models.facts.paper_models import PaperModel, PaperModels, rule

PAPER_MODELS = PaperModels(
    (
        PaperModel(
            "GPT-4o",  # the paper's name for it
            "gpt-4o-2024-05-13",  # the snapshot the paper ran
            "gpt-4o-2024-05-13",  # the alias that runs it
            "the paper's own API client; the alias sends the same images through OpenAI's",  # where it departs
            {"image_detail": "low"},  # what the alias adds for this benchmark
            rules=(rule(("toy_pairs",), "the paper halved each square of a pair", image_scale=0.5),),
        ),
        PaperModel("Squares-VL", "toy/squares-vl-7b", reason="its own model code: no backend here loads it"),
    )
)

BENCHMARK = BenchmarkDeclaration("Toy", paper=PAPER_MODELS)
"""


def write_toy_tasks(folder: Path) -> Path:
    """The toy benchmark's task folder (pass it with --include_path)."""
    files = {
        "utils.py": """
            def process_results(doc, results):
                return {"acc": float(results[0].strip().lower() == doc["answer"])}

            def random_answer(doc, rng):
                return rng.choice(["yes", "no"] if "same colour" in doc["prompt"] else ["red", "green", "blue", "yellow"])
        """,
        "_toy.yaml": """
            dataset_path: toy
            doc_to_visual: images
            doc_to_text: prompt
            doc_to_target: answer
            process_results: !function utils.process_results
            random_answer: !function utils.random_answer
            metric_list:
              - metric: acc
            generation_kwargs:
              max_gen_toks: 8
              until: []
            benchmark: !function benchmark.BENCHMARK
            metadata:
              version: 1.0
        """,
        "toy_colors.yaml": "include: _toy.yaml\ntask: toy_colors\ndataset_name: colors\n",
        "toy_pairs.yaml": "include: _toy.yaml\ntask: toy_pairs\ndataset_name: pairs\n",
        "_group_toy.yaml": """
            group: toy
            task: [toy_colors, toy_pairs]
            aggregate_metric_list:
              - metric: acc
                aggregation: strict_mean
            benchmark: !function benchmark.BENCHMARK
        """,
        "_group_toy_lenient.yaml": """
            group: toy_lenient
            task: [toy_colors, toy_pairs]
            aggregate_metric_list:
              - metric: acc
                aggregation: mean
        """,
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    (folder / "benchmark.py").write_text(TOY_DECLARATION)
    return folder
