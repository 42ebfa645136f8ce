"""The code around the vLLM engine, with `fake_vllm.FakeLLM` in its place: screening and bisection of a
rejected call inside `generate`, the image limit and chunking. Its replicas on Ray: test_vllm_replicas.py. The
engine itself runs in scripts/gpu_check.sh."""

from __future__ import annotations

import hashlib

import pytest

from harness.api import BackendFatalError
from harness.models.backends.vllm_engine.requests import build_conversation, request_payload
from harness.models.backends.vllm_engine.settings import engine_kwargs
from tests.support import fake_vllm
from tests.support.fake_vllm import HAVE_VLLM, fake_model, param, settings
from tests.support.model_requests import make_request


def _answer_parts(text: str) -> str:
    return text.split("|", 2)[2]


def test_generate_screens_bisects_and_keeps_order(jpeg_red, png_blue):
    from harness.api import ImageRef as Ref

    broken = Ref(hashlib.sha256(b"broken").hexdigest(), lambda: b"\xff\xd8\xff garbage", 4, 4)
    requests = [
        make_request("ok1", ["one", jpeg_red], doc_id=0),
        make_request("long", ["too long", jpeg_red, png_blue], text_tokens=5000, doc_id=1),
        make_request("ok2", [png_blue, "two", jpeg_red, png_blue], doc_id=2),
        make_request("rej", ["REJECT me"], doc_id=3),
        make_request("bad_image", ["three", broken], doc_id=4),
        make_request("pre", ["four", jpeg_red], prefix="Answer:", doc_id=5),
        make_request("ok3", ["five"], doc_id=6),
    ]
    fake_vllm.CALLS.clear()
    model = fake_model()
    model.observe(requests)
    try:
        responses = model.generate(requests)
    finally:
        model.close()
    by_id = {r.sample_id: resp for r, resp in zip(requests, responses, strict=True)}
    red, blue = requests[0].images[0].sha256[:8], requests[1].images[1].sha256[:8]
    assert _answer_parts(by_id["ok1"].text) == f"user:one;img:{red}:16x12"
    assert _answer_parts(by_id["ok2"].text) == f"img:{blue}:10x14;user:two;img:{red}:16x12;img:{blue}:10x14"
    assert _answer_parts(by_id["ok3"].text) == "user:five"
    assert _answer_parts(by_id["pre"].text) == f"user:four;img:{red}:16x12;assistant:Answer:"
    assert by_id["long"].error.startswith("over_length: 5192 prompt tokens")  # the rows' rule + 64 margin
    assert by_id["rej"].error.startswith("engine_rejected: ValueError: The decoder prompt")
    assert by_id["bad_image"].error.startswith("invalid_input: image does not decode")
    assert by_id["ok1"].usage == {"prompt_tokens": 9, "completion_tokens": 3, "cached_tokens": 0, "total_tokens": 12}

    # The engine: built once with the task's largest image count; the over-long prompt never reached it.
    assert {id(c["kwargs"]) for c in fake_vllm.CALLS} == {id(fake_vllm.CALLS[0]["kwargs"])}
    # the largest width and the largest height of any image, each from its own (16x12 and 10x14), so profiling
    # reserves an image as wide and as tall as any sent
    assert fake_vllm.CALLS[0]["kwargs"]["limit_mm_per_prompt"] == {
        "image": {"count": 3, "width": 16, "height": 14},
        "video": 0,
    }
    sent = [str(conv) for call in fake_vllm.CALLS for conv in call["conversations"]]
    assert not any("too long" in s for s in sent)
    prefix_calls = [c for c in fake_vllm.CALLS if c["continue_final_message"]]
    assert len(prefix_calls) == 1 and not prefix_calls[0]["add_generation_prompt"]
    assert len(prefix_calls[0]["conversations"]) == 1
    assert all(
        param(p, "max_tokens") == 16 and param(p, "temperature") == 0.0 for c in fake_vllm.CALLS for p in c["sampling"]
    )
    # Bisection: the first call held ok1, ok2, rej, ok3 and was rejected; halves were tried again.
    plain = [len(c["conversations"]) for c in fake_vllm.CALLS if not c["continue_final_message"]]
    assert plain == [4, 2, 2, 1, 1]
    # Where the time went: one engine call per group of chat flags (the bisection inside it is the same call), the
    # over-long request never sent, the undecodable image sent and failed there.
    stats = model.statistics()
    assert (stats["engine_calls"], stats["engine_requests"]) == (2, 6) and stats["engine_call_seconds"] > 0


def test_engine_limit_and_chunks(jpeg_red):
    model = fake_model(chunk_size=3, chunk_tokens=10_000, max_images=4, max_model_len=20_000)
    first = [make_request(f"a{i}", [f"x{i}", jpeg_red], doc_id=i, image_tokens=(3000,)) for i in range(7)]
    chunks = list(model.batches(first))
    # 3 requests per chunk, but at most 10,000 prompt tokens: 3 x 3001 fits, so chunks of 3, 3, 1.
    assert [len(c) for c in chunks] == [3, 3, 1]
    assert [r.sample_id for c in chunks for r in c] == [r.sample_id for r in first]  # doc order kept
    try:
        assert all(r.ok for r in model.generate(chunks[0]))
        assert model.image_limit == 1
        # Three requests holding one image: sent three times under one name (its sha256), recorded as such.
        stats = model.statistics()
        assert (stats["engine_images"], stats["engine_distinct_images"]) == (3, 1)
        later = make_request("b", ["y", jpeg_red, jpeg_red])
        (response,) = model.generate([later])
        assert response.error.startswith("too_many_images: 2 images > limit_mm_per_prompt=1")  # its image count
        assert "max_images=N" in response.error
    finally:
        model.close()


def test_in_process_engine_that_fails_to_start_is_reported_once(tmp_path, monkeypatch):
    """...and leaves no log behind where its engine wrote none (nor names one in the line)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the engine's temporary log goes
    model = fake_model(pretrained="explode")
    for _ in range(2):
        with pytest.raises(BackendFatalError, match="could not start: RuntimeError: cannot load model 'explode'$"):
            model.generate([make_request("x", ["q"])])
    assert not list(tmp_path.iterdir())


def test_the_engine_log_is_bounded_and_a_temporary_one_goes_unless_a_line_named_it(tmp_path):
    """What the engine's processes write to this process's stdout and stderr (`EngineOutput`): in the run's folder,
    past `max_bytes` the file becomes NAME.1 (the one before dropped) and a new one starts; without a run folder in a
    temporary file, removed at the end unless a line named it (the engine's failure)."""
    import os

    from harness.models.backends.vllm_engine.engine_log import EngineOutput

    def written(output: EngineOutput, lines: int) -> EngineOutput:
        with output.captured():
            for i in range(lines):
                os.write(1, f"line {i:04d} of the engine's log\n".encode())
        output.close()  # the reader ends with the pipe, once it has read every line
        return output

    written(EngineOutput(tmp_path / "engine_model.log", max_bytes=10_000), 2000)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["engine_model.log", "engine_model.log.1"]
    newest, before = (tmp_path / "engine_model.log").read_text(), (tmp_path / "engine_model.log.1").read_text()
    assert len(newest) <= 10_040 and len(before) <= 10_040 and newest.endswith("line 1999 of the engine's log\n")
    assert before.splitlines()[-1].split()[1] == f"{int(newest.split()[1]) - 1:04d}"  # the lines before, whole

    temporary = written(EngineOutput(), 10)
    assert temporary.temporary and not temporary.path.exists()
    named = EngineOutput()
    line = f"(the engine's log: {named.named()})"
    assert named.path.parent != tmp_path and str(named.path) in line
    assert written(named, 10).path.read_text().count("\n") == 10
    named.path.unlink()


def content_part_parser():
    """vLLM's parser of one chat content part: 0.33 keeps it in `vllm.renderers.chat_utils`, 0.25 (the
    version run on a GPU, bench/RESULTS.md) in `vllm.entrypoints.chat_utils`."""
    import importlib

    for module, name in (
        ("vllm.renderers.chat_utils.chat_message", "parse_chat_message_content_mm_part"),
        ("vllm.entrypoints.chat_utils", "_parse_chat_message_content_mm_part"),
    ):
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    pytest.skip("no content-part parser in this vLLM")


@pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not installed")
def test_engine_kwargs_and_chat_options_match_vllm_signatures(jpeg_red):
    import dataclasses
    import inspect

    arg_utils = pytest.importorskip("vllm.engine.arg_utils")  # needs more of vLLM's dependencies
    from vllm.entrypoints.llm import LLM

    s = settings(
        max_pixels=1003520,
        min_pixels=3136,
        distributed_executor_backend="ray",
        enable_prefix_caching=True,
        max_num_seqs=64,
        max_num_batched_tokens=16384,
        mm_processor_cache_gb=4,
        hf_overrides={"a": 1},
        revision="main",
        tokenizer="t",
        chat_template="{{ messages }}",
        num_gpu_blocks_override=64,
        kv_cache_dtype="fp8",
        mm_encoder_tp_mode="data",
        skip_mm_profiling=True,
    )
    kwargs = engine_kwargs(s, {"image": {"count": 10, "width": 640, "height": 480}, "video": 0})
    llm_params = set(inspect.signature(LLM.__init__).parameters)
    engine_fields = {f.name for f in dataclasses.fields(arg_utils.EngineArgs)}
    assert set(kwargs) <= engine_fields | llm_params
    from vllm.config.multimodal import MultiModalConfig  # validates the limit the way the engine will

    config = MultiModalConfig(
        limit_per_prompt=kwargs["limit_mm_per_prompt"], mm_processor_kwargs=kwargs["mm_processor_kwargs"]
    )
    assert (config.get_limit_per_prompt("image"), config.get_limit_per_prompt("video")) == (10, 0)
    image = config.limit_per_prompt.get("image")
    assert (image.width, image.height) == (640, 480)  # the size vLLM's profiling gives its dummy images
    chat_params = set(inspect.signature(LLM.chat).parameters)
    assert {
        "sampling_params",
        "use_tqdm",
        "chat_template_content_format",
        "add_generation_prompt",
        "continue_final_message",
    } <= chat_params

    # vLLM's own content-part parser reads our parts as text and PIL images, in order.
    conversation = build_conversation(request_payload(make_request("v", ["a", jpeg_red, "b"]), default_seed=0))
    parsed = [content_part_parser()(p) for p in conversation[0]["content"]]
    assert [kind for kind, _ in parsed] == ["text", "image_pil", "text"]
    assert parsed[0][1] == "a" and parsed[1][1].size == (16, 12)
