"""The `sglang` backend without a GPU: its model arguments read from SGLang 0.5.23's own `ServerArgs` and
`SamplingParams` (installed here without CUDA, requirements/sglang-classes.txt), each request's sampling parameters
built into SGLang's own `SamplingParams`, the screen, the cache order, the image cache's size, and the calls around the
engine through the stand-in engine (tests/support/fake_sglang.py: the real one needs a GPU; scripts/sglang_check.sh
runs it beside vLLM). The request it builds, against SGLang's request classes: test_sglang_requests.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.api import GenerationSettings
from harness.models.registry import backend_spec, get_model_class
from tests.support import fake_sglang
from tests.support.model_requests import encode_image, image_ref, make_request

server_args = pytest.importorskip("sglang.srt.server_args", reason="SGLang's classes (make test installs them)")
sampling = pytest.importorskip("sglang.srt.sampling.sampling_params", reason="SGLang's classes")

from harness.models.backends.sglang_engine.backend import SGLangModel  # noqa: E402
from harness.models.backends.sglang_engine.requests import ImageCache, sampling_params  # noqa: E402
from harness.models.backends.sglang_engine.settings import engine_kwargs, model_settings  # noqa: E402
from harness.models.shared.engine_calls import screen_request  # noqa: E402


def test_server_args_fields_pass_typed_by_sglangs_declaration_and_build_it():
    settings = model_settings(
        {
            "model": "Qwen/Qwen2.5-VL-7B-Instruct",
            "tp_size": "2",
            "mem_fraction_static": "0.85",
            "quantization": "fp8",  # one of its CLI's choices
            "chunked_prefill_size": "8192",
            "disable_radix_cache": "false",
            "limit_mm_data_per_request": '{"image": 64}',
            "mm_process_config": '{"image": {"min_pixels": 3136}}',
            "max_pixels": "1003520",
            "context_length": "139264",
        }
    )
    assert settings.pretrained == "Qwen/Qwen2.5-VL-7B-Instruct" and settings.max_pixels == 1003520
    kwargs = engine_kwargs(settings)
    assert kwargs["mm_process_config"] == {"image": {"min_pixels": 3136, "max_pixels": 1003520}}
    built = server_args.ServerArgs(**kwargs)  # SGLang's own declaration takes every one by name
    assert (built.model_path, built.tp_size, built.mem_fraction_static, built.quantization) == (
        "Qwen/Qwen2.5-VL-7B-Instruct",
        2,
        0.85,
        "fp8",
    )
    assert (built.chunked_prefill_size, built.disable_radix_cache, built.context_length) == (8192, False, 139264)
    assert built.limit_mm_data_per_request == {"image": 64}
    # what counting and the screen read of them
    assert (settings.context_length, settings.processor_kwargs()) == (
        139264,
        {"min_pixels": 3136, "max_pixels": 1003520},
    )
    assert SGLangModel(settings).facts.max_images == 64  # SGLang's own per-request image limit screens


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"mem_fraction_statc": "0.8"}, "unknown model argument 'mem_fraction_statc'"),
        ({"mem_fraction_statc": "0.8"}, "did you mean mem_fraction_static?"),
        ({"repetition_penalt": "1.05"}, "did you mean repetition_penalty?"),
        ({"tp_size": "two"}, "model argument tp_size: --tp-size on its command line takes int"),
        ({"tokenizer_mode": "fast"}, "--tokenizer-mode on its command line takes one of auto, slow"),  # not Engine's
        ({"top_k": "many"}, "SamplingParams.top_k expects int"),
        ({"tokenizer_path": "other/tok"}, "rendered and counted by the checkpoint's own processor"),
        ({"skip_tokenizer_init": "true"}, "sends each prompt as text"),
        ({"allow_auto_truncate": "true"}, "prompts are never cut here"),
        ({"max_new_tokens": "64"}, "write --gen_kwargs max_gen_toks=..."),
        ({"temperature": "0.7"}, "write --gen_kwargs temperature=..."),
        ({"n": "4"}, "one answer a request"),
        ({"max_pixels": "100", "mm_process_config": '{"image": {"max_pixels": 200}}'}, "max_pixels is given twice"),
        ({"model_path": "a/b"}, "'pretrained' given twice"),
        ({"request_order": "random"}, "request_order must be one of"),
    ],
)
def test_what_is_not_a_field_or_collides_with_the_backends_own_is_one_line(args, said):
    with pytest.raises(ValueError) as err:
        model_settings({"pretrained": "org/model", **args})
    assert said in str(err.value) and "\n" not in str(err.value)


def test_a_secret_value_is_never_shown_and_never_recorded():
    with pytest.raises(ValueError) as err:
        model_settings({"pretrained": "org/model", "tp_size": "sk-secret-123"})
    assert "sk-secret" not in str(err.value)
    settings = model_settings({"pretrained": "org/model", "api_key": "sk-secret-123"})
    assert settings.server_args == {"api_key": "sk-secret-123"}  # SGLang's own field, passed to the engine
    assert "sk-secret" not in repr(SGLangModel(settings).identity())


def test_sampling_params_are_sglangs_own_with_the_tasks_settings_over_the_runs():
    """Greedy unless the task samples; SGLang's temperature 0 is its greedy (top_k 1); the run's SamplingParams
    fields (`top_k`, `repetition_penalty`, `stop_token_ids`) reach every request, typed by SGLang's declaration."""
    settings = model_settings(
        {"pretrained": "org/model", "top_k": "20", "repetition_penalty": "1.05", "stop_token_ids": "[7, 8]"}
    )
    greedy = sampling_params(GenerationSettings(max_gen_toks=32, until=("\n\n",)), settings.sampling)
    params = sampling.SamplingParams(**greedy)
    params.verify(vocab_size=100)
    assert (params.max_new_tokens, params.temperature, params.top_k, params.top_p) == (32, 1.0, 1, 1.0)
    assert (params.stop_strs, params.stop_token_ids, params.repetition_penalty) == (["\n\n"], {7, 8}, 1.05)
    sampled = sampling_params(
        GenerationSettings(max_gen_toks=8, do_sample=True, temperature=0.7, top_p=0.9, seed=3), settings.sampling
    )
    params = sampling.SamplingParams(**sampled)
    params.verify(vocab_size=100)
    assert (params.temperature, params.top_p, params.top_k, params.sampling_seed) == (0.7, 0.9, 20, 3)


def test_the_screen_refuses_what_sglang_would_refuse_for_the_whole_call():
    red = image_ref(encode_image((255, 0, 0), (8, 8), "PNG"))
    request = make_request("a", ["x", red, red, "y"], settings=GenerationSettings(max_gen_toks=10))
    fits = {"prompt_tokens": 90, "context_length": 100, "cap": (None, "")}
    assert screen_request(request, **fits) is None
    assert screen_request(request, **{**fits, "prompt_tokens": 91}) == (
        "over_length: 91 prompt tokens + 10 to generate > context_length 100"
    )
    assert screen_request(request, **{**fits, "cap": (1, "the model's cap max_images=1")}) == (
        "too_many_images: 2 images > the model's cap max_images=1"
    )


def test_the_image_cache_holds_the_largest_prompts_distinct_images():
    red, blue = (image_ref(encode_image(c, (8, 8), "PNG")) for c in ((255, 0, 0), (0, 0, 255)))
    small = make_request("a", [red, "x"], image_tokens=[10_000])
    large = make_request("b", [red, blue, red, "y"], image_tokens=[10_000, 30_000, 10_000])  # red once: 40,000
    cache = ImageCache.of([small, large], hidden_size=3584, element_bytes=2)  # Qwen2.5-VL-7B, bf16
    assert (cache.vision_tokens, cache.megabytes) == (40_000, 274)  # 40,000 x 3584 x 2 bytes = 273.4 MB
    assert ImageCache.of([small], hidden_size=64, element_bytes=2).megabytes == 100  # never below SGLang's default
    big = ImageCache.of([make_request("c", [blue, "z"], image_tokens=[130_000])], hidden_size=3584, element_bytes=2)
    assert big.megabytes == 889 and "SGLANG_VLM_CACHE_SIZE_MB=889 MB" in big.line(None)
    assert (
        big.line("4096")
        == "harness: sglang image-embedding cache SGLANG_VLM_CACHE_SIZE_MB=4096 MB, as the environment gives it"
    )


def test_its_declaration_and_the_cache_order():
    spec = backend_spec("sglang")
    assert spec.extra is not None and spec.extra.modules == ("sglang",) and spec.runs_remote_code
    settings = model_settings({"pretrained": "org/model", "tp_size": "2", "dp_size": "2"})
    assert spec.replicas.gpus(settings) == 4.0  # a Ray replica holds SGLang's whole engine
    model = SGLangModel(settings)
    assert (model.facts.request_order, model.facts.generates_across_tasks) == ("cache", True)
    assert SGLangModel(model_settings({"pretrained": "x", "request_order": "length"})).facts.request_order == "length"
    assert get_model_class("sglang") is SGLangModel


def test_an_hf_alias_runs_on_sglang_with_its_prompt_style_and_a_length():
    from harness.models.aliases import resolve

    backend, args, alias = resolve("qwen2.5-vl", {"backend": "sglang"})
    settings = model_settings(args)
    assert (backend, alias, settings.pretrained) == ("sglang", "qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct")
    assert (settings.prompt_style, settings.context_length) == ("qwen", 139264)


def test_engine_calls_through_the_stand_in(tiny_llava, monkeypatch):
    """One engine for the run, its image cache sized before it starts; each prompt rendered by the checkpoint's chat
    template with its images in placeholder order (the stand-in checks the count), a prompt the engine rejects failing
    alone (bisected), a request the screen refuses never sent, and what was sent recorded."""
    monkeypatch.delenv("SGLANG_VLM_CACHE_SIZE_MB", raising=False)
    fake_sglang.CALLS.clear()
    red, blue = encode_image((255, 0, 0), (40, 30), "PNG"), encode_image((0, 0, 255), (20, 20), "JPEG")
    requests = [
        make_request("a", ["look", red, "and", blue, "now"], settings=GenerationSettings(max_gen_toks=5)),
        make_request("b", ["no image at all"]),
        make_request("c", ["REJECT", red, "x"]),
        make_request("d", ["long", blue], settings=GenerationSettings(max_gen_toks=5000)),
    ]
    model = fake_sglang.fake_model(pretrained=str(tiny_llava), context_length="4096", top_k="5")
    try:
        (batch,) = model.batches(requests)
        first, second, rejected, over = model.generate(batch)
    finally:
        model.close()
    (engine,) = [e for e in fake_sglang.ENGINES if e.kwargs["model_path"] == str(tiny_llava)][-1:]
    assert engine.shutdowns == 1 and engine.cache_size_mb == "100"
    assert first.text.endswith("|img:40x30;img:20x20") and second.text.endswith("|")
    assert rejected.error.startswith("engine_rejected: ValueError") and over.error.startswith("over_length:")
    assert first.sent.text.count("<image>") == 2 and [i.size for i in first.sent.images] == [(40, 30), (20, 20)]
    assert first.usage["completion_tokens"] == 3 and first.finish_reason == "length"
    sent = [prompt for call in fake_sglang.CALLS for prompt in call["prompt"]]
    assert not any("long" in prompt for prompt in sent)  # screened out, never sent
    assert fake_sglang.CALLS[0]["sampling"][0] == {
        "top_k": 5, "max_new_tokens": 5, "temperature": 0.0, "top_p": 1.0, "stop": [], "n": 1
    }  # fmt: skip
    assert model.statistics()["engine_requests"] == 3


def test_a_request_asking_another_processor_setting_than_the_engines_is_invalid_input(tiny_llava):
    red = encode_image((255, 0, 0), (40, 30), "PNG")
    plain = make_request("a", ["x", red])
    asks = replace(make_request("b", ["y", red]), processor_kwargs=(("max_pixels", 1000),))
    model = fake_sglang.fake_model(pretrained=str(tiny_llava), context_length="4096")
    try:
        first, second = model.generate(list(model.batches([plain, asks]))[0])
    finally:
        model.close()
    assert first.error is None and second.error.startswith("invalid_input: processor settings {'max_pixels': 1000}")
    # every request of a run asking the same: that is the engine's setting
    alone = fake_sglang.fake_model(pretrained=str(tiny_llava), context_length="4096")
    try:
        (answer,) = alone.generate(list(alone.batches([asks]))[0])
    finally:
        alone.close()
    assert answer.error is None and fake_sglang.ENGINES[-1].kwargs["mm_process_config"] == {
        "image": {"max_pixels": 1000}
    }
