"""Fixtures shared by every test folder: those defined here, and the plugins below (the harness's builds, models
and runner; the backends' images and chat server), which every folder's tests use wherever they live."""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

pytest_plugins = ["tests.support.harness_fixtures", "tests.support.backend_fixtures"]


def import_script(name: str) -> ModuleType:
    """A module of `scripts/` (not a package), imported by name."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


@pytest.fixture(scope="session", autouse=True)
def isolated_hash_cache(tmp_path_factory: pytest.TempPathFactory):
    """Keep the harness's remembered file hashes (`harness.inputs.integrity`) out of the user's ~/.cache."""
    import os

    from harness.inputs.integrity import HASH_CACHE_ENV

    previous = os.environ.get(HASH_CACHE_ENV)
    os.environ[HASH_CACHE_ENV] = str(tmp_path_factory.mktemp("hash_cache") / "file_hashes.json")
    yield
    if previous is None:
        os.environ.pop(HASH_CACHE_ENV, None)
    else:
        os.environ[HASH_CACHE_ENV] = previous


@pytest.fixture(scope="session", autouse=True)
def isolated_datasets_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keep the datasets Arrow cache of the tests out of the user's ~/.cache, and out of one another's way: each
    pytest-xdist worker has its own base temp folder, so its own cache."""
    import datasets

    cache = tmp_path_factory.mktemp("hf_datasets_cache")
    previous = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = cache
    yield cache
    datasets.config.HF_DATASETS_CACHE = previous


@pytest.fixture(scope="session")
def ray_cluster(isolated_hash_cache: None) -> Iterator[object]:
    """A local Ray cluster for the tests of model replicas (`harness.models.backends.replicas`), started once per session (per
    pytest-xdist worker) with 4 logical CPUs. Its workers import this tree and the tests' helper modules
    (`tests.support.fake_vllm`) through PYTHONPATH, and share the session's hash cache. A run in this process joins it (and
    leaves it running)."""
    import logging
    import os

    ray = pytest.importorskip("ray")  # installed by `make test` (the `ray` extra)
    root = Path(__file__).resolve().parents[1]
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(root), *([previous] if previous else [])])
    try:
        ray.init(
            address="local",
            num_cpus=4,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
            namespace="mmlongeval-tests",
        )
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous
    yield ray
    ray.shutdown()


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Hub, in every test (as `make test` runs them): a backend that looks a checkpoint up there (the vllm
    backend's count) fails at once, not after the retries an unreachable network costs; child processes inherit it."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def script_module() -> Callable[[str], ModuleType]:
    """`script_module("compare_backends")`: a module of `scripts/`."""
    return import_script


def rewrite_table(dataset_dir: Path, config: str, edit: Callable[[pa.Table], pa.Table], **write: Any) -> Path:
    """Rewrite a built config's (one) Parquet file (the image table's for `image_table`) as `edit(table)` (`write`:
    `pyarrow.parquet.write_table`'s options, `row_group_size=...`), and its manifest entry updated to the new file: a
    build that holds such rows, as far as the harness's integrity checks can tell (the config's `content_sha256` left
    as it was). Returns the file."""
    (shard,) = (dataset_dir / config).glob("*.parquet")
    pq.write_table(edit(pq.read_table(shard)), shard, **write)
    manifest_path = dataset_dir / "build_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entries = manifest["image_table" if config == "image_table" else "configs"]
    (entry,) = (entries if config == "image_table" else entries[config])["files"]
    entry.update(num_bytes=shard.stat().st_size, sha256=hashlib.sha256(shard.read_bytes()).hexdigest())
    manifest_path.write_text(json.dumps(manifest))
    return shard


def rewrite_columns(dataset_dir: Path, config: str, **mutators: Callable[[list], list]) -> None:
    """`rewrite_table` with columns changed by `mutators[name](values) -> values`, each of its type."""

    def edit(table: pa.Table) -> pa.Table:
        for name, mutate in mutators.items():
            field = table.schema.field(name)
            values = mutate(table.column(name).to_pylist())
            table = table.set_column(table.schema.get_field_index(name), field, pa.array(values, type=field.type))
        return table

    rewrite_table(dataset_dir, config, edit)


def ship_broken_image(dataset_dir: Path, config: str, row: int, data: bytes) -> None:
    """Give row `row`'s first image the bytes `data`, its declared sha256 and the manifest updated to match:
    a build that shipped a broken file as it was, hash and all, so only decoding it can tell."""

    def replace_bytes(images: list) -> list:
        images[row][0]["bytes"] = data
        return images

    def declare_them(hashes: list) -> list:
        hashes[row] = [hashlib.sha256(data).hexdigest(), *hashes[row][1:]]
        return hashes

    rewrite_columns(dataset_dir, config, images=replace_bytes, image_sha256=declare_them)


@pytest.fixture
def edit_build() -> Callable[..., None]:
    """`edit_build(dataset_dir, config, column=mutate, ...)`: see `rewrite_columns`."""
    return rewrite_columns


@pytest.fixture
def edit_table() -> Callable[..., Path]:
    """`edit_table(dataset_dir, config, edit)`: see `rewrite_table`."""
    return rewrite_table


@pytest.fixture
def broken_image() -> Callable[..., None]:
    """`broken_image(dataset_dir, config, row, data)`: see `ship_broken_image`."""
    return ship_broken_image


@pytest.fixture(scope="session")
def sentencepiece() -> Callable[[], object]:
    """`sentencepiece()`: a SentencePiece BPE tokenizer (a `tokenizers.Tokenizer`) trained in memory on every
    printable character: `▁` for spaces, one prepended to every text and dropped again on decoding, as LLaVA-1.5's
    Llama tokenizer does, so that a text's leading space does not survive encoding and decoding."""
    import string

    from tokenizers.implementations import SentencePieceBPETokenizer

    corpus = ["Based on the provided images, answer the question. Describe the change: Choice list: \nA. one\n"] * 20

    def make() -> object:
        sp = SentencePieceBPETokenizer()
        sp.train_from_iterator(
            corpus,
            vocab_size=300,
            special_tokens=["<pad>", "<s>", "</s>", "<image>", "<unk>"],
            initial_alphabet=list(string.printable),
            show_progress=False,
        )
        return sp._tokenizer

    return make


class _CardYamlParsedOnce:
    """`yaml` as `huggingface_hub.repocard` uses it, with `safe_load` remembered by the text it parsed: a card is
    parsed once per test session, not once per `load_dataset(folder, config)` (87 MileBench configs loaded the
    user's way spent ~0.7 s each in the pure-Python YAML parser). Each caller gets its own deep copy, so the
    loads see exactly what a fresh parse gives them."""

    def __init__(self, yaml_module: ModuleType) -> None:
        self._yaml = yaml_module
        self._parsed: dict[str, object] = {}

    def safe_load(self, text: str) -> object:
        import copy

        if text not in self._parsed:
            self._parsed[text] = self._yaml.safe_load(text)
        return copy.deepcopy(self._parsed[text])

    def __getattr__(self, name: str) -> object:
        return getattr(self._yaml, name)


@pytest.fixture(scope="session", autouse=True)
def card_yaml_parsed_once() -> object:
    from huggingface_hub import repocard

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(repocard, "yaml", _CardYamlParsedOnce(repocard.yaml))
        yield repocard.yaml


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests whose `slow` marker says they take minutes (`@pytest.mark.slow(minutes=6)`) run first, longest
    first: pytest-xdist's `worksteal` hands each worker a contiguous share of the collection, and a test of minutes
    left to the end of a share would run alone after every other test has finished."""

    def minutes(item: pytest.Item) -> int:
        marker = item.get_closest_marker("slow")
        return marker.kwargs.get("minutes", 0) if marker else 0

    items.sort(key=minutes, reverse=True)  # stable, reversed too: every other test keeps its place


def pytest_configure(config: pytest.Config) -> None:
    """A session a shell started in the background without job control (`make test &`) has SIGINT ignored, and every
    child inherits that, so the interrupt tests' runs would never see their Ctrl-C: the session takes the SIGINT a
    terminal gives, as a user's run has."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _signal_handlers() -> Iterator[None]:
    """Each test leaves SIGINT and SIGTERM as it found them: a handler an in-process run or a library leaves set (an
    ignored SIGINT) is inherited by every later test's child processes, whose interrupt tests then see no signal."""
    import signal

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) is not handler and handler is not None:
            signal.signal(sig, handler)
