"""LoCoVQA's VLM entity lister through a real harness backend (`openai`, against the loopback chat server): the
paper's query with one image per request, the answers parsed into entities that drive the collision filter,
appended to the entity cache and reused by the next build."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import datasets

from builders.core.contract import read_manifest
from builders.locovqa import build_locovqa
from builders.locovqa.entities import QUERY, entity_set
from builders.locovqa.fixture import write_fixture

from .chat_server import ChatServer


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
        args = dict(entity_lister=["okvqa=vlm:openai"], entity_cache=cache, limit=3, cell_size=16,
                    entity_lister_args=f"model=test-vlm,base_url={server.base_url},api_key=sk-test,max_retries=0")
        first = build_locovqa([f"okvqa={sources['okvqa']}", f"coco={sources['coco']}"], tmp_path / "a",
                              ["okvqa_int_9"], **args)
        asked = len(server.received)
        second = build_locovqa([f"okvqa={sources['okvqa']}", f"coco={sources['coco']}"], tmp_path / "b",
                               ["okvqa_int_9"], **args)
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
