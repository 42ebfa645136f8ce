"""LoCoVQA through a real harness backend (`openai`, against the loopback chat server): the VLM entity lister (the
paper's query with one image per request, the answers parsed into entities that drive the collision filter,
appended to the entity cache and reused by the next build), and refusals scored as the paper scores them."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import tomllib
from pathlib import Path

import datasets
import pytest

from builders.core.contract import read_manifest
from builders.core.errors import BuildError
from builders.core.image_questions import ENTRY_POINT_GROUP
from builders.locovqa import build_locovqa
from builders.locovqa.entities import QUERY, entity_set, make_lister
from builders.locovqa.fixture import write_fixture
from harness.run.image_asker import BackendImageAsker
from tests.support.chat_server import ChatServer
from tests.support.paths import PROJECT


@pytest.mark.slow  # two LoCoVQA builds through a backend
def test_a_vlm_lists_entities_through_a_harness_backend(tmp_path: Path) -> None:
    sources = write_fixture(tmp_path / "src")
    doc = json.loads((sources["coco"] / "annotations" / "instances_val2014.json").read_text())
    names = {c["id"]: c["name"] for c in doc["categories"]}
    files = {im["id"]: im["file_name"] for im in doc["images"]}
    truth: dict[str, list[str]] = {}  # sha256 of the image bytes -> the shapes it shows
    for ann in doc["annotations"]:
        data = (sources["coco"] / "val2014" / files[ann["image_id"]]).read_bytes()
        truth.setdefault(hashlib.sha256(data).hexdigest(), []).append(names[ann["category_id"]])

    def answer(body: dict) -> str:
        parts = body["messages"][-1]["content"]
        url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        shapes = truth[hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest()]
        return "Here are the entities:\n" + "\n".join(f"{i}. {s.title()}s" for i, s in enumerate(shapes, 1))

    server = ChatServer(answer=answer)
    server.start()
    cache = tmp_path / "entities.jsonl"
    try:
        # The installed harness registers this factory as an entry point; a checkout on PYTHONPATH may not have it.
        args = dict(
            entity_lister=["okvqa=vlm:openai"],
            entity_cache=cache,
            limit=3,
            cell_size=16,
            asker_factory=BackendImageAsker,
            entity_lister_args=f"model=test-vlm,base_url={server.base_url},api_key=sk-test,max_retries=0",
        )
        first = build_locovqa(
            [f"okvqa={sources['okvqa']}", f"coco={sources['coco']}"], tmp_path / "a", ["okvqa_int_9"], **args
        )
        asked = len(server.received)
        second = build_locovqa(
            [f"okvqa={sources['okvqa']}", f"coco={sources['coco']}"], tmp_path / "b", ["okvqa_int_9"], **args
        )
    finally:
        server.stop()
    assert asked > 3 and len(server.received) == asked  # the second build asked nothing: the cache answered
    texts = [[p for p in r.body["messages"][-1]["content"]] for r in server.received]
    assert all([p["type"] for p in t] == ["image_url", "text"] and t[1]["text"] == QUERY for t in texts)
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    assert len(lines) == asked and all(line["lister"] == "vlm:openai" and line["raw"] for line in lines)
    assert read_manifest(first)["request"]["entity_listers"]["okvqa"]["model"]["model"] == "openai"
    ds = datasets.load_dataset(str(first), "okvqa_int_9", split="test")
    for row in ds:
        shown = [entity_set(truth[sha]) for sha in row["image_sha256"]]
        (position,) = row["content_positions"]
        assert shown[position] and all(not s & shown[position] for i, s in enumerate(shown) if i != position)
    parquet = lambda folder: sorted(p.read_bytes() for p in folder.rglob("*.parquet"))  # noqa: E731
    assert parquet(first) == parquet(second)


@pytest.mark.slow  # a build and a harness run end to end
def test_a_refusal_counts_as_an_empty_answer_in_the_denominator(tmp_path: Path) -> None:
    """LoCoVQA scores refusals as failures (Appendix D): the provider's refusal is an empty, wrong answer and a
    non-response, not a sample left out (the harness's default, `refusals: exclude`)."""
    from harness.outputs.results.model_results import load_results
    from harness.run.cli import main

    build_locovqa(["synthetic"], tmp_path / "data", ["needle_cmp_1"], limit=3, cell_size=16)
    server = ChatServer(answer=lambda body: "7", faults=["refuse"])
    server.start()
    try:
        code = main(
            [
                "--tasks",
                "locovqa_needle_cmp_1",
                "--model",
                "openai",
                "--model_args",
                f"model=test-vlm,base_url={server.base_url},api_key=sk-test,concurrency=1",
                "--data_dir",
                str(tmp_path / "data"),
                "--output_path",
                str(tmp_path / "out"),
                "--no_progress",
            ]
        )
    finally:
        server.stop()
    assert code == 0
    (model,) = load_results(tmp_path / "out").values()
    counts = model.counters("locovqa_needle_cmp_1")
    assert counts["n_scored"] == 3 and counts["n_empty"] == 1 and counts.get("n_refused", 0) == 0
    assert model.results["locovqa_needle_cmp_1"]["non_response,none"] == 1.0
    journal = (next((tmp_path / "out").iterdir()) / "journal_locovqa_needle_cmp_1.jsonl").read_text().splitlines()
    refused = [json.loads(line) for line in journal[1:] if "refusal" in json.loads(line)]
    assert len(refused) == 1 and refused[0]["status"] == "empty" and refused[0]["metrics"]["accuracy"] == 0.0


def test_the_builders_find_the_harness_backends_through_an_entry_point() -> None:
    """The builders never import the harness: the package declares the harness's asker under the group the
    builders read (`builders.core.image_questions`), and a model the harness cannot make is one line."""
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    module, _, name = project["entry-points"][ENTRY_POINT_GROUP]["harness"].partition(":")
    assert getattr(importlib.import_module(module), name) is BackendImageAsker
    with pytest.raises(BuildError, match=r"^entity lister vlm:no-such-model: .*no-such-model"):
        make_lister("vlm:no-such-model", coco_instances=None, asker_factory=BackendImageAsker)
