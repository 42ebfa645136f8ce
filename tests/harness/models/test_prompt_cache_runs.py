"""Provider prompt caching through the `harness` command, on MMLongBench fixture rows (the rows of one haystack at
several depths share its first images): an Anthropic run sends `cache_control` marks that a loopback Messages API
checks and answers with cache reads and writes, an OpenAI run a `prompt_cache_key` per haystack, each recorded in the
sample log and priced in the results; a served engine's rows come in the cache order (`request_order=cache`); and
`--screen_only` prints the bill without caching and with it, and which rows share what."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from builders.mmlongbench import build_mmlongbench
from tests.support.anthropic_server import AnthropicServer
from tests.support.chat_server import ChatServer

pytestmark = pytest.mark.slow  # MMLongBench fixture rows run end to end through the harness command

CONFIGS = ("niah_vh_single_8k", "niah_vh_single_16k")
TASKS = ",".join(f"mmlongbench_{c}" for c in CONFIGS)
# The fixture's rows are short: a mark from 45 tokens on (past the instruction every row shares, within a haystack).
SMALL = "prompt_cache_min_tokens=45"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb")
    build_mmlongbench(source="fixture", out_dir=root, configs=list(CONFIGS))
    return root


def run_args(data: Path, out: Path, backend: str, args: str) -> list[str]:
    return ["--tasks", TASKS, "--model", backend, "--model_args", args, "--data_dir", str(data),
            "--output_path", str(out), "--log_samples", "--no_cache"]  # fmt: skip


def sample_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in out.rglob("samples_*.jsonl") for line in path.read_text().splitlines()]


def marks_of(body: dict[str, Any]) -> int:
    system = body.get("system")
    blocks = [*(system if isinstance(system, list) else []), *(b for m in body["messages"] for b in m["content"])]
    return sum("cache_control" in block for block in blocks)


def test_an_anthropic_run_marks_shared_prefixes_and_records_the_cache_it_reports(data: Path, tmp_path: Path, harness):
    pytest.importorskip("anthropic")
    server = AnthropicServer()
    server.start()
    out = tmp_path / "out"
    args = f"model=claude-3-7-sonnet-20250219,base_url={server.base_url},api_key=k,{SMALL},concurrency=4"
    try:
        run = harness(*run_args(data, out, "anthropic", args))
        logged_lines = sample_lines(out)
        again = harness(*run_args(data, out, "anthropic", args))  # resumed from the journal: nothing sent again
    finally:
        server.stop()
    assert run.code == 0 and again.code == 0, run.err + again.err
    bodies = [r.body for r in server.received if r.path == "/v1/messages"]
    assert len(bodies) == 36  # 18 rows a length, each sent once
    marks = [marks_of(body) for body in bodies]
    assert max(marks) <= 4 and sum(1 for n in marks if n) >= 30  # the server refuses a fifth mark
    reads = [read for read, _ in server.cache_seen]
    assert sum(1 for read in reads if read) >= 24  # most rows read their haystack's prefix from the cache
    # The sample log records what was asked and what each reply reported, the results price reads and writes.
    lines = [line for line in logged_lines if "prompt_cache" in line]
    assert len(lines) == len(server.cache_seen)
    assert all(json.loads(line["prompt_cache"])["how"] == "cache_control" for line in lines)
    logged = Counter((line.get("cache_read_tokens", 0), line.get("cache_write_tokens", 0)) for line in lines)
    assert logged == Counter(server.cache_seen)
    first, resumed = sorted(out.rglob("results_*.json"))  # the resumed run counts the journalled answers' usage
    cost = json.loads(resumed.read_text())["cost"]
    assert cost == json.loads(first.read_text())["cost"]
    assert sum(entry["model"]["cached_tokens"] for entry in cost.values()) == sum(reads)
    assert sum(entry["model"]["cache_write_tokens"] for entry in cost.values()) == sum(w for _, w in server.cache_seen)
    # Asked not to, it sends no mark.
    server = AnthropicServer()
    server.start()
    try:
        off_args = f"model=claude-3-7-sonnet-20250219,base_url={server.base_url},api_key=k,{SMALL},prompt_cache=false"
        off = harness(*run_args(data, tmp_path / "off", "anthropic", off_args))
    finally:
        server.stop()
    assert off.code == 0, off.err
    assert not any(marks_of(r.body) for r in server.received if r.path == "/v1/messages")


def _cached_usage(seen: set[str]):
    """OpenAI's usage for a request: its prompt cached from the second request under the same key."""

    def usage(body: dict[str, Any]) -> dict[str, Any]:
        key = body.get("prompt_cache_key")
        cached = 64 if key in seen else 0
        if key is not None:
            seen.add(key)
        return {"prompt_tokens": 200, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": cached}}

    return usage


def test_an_openai_run_sends_a_prompt_cache_key_for_each_haystack(data: Path, tmp_path: Path, harness):
    server = ChatServer(usage=_cached_usage(set()))
    server.start()
    out = tmp_path / "out"
    args = f"model=gpt-4o,base_url={server.base_url},api_key=sk-test,{SMALL},concurrency=4"
    try:
        auto = harness(*run_args(data, tmp_path / "auto", "openai", args))  # a server other than OpenAI's: no key
        sent_auto = len(server.received)
        run = harness(*run_args(data, out, "openai", f"{args},prompt_cache=true"))
    finally:
        server.stop()
    assert auto.code == 0 and run.code == 0, auto.err + run.err
    assert not any("prompt_cache_key" in r.body for r in server.received[:sent_auto])
    bodies = [r.body for r in server.received[sent_auto:]]
    keys = Counter(body.get("prompt_cache_key") for body in bodies)
    # One key a haystack (its rows at every depth of one length share its first images), none for a row alone.
    assert len([k for k in keys if k is not None]) >= 4 and all(n >= 2 for k, n in keys.items() if k is not None)
    lines = [line for line in sample_lines(out) if "prompt_cache" in line]
    assert {json.loads(line["prompt_cache"])["key"] for line in lines} == {k for k in keys if k is not None}
    assert sum(line.get("cache_read_tokens", 0) for line in lines) == 64 * sum(n - 1 for k, n in keys.items() if k)


def images_in(body: dict[str, Any]) -> int:
    return sum(
        p.get("type") == "image_url" for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]
    )


def test_a_served_engine_takes_the_cache_order(data: Path, tmp_path: Path, harness):
    """`vllm serve` or SGLang behind the `openai` backend: with `request_order=cache` every task's requests are one
    sequence, the run's longest first and then the rows sharing a prefix together, as the `vllm` backend orders them;
    by default each task runs in turn. The fixture's 8K rows show 5 images, its 16K rows 7."""
    server = ChatServer()
    server.start()
    args = f"model=served-vlm,base_url={server.base_url},concurrency=1"
    try:
        length = harness(*run_args(data, tmp_path / "length", "openai", args))
        in_length = [images_in(r.body) for r in server.received]
        server.received.clear()
        cache = harness(*run_args(data, tmp_path / "cache", "openai", f"{args},request_order=cache"))
        in_cache = [images_in(r.body) for r in server.received]
    finally:
        server.stop()
    assert length.code == 0 and cache.code == 0, length.err + cache.err
    assert in_length == [5] * 18 + [7] * 18  # the 8K task, then the 16K task
    # One sequence: the run's longest request (a 16K row) first, then each group sharing a prefix, across the tasks.
    assert in_cache[0] == 7 and {5, 7} <= set(in_cache[1:18]) and sorted(in_cache) == sorted(in_length)
    assert not any("prompt_cache_key" in r.body for r in server.received)  # a served engine is sent no key


def _row(out: str, task: str) -> list[str]:
    (line,) = [line for line in out.splitlines() if line.startswith(f"| model | {task} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_screen_only_prints_the_bill_with_and_without_caching(backend: str, data: Path, tmp_path: Path, capsys):
    from harness.run.cli import main

    served = {"anthropic": "claude-test", "openai": "gpt-test"}[backend]
    # A dollar an input token, ten cents a cached one, $1.25 one written (Anthropic's), nothing an output token.
    rates = {
        "input": 1e6,
        "cached_input": 1e5,
        "output": 0,
        **({"cache_write": 1.25e6} if backend == "anthropic" else {}),
    }
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {served: rates}}))
    args = f"model={served},{SMALL}" + (",prompt_cache=true,base_url=http://127.0.0.1:9" if backend == "openai" else "")
    argv = [
        "--tasks",
        TASKS,
        "--model",
        backend,
        "--model_args",
        args,
        "--data_dir",
        str(data),
        "--prices",
        str(prices),
    ]
    assert main([*argv, "--screen_only", "--no_progress"]) == 0
    out = capsys.readouterr().out
    for config in CONFIGS:
        row = _row(out, f"mmlongbench_{config}")
        given, usd, cache, cached_usd = int(row[4].replace(",", "")), row[6], row[7], row[8]
        read, written = (int(n.replace(",", "")) for n in cache.split(" / "))
        assert read > 0 and (written > 0) == (backend == "anthropic")
        assert float(usd.replace(",", "")) == given
        assert float(cached_usd.replace(",", "")) == pytest.approx(given - read + 0.1 * read + 0.25 * written, abs=0.01)
    assert re.search(r"Estimated cost: \$[\d,.]+ \(model \$[\d,.]+\)\.", out)
    assert re.search(r"With prompt caching \(.+\): \$[\d,.]+ \(model \$[\d,.]+\) where the cache serves every", out)
    assert re.search(
        r"- mmlongbench_niah_vh_single_8k: \d+ of 18 requests share a prefix, in \d+ groups \(vh_single_", out
    )
