"""Fixtures for the tests that run the harness (a pytest plugin of `tests/conftest.py`, so every folder has them):
a synthetic MMNeedle build (the real builder), the toy benchmark's builds and tasks, and a tiny LLaVA checkpoint
(`tiny_llava.py`), all made offline in seconds; helpers to run the `harness` command.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pytest

from harness.run.cli import main
from tests.support.run_setups import run_args
from tests.support.tiny_llava import build_tiny_llava

# Configs the tests use: one needle, two needles (10 images, for depth), five needles.
CONFIGS = ["m1_n2_k1", "m10_n1_k2", "m1_n2_k5"]
LIMIT = 12  # positives and negatives per config


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `--data_dir` holding `mmneedle/` built by the real builder from its synthetic source."""
    from builders.mmneedle import build_mmneedle

    root = tmp_path_factory.mktemp("data")
    build_mmneedle(source="synthetic", out_dir=root, configs=CONFIGS, limit=LIMIT, seed=0, num_proc=1)
    return root


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random LLaVA checkpoint saved with save_pretrained (see `build_tiny_llava`)."""
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"))


@pytest.fixture(scope="session")
def tiny_llava_336(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny LLaVA with LLaVA-1.5's image shape: 336 px, 576 tokens per image."""
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava-336"), image_size=336)


@pytest.fixture(scope="session")
def tiny_llava_sp(tmp_path_factory: pytest.TempPathFactory, sentencepiece) -> Path:
    """The tiny LLaVA with a SentencePiece tokenizer (as LLaVA-1.5's, whose whitespace a re-decoding changes)."""
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava-sp"), text_tokenizer=sentencepiece())


@pytest.fixture(scope="session")
def rows(data_dir: Path):
    """`rows("m1_n2_k1")`: a built config as `datasets` loads it (to compute expected values)."""

    def load(config: str) -> datasets.Dataset:
        return datasets.load_dataset(str(data_dir / "mmneedle"), config, split="test")

    return load


@dataclass
class Run:
    code: int
    out: str
    err: str
    output_path: Path | None

    def model_dir(self, name: str) -> Path:
        assert self.output_path is not None
        return self.output_path / name

    def results(self, name: str) -> dict[str, Any]:
        files = sorted(self.model_dir(name).glob("results_*.json"))
        assert files, f"no results in {self.model_dir(name)}; stderr: {self.err}"
        return json.loads(files[-1].read_text())

    def samples(self, name: str, task: str) -> list[dict[str, Any]]:
        """The task's journal records, each with its prompt's text from the journal's prompt store."""
        from harness.running.journal.prompt_store import PromptTexts
        from harness.running.journal.sample_log import with_prompt

        lines = (self.model_dir(name) / f"journal_{task}.jsonl").read_text().splitlines()
        texts = PromptTexts.at(self.model_dir(name) / f"prompts_{task}.jsonl")
        return [dict(with_prompt(json.loads(line), texts)) for line in lines[1:]]


@pytest.fixture
def harness(capsys: pytest.CaptureFixture[str]):
    """Run `harness ARGS` in-process; returns exit code, stdout, stderr and the output folder."""

    def run(*args: str) -> Run:
        argv = [str(a) for a in args]
        code = main(argv + ["--no_progress"] if argv and argv[0] not in ("ls", "models", "report", "merge") else argv)
        captured = capsys.readouterr()
        output = Path(argv[argv.index("--output_path") + 1]) if "--output_path" in argv else None
        return Run(code, captured.out, captured.err, output)

    return run


@pytest.fixture
def needle_run(harness, data_dir: Path) -> Callable[..., Run]:
    """`needle_run(tasks, model, out, *extra, model_args=None, include_path=None)`: the `harness` fixture's run of
    `tasks` with `model` on the synthetic MMNeedle `data_dir` (its arguments `run_args`'), into `out` (no
    `--output_path` where it is None), `extra` after them."""

    def run(tasks: str, model: str, out: Path | None, *extra: object, **flags: Path | str | None) -> Run:
        return harness(*run_args(tasks, model, data_dir=data_dir, out=out, **flags), *extra)

    return run


@pytest.fixture
def empty_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local Hub cache holding nothing (whatever the machine's own cache holds), offline, for the rest of the test."""
    from tests.support.hub_cache import use_offline_hub_cache

    return use_offline_hub_cache(monkeypatch, tmp_path / "hub")


def toy_colors_run(run, toy_dir: Path, toy_tasks: Path, out: Path, model: str, model_args: str, *extra: str) -> Run:
    """`harness --tasks toy_colors` (with `run`, the `harness` fixture), its samples logged, into `out`."""
    return run(
        *("--tasks", "toy_colors", "--model", model, "--model_args", model_args, "--include_path", toy_tasks),
        *("--data_dir", toy_dir, "--output_path", out, "--log_samples", *extra),
    )


@pytest.fixture
def script_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the installed console script: offline, own caches, one thread."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_DATASETS_CACHE=str(tmp_path / "hf_cache"),
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    env.pop("MMLONGEVAL_DATA_DIR", None)
    return env


@pytest.fixture(scope="session")
def harness_script() -> str:
    """The `harness` console script installed beside this interpreter."""
    return str(Path(sys.executable).parent / "harness")


@pytest.fixture(scope="session")
def fixture_builds(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`fixture_builds(mmlongbench=["niah_vh_single_8k"], milebench=["image_needle"])`: a `--data_dir` holding each
    benchmark's `--source fixture` build of those configs (`into=FOLDER`: linked into the caller's own). Each
    (benchmark, configs) is built once a session (per worker) and linked into the folders that ask for it, so the modules that read the same build share it: read it,
    never edit it (a test that edits a build makes its own)."""
    import importlib

    builds: dict[tuple[str, tuple[str, ...]], Path] = {}
    folders: dict[tuple[tuple[str, tuple[str, ...]], ...], Path] = {}

    def built(benchmark: str, configs: tuple[str, ...]) -> Path:
        if (benchmark, configs) not in builds:
            root = tmp_path_factory.mktemp(f"{benchmark}_fixture")
            build = getattr(importlib.import_module(f"builders.{benchmark}.build"), f"build_{benchmark}")
            build(source="fixture", out_dir=root, configs=list(configs))
            builds[benchmark, configs] = root / benchmark
        return builds[benchmark, configs]

    def data_dir(into: Path | None = None, **configs: Iterable[str]) -> Path:
        """`into`: a folder of the caller's (holding builds of its own) to link them into, else one of their own."""
        key = tuple(sorted((benchmark, tuple(names)) for benchmark, names in configs.items()))
        if into is None and key in folders:
            return folders[key]
        folder = into or folders.setdefault(key, tmp_path_factory.mktemp("fixture_builds"))
        for benchmark, names in key:
            (folder / benchmark).symlink_to(built(benchmark, names), target_is_directory=True)
        return folder

    return data_dir


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `--data_dir` holding `toy/`, the benchmark-neutral dataset of `toy_benchmark`, images embedded."""
    from tests.support.toy_benchmark import build_toy

    root = tmp_path_factory.mktemp("toy_data")
    build_toy(root)
    return root


@pytest.fixture(scope="session")
def toy_shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same toy dataset with shared image storage (each distinct image once, in the image table)."""
    from tests.support.toy_benchmark import build_toy

    root = tmp_path_factory.mktemp("toy_shared")
    build_toy(root, image_storage="shared")
    return root


@pytest.fixture(scope="session")
def toy_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy benchmark's task folder, for --include_path."""
    from tests.support.toy_benchmark import write_toy_tasks

    return write_toy_tasks(tmp_path_factory.mktemp("toy_tasks"))
