"""The API aliases on real task rows (issue 53): each run through `harness` as a user runs it (the task's YAML, the
alias's input policy, the backend), and what its loopback server received compared field by field with what the
official code builds for the same row, sent through the same SDK to a server of its own.

- MMLongBench through each Gemini alias, against `vlm_model/gemini.py`'s `prepare_inputs` + `generate` (26197d2): a
  VH row at 8K, and an ICL row at 128K of the length-true fixture (422 images), where run_api.sh:13-23 gives
  `--max_image_num 400 --max_image_size 384` (the last 400 images, at most 384 px a side, then PNG).
- MMNeedle through `claude-3-opus`, against `needle.py:149-181`'s call through Anthropic's SDK, and through
  `gpt-4o-2024-05-13`, against its Azure call (`:105-147`) through OpenAI's.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from builders.core.contract.reading import image_table
from builders.mmlongbench.build import build_mmlongbench
from harness.api import GenerationSettings
from tests.support.anthropic_server import AnthropicServer
from tests.support.chat_server import ChatServer
from tests.support.gemini_server import GeminiServer, generation_bodies
from tests.support.official_api_calls import (
    inline_bytes,
    needle_call,
    needle_gemini_body,
    needle_instruction,
    official_gemini_request,
    resolved_uploads,
)
from tests.support.official_openai_calls import hub_url, named_bytes, needle_azure_call, openai_model_call

VH_8K, ICL_128K = "niah_vh_single_8k", "icl_food101_128k"
GEMINI = {
    "gemini-2.0-flash": "gemini-2.0-flash-001",
    "gemini-2.0-flash-thinking": "gemini-2.0-flash-thinking-exp-01-21",
    "gemini-2.5-flash": "gemini-2.5-flash-preview-04-17",
    "gemini-2.5-pro": "gemini-2.5-pro-preview-03-25",
}


@pytest.fixture(scope="module")
def length_true(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_same_rows")
    build_mmlongbench(source="fixture:full", out_dir=root, configs=[VH_8K, ICL_128K], fixture_ids=1)
    return root


def _first_row(root: Path, config: str) -> tuple[str, list[bytes]]:
    """The config's first row: its prompt (the official user message) and its images' own bytes, in prompt order."""
    import datasets

    row = datasets.load_dataset(str(root / "mmlongbench"), config, split="test")[0]
    table = image_table(str(root / "mmlongbench"))
    return row["prompt"], [table.data(sha) for sha in row["image_sha256"]]


def _run(harness: Any, root: Path, out: Path, model: str, args: str, *tasks: str) -> None:
    run = harness(
        *("--tasks", ",".join(tasks), "--model", model, "--model_args", args),
        *("--data_dir", root, "--output_path", out, "--limit", "1"),
    )
    assert run.code == 0, run.err


def _gemini_side_by_side(
    harness: Any, root: Path, out: Path, alias: str, rows: dict[str, dict[str, int]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ours, the wrapper's): the first row of each config of `rows` (config -> run_api.sh's image limits there), run
    through `harness --model ALIAS` to one loopback server and built by `gemini.py` for the alias's snapshot to
    another; each generateContent body with its uploads resolved to their bytes, in the order of `rows`."""
    pytest.importorskip("google.genai")
    ours, official = GeminiServer(), GeminiServer()
    ours.start()
    official.start()
    try:
        args = f"base_url={ours.base_url},api_key=test-key,timeout=30"
        _run(harness, root, out, alias, args, *(f"mmlongbench_{config}" for config in rows))
        for config, limits in rows.items():
            text, images = _first_row(root, config)
            official_gemini_request(official, GEMINI[alias], text, images, 128, **limits)
    finally:
        ours.stop()
        official.stop()
    want = [resolved_uploads(official, body) for body in generation_bodies(official)]
    # the run's order is its own: ours in the order of their image counts, as `rows` lists them
    got = sorted((resolved_uploads(ours, body) for body in generation_bodies(ours)), key=_image_count)
    assert len(got) == len(want) == len(rows) and [_image_count(b) for b in want] == sorted(map(_image_count, want))
    return got, want


def _image_count(body: dict[str, Any]) -> int:
    return sum(1 for content in body["contents"] for part in content["parts"] if "file" in part)


@pytest.mark.slow  # a harness run through google-genai per alias
@pytest.mark.parametrize("alias", sorted(GEMINI))
def test_each_gemini_alias_sends_the_wrappers_request_for_the_same_8k_row(
    alias: str, length_true: Path, tmp_path: Path, harness
) -> None:
    """The contents (text parts as `re.split` cut them, each image uploaded as an RGB PNG) and the generationConfig
    (temperature and topP 1.0, one candidate, maxOutputTokens for 2.0-Flash only) of the wrapper's request."""
    (got,), (want,) = _gemini_side_by_side(harness, length_true, tmp_path / "out", alias, {VH_8K: {}})
    assert got == want
    assert _image_count(want) == 21  # the length-true 8K row's
    assert ("maxOutputTokens" in want["generationConfig"]) == (alias == "gemini-2.0-flash")


@pytest.mark.slow  # 2 x 422 images made PNG and uploaded through google-genai (a few minutes on a loaded machine)
def test_a_128k_row_of_422_images_goes_as_the_wrapper_sent_it(length_true: Path, tmp_path: Path, harness) -> None:
    """run_api.sh:103-110's `--max_image_num 400 --max_image_size 384` on ICL at 128K: the last 400 images, their
    earlier markers dropped from the text, each made RGB, fitted within 384 px (LANCZOS) and uploaded as PNG. The other
    aliases take the same path (`test_the_gemini_aliases_take_the_same_path_at_128k`)."""
    limits = {"max_image_num": 400, "max_image_size": 384}
    (got,), (want,) = _gemini_side_by_side(harness, length_true, tmp_path / "out", "gemini-2.5-pro", {ICL_128K: limits})
    assert got == want
    assert _image_count(want) == 400
    sizes = [Image.open(io.BytesIO(part["file"][2])).size for part in want["contents"][0]["parts"] if "file" in part]
    assert max(max(size) for size in sizes) == 384


def test_the_gemini_aliases_take_the_same_path_at_128k() -> None:
    """What a Gemini alias sends for a row is its input policy on the row's task and its backend settings: at 128K
    every alias has 2.5-Pro's but for the snapshot and its output limit, which the 8K test compares per alias."""
    from harness.models.aliases import alias_policy, resolve, task_benchmarks

    task = f"mmlongbench_{ICL_128K}"

    def path(alias: str) -> tuple[object, dict[str, str]]:
        _, args, _ = resolve(alias, {}, task_benchmarks([task]))
        return alias_policy(alias, task), {
            k: v for k, v in args.items() if k not in ("model", "max_output_tokens", "output_limit")
        }

    assert all(path(alias) == path("gemini-2.5-pro") for alias in GEMINI)
    assert path("gemini-2.5-pro")[0].describe() == {"keep_last_images": 400, "max_image_side": 384}


# ----------------------------------------------------------------------------------------- MMNeedle's API models

NEEDLE_TASKS = ("mmneedle_m1_n2_k1_pos", "mmneedle_m10_n1_k2_pos")  # one needle in one image; two in ten


def _needle_rows(data_dir: Path) -> list[tuple[list[bytes], str]]:
    """Each task's first row as needle.py reads it: its image files' bytes and the instruction it writes for it."""
    import datasets

    out = []
    for task in NEEDLE_TASKS:
        config = task.removeprefix("mmneedle_").removesuffix("_pos")
        found = datasets.load_dataset(str(data_dir / "mmneedle"), config, split="test")
        row = found.cast_column("images", datasets.Sequence(datasets.Image(decode=False)))[0]
        captions = row["captions"]
        instruction = needle_instruction(row["M"], row["N"], captions[0] if len(captions) == 1 else captions)
        out.append(([image["bytes"] for image in row["images"]], instruction))
    return out


@pytest.mark.slow  # a harness run through Anthropic's SDK
def test_mmneedles_claude_3_opus_sends_needle_pys_call_for_the_same_rows(
    data_dir: Path, tmp_path: Path, harness
) -> None:
    """`needle.py:149-181` on a one-needle row of one image and a two-needle row of ten: each image file's bytes as a
    base64 JPEG block, the instruction as needle.py writes it, max_tokens 300; the whole body equal."""
    pytest.importorskip("anthropic")
    ours, official = AnthropicServer(), AnthropicServer()
    ours.start()
    official.start()
    try:
        _run(
            harness,
            data_dir,
            tmp_path / "out",
            "claude-3-opus",
            f"base_url={ours.base_url},api_key=test-key",
            *NEEDLE_TASKS,
        )
        for images, instruction in _needle_rows(data_dir):
            needle_call(official, images, instruction)
    finally:
        ours.stop()
        official.stop()
    want, got = ([r.body for r in server.received if r.path == "/v1/messages"] for server in (official, ours))
    assert sorted(got, key=len_content) == sorted(want, key=len_content) and len(want) == 2


def len_content(body: dict[str, Any]) -> int:
    return len(body["messages"][0]["content"])


@pytest.mark.slow  # a harness run
def test_mmneedles_gpt_4o_sends_needle_pys_azure_call_for_the_same_rows(
    data_dir: Path, tmp_path: Path, harness, chat_server
) -> None:
    """`needle.py:105-147`, the Azure call the paper's GPT-4o ran, on the same two rows: every field equal but the
    model, which names the authors' deployment there and the snapshot here (the alias's named departure); and at
    api.openai.com itself the alias sends `max_tokens` as needle.py did, not the `max_completion_tokens` OpenAI's
    newer models take."""
    pytest.importorskip("openai")
    from harness.models.aliases import resolve, task_benchmarks
    from harness.models.registry import get_model_class
    from tests.support.model_requests import make_request

    official = ChatServer()
    official.start()
    try:
        args = f"base_url={chat_server.base_url},api_key=test-key"
        _run(harness, data_dir, tmp_path / "out", "gpt-4o-2024-05-13", args, *NEEDLE_TASKS)
        rows = _needle_rows(data_dir)
        for images, instruction in rows:
            needle_azure_call(official, images, instruction)
    finally:
        official.stop()
    assert all(r.path.endswith("/openai/deployments/gpt-4o/chat/completions") for r in official.received)
    assert all(r.query == {"api-version": ["2024-05-01-preview"]} for r in official.received)
    want = [{**r.body, "model": "gpt-4o-2024-05-13"} for r in official.received]
    got = [r.body for r in chat_server.received]
    assert sorted(got, key=len_content) == sorted(want, key=len_content) and len(want) == 2
    # At the provider: the alias resolved with no base_url, its payload for the ten-image row.
    backend, alias_args, _ = resolve("gpt-4o-2024-05-13", {"api_key": "test-key"}, task_benchmarks(NEEDLE_TASKS))
    at_openai = get_model_class(backend).from_args(alias_args)
    assert at_openai.base_url == "https://api.openai.com/v1"
    images, instruction = rows[1]
    request = make_request("r1", [*images, instruction], settings=GenerationSettings(max_gen_toks=300, seed=0))
    assert at_openai.payload(request) == {**max(want, key=len_content), "max_tokens": 300}


# ------------------------------------------------------------------------- MMLongBench's GPT-4o and Claude 3.7


@pytest.mark.slow  # a harness run per alias
@pytest.mark.parametrize(
    ("alias", "served", "by_url"),
    [("gpt-4o", "gpt-4o-2024-11-20", True), ("claude-3.7-sonnet", "claude-3-7-sonnet-20250219", False)],
)
def test_mmlongbenchs_gpt_4o_and_claude_send_openai_model_pys_request_for_the_same_8k_row(
    alias: str, served: str, by_url: bool, length_true: Path, tmp_path: Path, harness, chat_server
) -> None:
    """`openai_model.py` on the 8K VH row, as run_api.sh ran each: GPT-4o with the Hub's URLs (`:121-132`: the provider
    fetched each file, whose own bytes the alias sends as a data URL: its named departure), Claude with local files
    (`:154-162`: each decoded, made RGB and sent as a PNG, as the alias sends it at 8K and 16K). The prompt cut by
    `re.split` with its empty texts, `detail: auto` on every image, max_tokens, temperature 0.0, top_p 1.0."""
    pytest.importorskip("openai")
    official = ChatServer()
    official.start()
    try:
        _run(
            harness,
            length_true,
            tmp_path / "out",
            alias,
            f"base_url={chat_server.base_url},api_key=k",
            f"mmlongbench_{VH_8K}",
        )
        text, images = _first_row(length_true, VH_8K)
        openai_model_call(official, served, text, images, 128, url_of=hub_url if by_url else None)
    finally:
        official.stop()
    (got,), (want,) = (server.received for server in (chat_server, official))
    if by_url:
        assert named_bytes(got.body) == named_bytes(want.body)
    else:
        assert got.body == want.body
        assert all(
            p["image_url"]["url"].startswith("data:image/png;base64,")
            for p in got.body["messages"][0]["content"]
            if p["type"] == "image_url"
        )


@pytest.mark.slow  # a harness run through google-genai
@pytest.mark.parametrize("name", ["Gemini Pro 1.0", "Gemini Pro 1.5"])
def test_mmneedles_gemini_call_is_recorded_and_sends_needle_pys_request_body(
    name: str, data_dir: Path, tmp_path: Path, harness
) -> None:
    """The retired Gemini Pro 1.0 and 1.5 keep needle.py's call on record (`PaperModel.official_call`): run as
    `harness models` prints it, against a server that serves the snapshot, the `gemini` backend posts for the same two
    rows the body needle.py's google.generativeai call posts (`needle_gemini_body`), field by field: each stitched
    JPEG's own bytes inline, the instruction, candidateCount 1, stopSequences ['x'], maxOutputTokens 300, nothing
    else; only the endpoint differs (its named departure: needle.py streamed the answer)."""
    pytest.importorskip("google.genai")
    from tasks.mmneedle.paper_models import PAPER_MODELS as NEEDLE_MODELS

    run = next(model for model in NEEDLE_MODELS.models if model.name == name)
    assert run.alias is None and run.reason == "the provider has retired the snapshot the paper ran"
    assert run.official_call is not None and "streamGenerateContent" in run.departs
    _, model, _, args = run.official_call.split(" ")
    server = GeminiServer()
    server.start()
    try:
        _run(harness, data_dir, tmp_path / "out", model, f"{args},base_url={server.base_url},api_key=k", *NEEDLE_TASKS)
    finally:
        server.stop()
    sent = [r for r in server.received if r.method == "POST"]
    assert all(r.path == f"/v1beta/models/{run.ran}:generateContent" for r in sent)
    got = sorted((inline_bytes(r.body) for r in sent), key=lambda body: len(body["contents"][0]["parts"]))
    want = [needle_gemini_body(images, instruction) for images, instruction in _needle_rows(data_dir)]
    assert got == want
