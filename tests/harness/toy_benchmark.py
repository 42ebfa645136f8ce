"""A tiny benchmark that belongs to no paper, so the harness is tested without any benchmark's code.

`build_toy` writes a dataset through the builders' shared core (the build skeleton `BenchmarkBuild`, the
data contract): config `colors` (one square per row: "What colour is the square?") and config `pairs` (two
squares: "Are the two squares the same colour?"), embedded or with shared image storage. `write_toy_tasks`
writes its task folder: a template, two tasks, two groups, and `utils.py` with the scorer and the
random baseline's hook.

The module is also a complete builder package: `BENCHMARK` follows `builders.core.benchmark.Benchmark`,
and `test_adding_a_benchmark.py` drops this file in as `builders/toy/__init__.py` of a copy of the
project, with the task folder and `CARD_TEMPLATE`, to show that a benchmark is its own files only.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets import Features, Value
from PIL import Image

from builders.core import contract
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.estimate import BuildEstimate
from builders.core.images import FileJpegEncoder
from builders.core.tokens import ApproxTokenCounter

COLOURS = {"red": (220, 30, 30), "green": (30, 160, 50), "blue": (30, 70, 220), "yellow": (245, 215, 30)}
NAMES = sorted(COLOURS)
ROWS = 6  # per config
INFO = BuilderInfo(name="toy", module=__name__, version="0.1.0", card={"license": "cc0-1.0", "pretty_name": "Toy"})
CONFIGS = {"colors": "one square per row: what colour is it?", "pairs": "two squares per row: the same colour?"}


def features(image_storage: str) -> Features:
    columns = dict(contract.row_features(image_storage))
    columns.update({"prompt": Value("string"), "answer": Value("string")})
    return Features(columns)


def _rows(config: str, encoder: FileJpegEncoder, embed: bool, rows: int):
    counter = ApproxTokenCounter()
    for i in range(rows):
        if config == "colors":
            shown = [NAMES[i % len(NAMES)]]
            question, answer = "What colour is the square? Answer with one word.", shown[0]
        else:
            shown = [NAMES[i % len(NAMES)], NAMES[(i // 2) % len(NAMES)]]
            question, answer = "Are the two squares the same colour? Answer yes or no.", "yes" if shown[0] == shown[1] else "no"
        # Sizes differ per row, so token counts and batching see more than one shape.
        images = [encoder.encode(Image.new("RGB", (48 + 8 * i, 40), COLOURS[c])) for c in shown]
        row = {"id": f"{config}-{i}"}
        if embed:
            row["images"] = [{"bytes": im.data, "path": f"{config}-{i}-{j}.jpg"} for j, im in enumerate(images)]
        row.update({
            "image_sha256": [im.sha256 for im in images],
            "image_sizes": [[im.width, im.height] for im in images],
            "num_images": len(images),
            "text_tokens": counter.count(question),
            "image_tokens": [contract.image_tokens(im.width, im.height) for im in images],
            "prompt": contract.IMAGE_PLACEHOLDER * len(images) + question,
            "answer": answer,
        })
        yield row, images


def build_toy(out_dir: Path, image_storage: str = contract.EMBEDDED, *, rows: int = ROWS,
              configs: list[str] | None = None, overwrite: bool = False, command: list[str] | None = None) -> Path:
    """Build `out_dir/toy` (both configs, or those named; added to a toy build already there) and return it."""
    path = ToyBuild(rows, configs or list(CONFIGS)).run(out_dir, image_storage=image_storage, overwrite=overwrite,
                                                        command=command)
    assert path is not None
    return path


@dataclass
class ToyBuild(BenchmarkBuild):
    """The toy's parts for the build skeleton: no source to read, nothing to plan, rows drawn as they are written."""

    info = INFO
    config_order = list(CONFIGS)
    uses_work_folder = False

    rows: int
    configs: list[str]

    def open_source(self, work: Path | None) -> OpenedSource:
        return OpenedSource()

    def request(self) -> dict[str, Any]:
        return {"rows": self.rows, "configs": self.configs}

    def plan(self, build: DatasetBuild) -> None:
        self.pending = list(build.pending)

    def estimate(self, kept: int) -> BuildEstimate:
        rows = self.rows * len(self.pending)
        return BuildEstimate(self.pending, rows, rows * 2000, 1, "squares to draw", "a guess", kept)

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        encoder = FileJpegEncoder()
        try:
            for config in self.pending:
                with build.config_writer(config, features(build.image_storage)) as writer:
                    for row, images in _rows(config, encoder, build.images is None, self.rows):
                        if build.images is not None:
                            for image in images:
                                build.images.add(image)
                        writer.write(row, sum(len(im.data) for im in images))
                    build.add_config(writer.close())
        finally:
            encoder.close()
        return {}


class ToyBenchmark:
    name = "toy"
    summary = "coloured squares, for tests"
    default_image_storage = contract.EMBEDDED

    def configs(self) -> Mapping[str, str]:
        return CONFIGS

    def features(self, config: str, image_storage: str) -> Features:
        return features(image_storage)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rows", type=int, default=ROWS, help=f"rows per config (default {ROWS})")

    def build(self, options: Any, args: argparse.Namespace) -> Path:
        return build_toy(options.out_dir, options.image_storage, rows=args.rows, configs=options.configs,
                         overwrite=options.overwrite, command=options.command)

    def describe_config(self, name: str, info: Mapping[str, Any]) -> str:
        return f"{info['rows']} rows"


BENCHMARK = ToyBenchmark()

CARD_TEMPLATE = """# Toy

Coloured squares ({{ configs | length }} configs), built by `{{ manifest.builder }}`; content `{{ manifest.content_hash }}`.

{% include "_image_table.md.jinja" %}"""


def write_toy_tasks(folder: Path) -> Path:
    """The toy benchmark's task folder (pass it with --include_path)."""
    files = {
        "utils.py": '''
            def process_results(doc, results):
                return {"acc": float(results[0].strip().lower() == doc["answer"])}

            def random_answer(doc, rng):
                return rng.choice(["yes", "no"] if "same colour" in doc["prompt"] else ["red", "green", "blue", "yellow"])
        ''',
        "_toy.yaml": '''
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
            metadata:
              version: 1.0
        ''',
        "toy_colors.yaml": "include: _toy.yaml\ntask: toy_colors\ndataset_name: colors\n",
        "toy_pairs.yaml": "include: _toy.yaml\ntask: toy_pairs\ndataset_name: pairs\n",
        "_group_toy.yaml": '''
            group: toy
            task: [toy_colors, toy_pairs]
            aggregate_metric_list:
              - metric: acc
                aggregation: strict_mean
        ''',
        "_group_toy_lenient.yaml": '''
            group: toy_lenient
            task: [toy_colors, toy_pairs]
            aggregate_metric_list:
              - metric: acc
                aggregation: mean
        ''',
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder
