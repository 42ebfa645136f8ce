"""The `vllm` backend without a GPU: argument parsing, engine arguments, over-length screening,
conversation and sampling-parameter building, output mapping (with vLLM's own classes when vLLM is
importable), and its wiring to aliases and the runner. The code around the engine (chunking, bisection,
replicas) is in test_vllm_engines.py; the engine itself runs in scripts/gpu_check.sh."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from harness.api import GenerationSettings
from harness.models.backends.vllm_engine.backend import VLLMModel
from harness.models.backends.vllm_engine.requests import (
    build_conversation,
    output_result,
    request_payload,
    sampling_kwargs,
    screen_request,
)
from harness.models.backends.vllm_engine.settings import VLLMSettings, engine_kwargs, vllm_settings
from harness.models.registry import get_model_class
from harness.models.shared.engine_calls import result_response
from tests.support import fake_vllm
from tests.support.fake_vllm import FAKE_LLM, FAKE_SAMPLING, HAVE_VLLM, fake_model, settings, sized_ref
from tests.support.model_requests import make_request


def _from_args(args: dict[str, str]) -> VLLMModel:
    """`from_args` as the CLI calls it, past its vLLM-installed check (vLLM is not needed to parse)."""
    return VLLMModel(vllm_settings(args), llm_factory=FAKE_LLM, sampling_factory=FAKE_SAMPLING)


@pytest.mark.skipif(HAVE_VLLM, reason="vllm is installed")
def test_missing_vllm_is_a_clear_error_at_construction():
    with pytest.raises(ImportError, match=r"pip install -e '\.\[vllm\]'"):
        get_model_class("vllm").from_args({"pretrained": "x"})


def test_model_args_are_typed_aliased_and_checked():
    model = _from_args(
        {
            "pretrained": "Qwen/Qwen2.5-VL-7B-Instruct",
            "context_length": "32768",
            "max_pixels": "1003520",
            "tensor_parallel_size": "2",
            "enable_prefix_caching": "false",
            "gpu_memory_utilization": "0.85",
            "hf_overrides": '{"rope_scaling": {"type": "yarn", "factor": 4}}',
            "max_images": "24",
        }
    )
    assert isinstance(model, VLLMModel)
    s = model.settings
    assert (s.max_model_len, s.max_pixels, s.gpus) == (32768, 1003520, 2)
    assert s.engine == {  # each typed by its EngineArgs field
        "max_model_len": 32768,
        "tensor_parallel_size": 2,
        "enable_prefix_caching": False,
        "gpu_memory_utilization": 0.85,
        "hf_overrides": {"rope_scaling": {"type": "yarn", "factor": 4}},
    }
    assert model.facts.context_length == 32768 and model.facts.max_images == 24
    identity = model.identity()
    assert identity["pretrained"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert identity["mm_processor_kwargs"] == {"max_pixels": 1003520}
    assert "tensor_parallel_size" not in identity  # parallelism does not change answers
    with pytest.raises(ValueError, match="unknown model argument 'batch'"):
        _from_args({"pretrained": "x", "batch": "3"})
    with pytest.raises(ValueError, match="model argument max_model_len: --max-model-len on its command line takes"):
        _from_args({"pretrained": "x", "max_model_len": "long"})
    with pytest.raises(ValueError, match="tensor_parallel_size=0: must be at least 1"):
        _from_args({"pretrained": "x", "tp": "0"})
    # the backend's own, and the engine's it reads itself, checked as --model_args and as settings made in code
    for name in ("max_images", "max_pixels", "min_pixels", "chunk_size", "chunk_tokens", "decode_workers"):
        with pytest.raises(ValueError, match=f"{name}=0: must be at least 1"):
            _from_args({"pretrained": "x", name: "0"})
        with pytest.raises(ValueError, match=f"{name}=0: must be at least 1"):
            VLLMSettings(pretrained="x", **{name: 0})
    for name in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size"):
        with pytest.raises(ValueError, match=f"{name}=0: must be at least 1"):
            _from_args({"pretrained": "x", name: "0"})
        with pytest.raises(ValueError, match=f"{name}=0: must be at least 1"):
            VLLMSettings(pretrained="x", engine={name: 0})
    with pytest.raises(ValueError, match="pretrained"):
        _from_args({"max_model_len": "10"})


def test_engine_kwargs():
    s = settings(
        min_pixels=3136,
        max_pixels=1003520,
        distributed_executor_backend="ray",
        tensor_parallel_size=4,
        enable_prefix_caching=True,
        mm_processor_kwargs={"fps": 1},
        hf_overrides={"a": 1},
        num_gpu_blocks_override=54953,
    )
    limit = {"image": {"count": 10, "width": 640, "height": 480}, "video": 0}
    kwargs = engine_kwargs(s, limit)
    assert kwargs["num_gpu_blocks_override"] == 54953  # a 7B model's KV cache on an H100, in 16-token blocks
    assert kwargs["limit_mm_per_prompt"] == limit
    assert kwargs["mm_processor_kwargs"] == {"fps": 1, "min_pixels": 3136, "max_pixels": 1003520}
    assert kwargs["max_model_len"] == 2048 and kwargs["tensor_parallel_size"] == 4
    assert kwargs["distributed_executor_backend"] == "ray" and kwargs["enable_prefix_caching"] is True
    assert kwargs["generation_config"] == "vllm" and kwargs["hf_overrides"] == {"a": 1}
    assert kwargs["gpu_memory_utilization"] == 0.9  # the backend's, where vLLM 0.33's is 0.92
    assert "data_parallel_size" not in kwargs  # replicas are the Ray pool's; LLM(data_parallel_size>1) refuses
    plain = engine_kwargs(VLLMSettings(pretrained="m"), {"image": 1})
    assert plain == {
        "model": "m",
        "generation_config": "vllm",
        "gpu_memory_utilization": 0.9,
        "limit_mm_per_prompt": {"image": 1},
    }


@pytest.mark.slow
def test_a_checkpoint_whose_processor_cannot_be_loaded_is_estimated_by_its_family():
    """No processor to count with (not in a local folder or the Hub cache, no Hub here): Qwen2.5-VL's family rule under
    the run's pixel limits, markers included, plus the template margin, and the rule says it is an estimate."""
    # MMNeedle N=8 (2048 px) and N=4 (1024 px) stitched images; the rows count them uncapped.
    request = make_request(
        "a", ["q", sized_ref(2048, 2048), sized_ref(1024, 1024)], text_tokens=10, image_tokens=(5329, 1369)
    )
    qwen = fake_model(pretrained="Qwen/Qwen2.5-VL-7B-Instruct", max_pixels=28 * 28 * 1280, length_margin=64)
    # With Qwen2.5-VL's default cap, both become 35 x 35 = 1225 tokens (ecosystem.md §3.4 table), + 2 markers each.
    assert qwen.prompt_tokens(request) == 10 + 2 * (1225 + 2) + 64 and not qwen.exact(request)
    assert qwen.token_rule.startswith("an estimate: the rows' text_tokens + each image by the Qwen2-VL family's rule")
    assert "Qwen/Qwen2.5-VL-7B-Instruct could not be loaded" in qwen.token_rule
    unknown = fake_model(pretrained="org/unknown-vlm", length_margin=0)
    assert unknown.prompt_tokens(request) == 10 + 5329 + 1369  # the rows' own figures, said so
    assert "no family rule is known for org/unknown-vlm" in unknown.token_rule


def test_screening_rule_and_its_boundary():
    s = settings(max_model_len=1000)
    gen = GenerationSettings(max_gen_toks=100)
    fits = make_request("f", ["q", sized_ref(1, 1), sized_ref(2, 2)], settings=gen)
    assert screen_request(fits, s, prompt_tokens=900, max_model_len=1000, image_limit=4) is None  # exactly 1000
    reason = screen_request(fits, s, prompt_tokens=901, max_model_len=1000, image_limit=4)
    assert reason == "over_length: 901 prompt tokens + 100 to generate > max_model_len 1000"
    many = make_request("m", ["q"] + [sized_ref(i, i) for i in range(1, 4)], image_tokens=(1, 1, 1))
    assert screen_request(many, s, prompt_tokens=1, max_model_len=1000, image_limit=2).startswith(
        "too_many_images: 3 images > limit_mm_per_prompt=2 of the running engine"
    )
    capped = settings(max_images=2)
    assert "the model's cap max_images=2" in screen_request(
        many, capped, prompt_tokens=1, max_model_len=1000, image_limit=2
    )


def test_sampling_kwargs_are_explicit():
    greedy = sampling_kwargs(GenerationSettings(max_gen_toks=40, until=("\n",), temperature=0.9), default_seed=7)
    assert greedy == {
        "n": 1,
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 40,
        "stop": ["\n"],
        "seed": 7,
        "skip_special_tokens": True,
    }
    sampled = sampling_kwargs(GenerationSettings(do_sample=True, temperature=0.6, top_p=0.8, seed=3), default_seed=7)
    assert (sampled["temperature"], sampled["top_p"], sampled["seed"]) == (0.6, 0.8, 3)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not installed")
def test_sampling_params_accepted_by_vllm():
    from vllm import SamplingParams

    params = SamplingParams(**sampling_kwargs(GenerationSettings(max_gen_toks=40, until=("Caption",)), default_seed=0))
    assert (params.temperature, params.max_tokens, params.stop, params.seed) == (0.0, 40, ["Caption"], 0)
    assert params.sampling_type.name == "GREEDY"


def test_conversation_keeps_parts_in_order(jpeg_red, png_blue):
    request = make_request("c", ["Look", jpeg_red, "and", png_blue, ""], system="Be brief.", prefix="Answer:")
    payload = request_payload(request, default_seed=0)
    conversation = build_conversation(payload)
    assert [m["role"] for m in conversation] == ["system", "user", "assistant"]
    user = conversation[1]["content"]
    assert [p["type"] for p in user] == ["text", "image_pil", "text", "image_pil"]  # empty text dropped
    assert [p["uuid"] for p in user if p["type"] == "image_pil"] == [i.sha256 for i in request.images]
    assert [p["image_pil"].size for p in user if p["type"] == "image_pil"] == [(16, 12), (10, 14)]
    assert all(p["image_pil"].mode == "RGB" for p in user if p["type"] == "image_pil")
    assert conversation[2] == {"role": "assistant", "content": [{"type": "text", "text": "Answer:"}]}


@pytest.mark.slow  # vLLM's input processor built on the CPU (~3 s)
@pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not installed")
def test_rendered_prompts_name_each_image_by_its_sha256_for_vllms_caches(jpeg_red, png_blue):
    """Issue 33: `LLM.generate`'s input carries each image's `image_sha256` as its `multi_modal_uuids` entry, so
    the engine hashes no pixels and an image recurring across rows finds its cache entries; checked with vLLM's own
    prompt type, data parser and multimodal hashing (the processor and prefix caches' keys), on the CPU."""
    from vllm.inputs.llm import TextPrompt
    from vllm.multimodal.parse import MultiModalDataParser
    from vllm.multimodal.processing.inputs import ProcessorInputs
    from vllm.renderers.base import parse_mm_uuids

    from harness.models.backends.vllm_engine.requests import engine_prompt

    first = make_request("a", [jpeg_red, "one", png_blue, "two"])
    second = make_request("b", [png_blue, "three", jpeg_red], doc_id=1)  # the same images, another row and order
    prompts = [engine_prompt({**request_payload(r, default_seed=0), "prompt": "p"}) for r in (first, second)]
    assert set(prompts[0]) <= TextPrompt.__required_keys__ | TextPrompt.__optional_keys__
    assert [p["multi_modal_uuids"] for p in prompts] == [
        {"image": [i.sha256 for i in r.images]} for r in (first, second)
    ]

    def engine_hashes(prompt, **kwargs):
        items = MultiModalDataParser().parse_mm_data(prompt["multi_modal_data"])
        inputs = ProcessorInputs([1], items, parse_mm_uuids(prompt["multi_modal_uuids"]), **kwargs)
        return inputs.get_mm_hashes("m", "sha256")["image"]

    red, blue = first.images[0].sha256, first.images[1].sha256
    assert engine_hashes(prompts[0]) == [red, blue] and engine_hashes(prompts[1]) == [blue, red]  # no pixels hashed
    # Processor settings are folded into the id by vLLM: still one id per image, whatever row shows it.
    scaled = [engine_hashes(p, hf_processor_mm_kwargs={"max_pixels": 1024}) for p in prompts]
    assert scaled[0] == scaled[1][::-1] and scaled[0][0] != red and len(set(scaled[0])) == 2
    assert "multi_modal_uuids" not in engine_prompt(
        {**request_payload(make_request("t", ["text"]), default_seed=0), "prompt": "p"}
    )


@pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not installed")
def test_output_mapping_with_vllm_classes():
    from vllm.outputs import CompletionOutput, RequestOutput

    completion = CompletionOutput(
        index=0, text="1, 2, 3", token_ids=[5, 6, 7, 8], cumulative_logprob=None, logprobs=None, finish_reason="stop"
    )
    output = RequestOutput(
        request_id="0",
        prompt=None,
        prompt_token_ids=list(range(120)),
        prompt_logprobs=None,
        outputs=[completion],
        finished=True,
        num_cached_tokens=64,
    )
    response = result_response(output_result(output))
    assert response.text == "1, 2, 3" and response.finish_reason == "stop"
    assert response.usage == {"prompt_tokens": 120, "completion_tokens": 4, "cached_tokens": 64, "total_tokens": 124}
    aborted = RequestOutput(
        request_id="1",
        prompt=None,
        prompt_token_ids=[1],
        prompt_logprobs=None,
        outputs=[CompletionOutput(0, "", [], None, None, finish_reason="abort")],
        finished=True,
    )
    assert result_response(output_result(aborted)).error == "engine_error: generation ended with finish_reason=abort"


def test_output_mapping_duck_typed():
    output = SimpleNamespace(
        outputs=[SimpleNamespace(text="-1", token_ids=[1, 2], finish_reason="length")],
        prompt_token_ids=[0] * 9,
        num_cached_tokens=None,
    )
    response = result_response(output_result(output))
    assert (response.text, response.finish_reason) == ("-1", "length")
    assert response.usage == {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    empty = result_response(output_result(SimpleNamespace(outputs=[], prompt_token_ids=None)))
    assert empty.text is None and empty.error.startswith("engine_error")


# --- wiring: aliases, and the runner with the engine stand-in ---------------------------------------


def test_every_alias_resolves_to_vllm_engine_arguments():
    from harness.errors import UserError
    from harness.models.aliases import ALIASES
    from harness.run.plan import resolve_model

    choice = resolve_model("qwen2.5-vl", {"backend": "vllm", "tensor_parallel_size": "2"})
    backend, args, alias = choice.backend, choice.args, choice.alias
    assert (backend, alias) == ("vllm", "qwen2.5-vl")
    settings = vllm_settings(args)
    kwargs = engine_kwargs(settings, {"image": 10, "video": 0})
    assert kwargs["model"] == "Qwen/Qwen2.5-VL-7B-Instruct" and kwargs["max_model_len"] == 139264
    assert "mm_processor_kwargs" not in kwargs and kwargs["tensor_parallel_size"] == 2  # Qwen's own pixel limits
    model = VLLMModel(settings, llm_factory=FAKE_LLM, sampling_factory=FAKE_SAMPLING)
    assert (model.facts.context_length, model.facts.max_pixels) == (139264, None)  # what the runner screens with
    # Every open model's alias has arguments the vllm backend knows (context_length -> max_model_len, ...); an API
    # model's (base_url, ...) are its API backend's (openai, gemini, anthropic).
    for name, entry in ALIASES.items():
        if entry.backend not in ("hf", "vllm"):
            continue
        # the hf backend's pinpoint cap and its text-only path: refused elsewhere, not dropped
        if "max_grid_tiles" in entry.args or entry.args.get("text_only") == "true":
            with pytest.raises(UserError, match="hf backend only"):
                resolve_model(name, {"backend": "vllm"})
            continue
        args = resolve_model(name, {"backend": "vllm"}).args
        settings = vllm_settings(args)
        assert settings.pretrained == entry.args.get("pretrained", entry.args.get("model")), name
        limit = entry.args.get("context_length", entry.args.get("max_model_len"))
        if entry.args.get("no_context_limit") == "true":  # an hf alias: vLLM gets the official vllm serve length
            limit = "139264"
        assert settings.max_model_len == (int(limit) if limit else None), name


def test_a_given_max_model_len_passes_the_configs_window_only_when_told(monkeypatch):
    from harness.models.backends.vllm_engine.engines import LocalEngine

    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    LocalEngine({"model": "m", "max_model_len": 139264}, llm_factory=FAKE_LLM, sampling_factory=FAKE_SAMPLING).close()
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in os.environ
    LocalEngine(
        {"model": "m", "max_model_len": 139264}, llm_factory=FAKE_LLM, sampling_factory=FAKE_SAMPLING, past_window=True
    ).close()
    assert os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1"  # as the official `vllm serve` line for 128K


def test_alias_through_an_openai_compatible_server(chat_server):
    from harness.run.models import make_model
    from harness.run.plan import resolve_model

    choice = resolve_model("qwen2.5-vl", {"backend": "openai", "base_url": chat_server.base_url})
    model = make_model("qwen2.5-vl", choice.backend, choice.args, 1, None)
    try:
        # `vllm serve Qwen/Qwen2.5-VL-7B-Instruct` serves the checkpoint under its own name.
        assert model.identity()["served_model"] == "Qwen/Qwen2.5-VL-7B-Instruct"
        assert (model.facts.context_length, model.facts.max_pixels) == (139264, None)
    finally:
        model.close()


def test_runner_sizes_the_engine_for_the_whole_run_and_maps_statuses(mmneedle_dir, tmp_path):
    """Through the runner: the engine is built once with the largest image count of all tasks (the
    first task has one image per row, the second ten), and the runner screens with the backend's own
    count (its template margin included): over-length prompts are recorded as `over_length`, never sent."""
    import json

    from harness.config.task_index import TaskIndex
    from harness.running.runner import Runner, RunOptions
    from harness.running.task.task import Task

    index = TaskIndex([])
    tasks = [Task(index.tasks[name]) for name in ("mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k1_neg")]
    for task in tasks:
        task.load(mmneedle_dir)
    gen = {"max_gen_toks": 8}
    settings0 = tasks[0].generation_settings(gen, 0)
    request = tasks[0].build_request(0, tasks[0].doc(0), settings0)
    longest = max(tasks[1].build_request(i, tasks[1].doc(i), settings0).token_count for i in range(len(tasks[1])))
    # The runner screens prompt + max_gen_toks against max_model_len; the backend adds its template margin.
    max_model_len = longest + 8 + 20
    assert request.token_count + 8 < max_model_len
    fake_vllm.CALLS.clear()
    model = fake_model(max_model_len=max_model_len, length_margin=64)
    out = tmp_path / "out"
    try:
        results = Runner(model, RunOptions(data_dir=mmneedle_dir, gen_kwargs=gen, output_dir=out, progress=False)).run(
            tasks
        )
    finally:
        model.close()
    assert {id(c["kwargs"]) for c in fake_vllm.CALLS} == {id(fake_vllm.CALLS[0]["kwargs"])}  # one engine
    # the largest image count of the run and the largest width and height among the images sent
    sizes = [
        (image.width, image.height)
        for task in tasks
        for i in range(len(task))
        for image in task.build_request(i, task.doc(i), settings0).images
    ]
    image = fake_vllm.CALLS[0]["kwargs"]["limit_mm_per_prompt"]["image"]
    assert image == {"count": 10, "width": max(w for w, _ in sizes), "height": max(h for _, h in sizes)}
    first, second = results
    assert first.counts["ok"] == len(tasks[0]) and first.usage["prompt_tokens"] > 0
    assert second.counts["over_length"] > 0 and second.counts["error"] == 0
    records = [json.loads(line) for line in (out / "journal_mmneedle_m10_n1_k1_neg.jsonl").read_text().splitlines()[1:]]
    over = [r for r in records if r["status"] == "over_length"]
    assert len(over) == second.counts["over_length"] and all(
        r["error"].endswith(f"> context {max_model_len}") for r in over
    )
    assert all(
        r["token_count"]
        == model.prompt_tokens(tasks[1].build_request(r["doc_id"], tasks[1].doc(r["doc_id"]), settings0))
        for r in over
    )
    sent = {
        len([p for m in conv for p in m["content"] if p["type"] == "image_pil"])
        for call in fake_vllm.CALLS
        for conv in call["conversations"]
    }
    assert (
        sent <= {1, 10} and sum(len(c["conversations"]) for c in fake_vllm.CALLS) == len(tasks[0]) + second.counts["ok"]
    )
    # The results record how images were named to the engine, and how many it was sent and saw more than once.
    uuids = fake_vllm.image_uuids_sent()
    stats = model.statistics()
    assert stats["engine_images"] == len(uuids)
    assert stats["engine_distinct_images"] == len(set(uuids))
    assert stats["engine_image_ids"] == "image_sha256 (vLLM's multi_modal_uuids)"


def test_a_tasks_text_round_trip_uses_the_engines_tokenizer(sentencepiece, tmp_path):
    """MileBench re-decodes every context piece with the model's tokenizer (`harness.inputs.round_trip`): the backend loads
    the engine's tokenizer (here `tokenizer=`, a SentencePiece one, which drops a piece's leading space) and the
    engine receives the re-decoded text; the journal records it, and its input hash is the task's prompt."""
    import json

    import datasets
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    from builders.core import contract
    from builders.milebench.build import build_milebench
    from harness.config.task_index import TaskIndex
    from harness.running.cache import input_sha256
    from harness.running.runner import Runner, RunOptions
    from harness.running.task.task import Task

    data = tmp_path / "data"
    build_milebench(source="fixture", out_dir=data, configs=["clevr_change"])
    tokenizer_dir = tmp_path / "tokenizer"
    PreTrainedTokenizerFast(tokenizer_object=sentencepiece(), bos_token="<s>", eos_token="</s>").save_pretrained(
        tokenizer_dir
    )
    task = Task(TaskIndex([]).tasks["milebench_clevr_change"])
    task.load(data)
    model = fake_model(tokenizer=str(tokenizer_dir), max_model_len=4096)
    out = tmp_path / "out"
    try:
        (result,) = Runner(
            model, RunOptions(data_dir=data, gen_kwargs={"max_gen_toks": 4}, output_dir=out, progress=False)
        ).run([task])
    finally:
        model.close()
    assert result.counts["ok"] == 3
    rows = datasets.load_dataset(
        "parquet", data_files={"test": contract.split_files(data / "milebench", "clevr_change", "test")}, split="test"
    )
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    question = tokenizer.decode(tokenizer(" Describe the change:", add_special_tokens=False).input_ids)
    assert question == "Describe the change:"
    records = [json.loads(line) for line in (out / "journal_milebench_clevr_change.jsonl").read_text().splitlines()[1:]]
    settings0 = task.generation_settings({"max_gen_toks": 4}, 0)
    for record in records:
        row = rows[record["doc_id"]]
        # The stand-in engine answers with what it received: each text part after "user:".
        texts = "".join(
            p.removeprefix("user:") for p in record["response"].split("|", 2)[2].split(";") if p.startswith("user:")
        )
        # "<image>\n<image>\n" or "<image>\n<image>\n<image>" (the worker's line breaks) before the question
        assert texts == row["instruction"] + "\n\n\n" + question
        assert record["text_round_trip"]["changed"] is True
        request = task.build_request(record["doc_id"], task.doc(record["doc_id"]), settings0)
        assert record["input_sha256"] == input_sha256(request)  # the task's prompt, not the re-decoded one
