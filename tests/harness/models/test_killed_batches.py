"""`--batch` through a `harness` process killed between submission and collection, on each provider's batch interface
(OpenAI's Batch API, Anthropic's Message Batches, Gemini's batch mode, each on its loopback server): the batch id is
journalled before the batch is polled, so the same command, run again, collects the same batch instead of submitting
(and paying for) it again, and records its cost at the batch price."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from harness.run.cli import main
from tests.support.backend_fixtures import MMNEEDLE_LIMIT as LIMIT
from tests.support.killed_runs import kill_when

pytestmark = pytest.mark.slow  # harness processes end to end against loopback servers

TASKS = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg"]


class BatchDesk(Protocol):
    """What each loopback server shows of its batches."""

    hold: Any  # threading.Event: set, a batch stays in progress
    created: list[str]  # batch ids, in the order submitted
    looks: int  # polls answered


@dataclass(frozen=True)
class Provider:
    backend: str
    model: str
    server: Callable[[], Any]  # a started loopback server
    desk: Callable[[Any], BatchDesk]
    singles: Callable[[Any], list[Any]]  # the requests that went alone, not in a batch


def _chat_server() -> Any:
    from tests.support.chat_server import ChatServer
    from tests.support.openai_batches import OpenAIBatchDesk

    return ChatServer(batches=OpenAIBatchDesk())


def _anthropic_server() -> Any:
    pytest.importorskip("anthropic")
    from tests.support.anthropic_server import AnthropicServer

    return AnthropicServer()


def _gemini_server() -> Any:
    pytest.importorskip("google.genai")
    from tests.support.gemini_server import GeminiServer

    return GeminiServer()


def _gemini_singles(server: Any) -> list[Any]:
    from tests.support.gemini_server import generation_bodies

    return generation_bodies(server)


PROVIDERS = {
    "openai": Provider("openai", "test-vlm", _chat_server, lambda s: s.batches, lambda s: s.received),
    "anthropic": Provider(
        "anthropic",
        "claude-test",
        _anthropic_server,
        lambda s: s,
        lambda s: [r for r in s.received if r.path == "/v1/messages"],
    ),
    "gemini": Provider("gemini", "gemini-test", _gemini_server, lambda s: s, _gemini_singles),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[Provider, Any]]:
    chosen = PROVIDERS[request.param]
    server = chosen.server()
    server.start()
    try:
        yield chosen, server
    finally:
        server.stop()


def _batches(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_killed_harness_resumes_its_batch_and_pays_once(
    provider: tuple[Provider, Any], mmneedle_dir: Path, tmp_path: Path, capsys
) -> None:
    chosen, server = provider
    out = tmp_path / "out"
    prices = tmp_path / "prices.json"  # $1 a million input tokens; half through the batch interface
    prices.write_text(json.dumps({"models": {chosen.model: {"input": 1.0, "output": 0, "batch": 0.5}}}))
    argv = [
        "--tasks",
        ",".join(TASKS),
        "--model",
        chosen.backend,
        "--model_args",
        f"model={chosen.model},base_url={server.base_url},api_key=sk-test,backoff=0.01,batch_poll=0.05",
        "--data_dir",
        str(mmneedle_dir),
        "--output_path",
        str(out),
        "--no_progress",
        "--batch",
        "--prices",
        str(prices),
    ]
    desk = chosen.desk(server)
    desk.hold.set()  # the provider is still working on it
    journal = out / f"{chosen.backend}__{chosen.model}" / "batches_model.jsonl"
    kill_when(argv, lambda: journal.exists() and desk.looks, "the first task's batch submitted and polled")
    (entry,) = _batches(journal)
    assert entry["provider"] == chosen.backend and entry["batch_id"] == desk.created[0]
    assert len(entry["items"]) == LIMIT

    desk.hold.clear()
    assert main(argv) == 0, capsys.readouterr().err
    # The first task's batch was collected, not submitted again; the second task's went as a batch of its own.
    assert len(desk.created) == 2 and [e["batch_id"] for e in _batches(journal)] == desk.created
    assert chosen.singles(server) == []  # nothing went alone
    results = json.loads(next((out / f"{chosen.backend}__{chosen.model}").glob("results_*.json")).read_text())
    for task in TASKS:
        assert results["sample_counts"][task]["n_ok"] == LIMIT
        cost = results["cost"][task]["model"]
        assert cost["batch"] is True and cost["input_tokens"] > 0
        assert cost["usd"] == pytest.approx(cost["input_tokens"] * 0.5 / 1e6)
