"""The toy benchmark's builder, a whole builder package in one module: coloured squares, for tests. Config `colors`
shows one square per row ("What colour is the square?"), config `pairs` two ("Are the two squares the same
colour?"). docs/ADDING_A_BENCHMARK.md shows this file, and `test_adding_a_benchmark.py` adds it to a copy of the
project as `builders/toy/__init__.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datasets import Features, Value
from PIL import Image

from builders.core import contract
from builders.core.benchmark import BuilderSpec
from builders.core.benchmark_build import BenchmarkBuild
from builders.core.contract import at_least, option
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.estimate import BuildEstimate
from builders.core.images import EncodedImage, FileJpegEncoder
from builders.core.options import BenchmarkOptions

COLOURS = {"red": (220, 30, 30), "green": (30, 160, 50), "blue": (30, 70, 220), "yellow": (245, 215, 30)}
NAMES = sorted(COLOURS)
CONFIGS = {"colors": "one square per row: what colour is it?", "pairs": "two squares per row: the same colour?"}


@dataclass(frozen=True, kw_only=True)
class ToyOptions(BenchmarkOptions):  # each field is a flag of `builders build toy`
    rows: int = option(6, "rows per config (default 6)", parse=int, check=at_least(1))


class ToyBuild(BenchmarkBuild[ToyOptions]):
    info = BuilderInfo(name="toy", module=__name__, version="0.1.0", card={"license": "cc0-1.0", "pretty_name": "Toy"})
    Options = ToyOptions
    config_order = list(CONFIGS)
    uses_work_folder = False  # no source to read: no fixture, no spools

    def features(self, image_storage: str) -> Features:
        return row_features(image_storage, IMAGE_COLUMNS, TOKEN_COLUMNS, PROMPT_COLUMN, {"answer": Value("string")})

    def request(self) -> dict[str, Any]:
        return {"rows": self.options.rows, "configs": self.asked_configs or list(CONFIGS)}

    def plan(self, build: DatasetBuild) -> None:
        self.pending = list(build.pending)

    def estimate(self, kept: int) -> BuildEstimate:
        rows = self.options.rows * len(self.pending)
        return BuildEstimate(self.pending, rows, rows * 2000, 1, "squares to draw", "a guess", kept)

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        with FileJpegEncoder() as encoder:
            for config in self.pending:
                with self.rows(build, config) as writer:  # fills the contract's columns, stores the images
                    for i in range(self.options.rows):
                        row, images = toy_row(config, i, encoder)
                        writer.write(row, images, [f"{row['id']}-{j}.jpg" for j in range(len(images))])
                    build.add_config(writer.close())
        return {}


def toy_row(config: str, i: int, encoder: FileJpegEncoder) -> tuple[dict[str, Any], list[EncodedImage]]:
    """Row `i` of `config`: its own columns (`id` and `prompt` among them) and the images it shows."""
    if config == "colors":
        shown = [NAMES[i % len(NAMES)]]
        question, answer = "What colour is the square? Answer with one word.", shown[0]
    else:
        shown = [NAMES[i % len(NAMES)], NAMES[(i // 2) % len(NAMES)]]
        question = "Are the two squares the same colour? Answer yes or no."
        answer = "yes" if shown[0] == shown[1] else "no"
    # Sizes differ per row, so token counts and batching see more than one shape.
    images = [encoder.encode(Image.new("RGB", (48 + 8 * i, 40), COLOURS[c])) for c in shown]
    prompt = contract.IMAGE_PLACEHOLDER * len(images) + question
    return {"id": f"{config}-{i}", "prompt": prompt, "answer": answer}, images


BENCHMARK = BuilderSpec(ToyBuild, summary="coloured squares, for tests", config_lines=CONFIGS)
