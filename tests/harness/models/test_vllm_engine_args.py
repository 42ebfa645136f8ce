"""The vllm backend open where vLLM is open (issue 60): any field of the installed vLLM's `EngineArgs` in
`--model_args` reaches the engine, typed by that field, and any `SamplingParams` field in `--gen_kwargs` reaches every
request; the engine's profiling is sized by the run's images (`limit_mm_per_prompt`'s dict form); an image its encoder
cache cannot hold is said by `--screen_only` and kept from the engine by the run (vLLM #34040). Read against vLLM's own
classes; the engine is `tests/support/fake_vllm.FakeLLM`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.models.backends.vllm_engine.image_limit import ImageProfile, engine_limit
from harness.models.backends.vllm_engine.settings import vllm_settings
from tests.support import fake_vllm
from tests.support.fake_vllm import fake_model, param, sized_ref
from tests.support.model_requests import make_request

pytest.importorskip("vllm.engine.arg_utils", reason="vLLM's classes (make test installs them)")

OPEN = "kv_cache_dtype=fp8,mm_encoder_tp_mode=data,skip_mm_profiling=true"  # the probes
TASK = "mmneedle_m1_n2_k1_neg"


def _screen(harness, data: Path, model_args: str, *extra: str):
    return harness(
        *("--tasks", TASK, "--model", "vllm", "--model_args", model_args, "--data_dir", data, "--screen_only", *extra)
    )


def test_the_engines_own_arguments_pass_and_others_are_refused_in_one_line(harness, mmneedle_dir, tiny_llava_336):
    run = _screen(harness, mmneedle_dir, f"pretrained={tiny_llava_336},{OPEN}")
    assert run.code == 0, run.err
    assert f"| {TASK} | 3 | 3 |" in run.out  # counted by the checkpoint's processor, every row sent
    refused = {
        "kv_cache_dtyp=fp8": "unknown model argument 'kv_cache_dtyp': neither the backend's own nor a field of "
        "vllm.engine.arg_utils.EngineArgs; did you mean kv_cache_dtype?",
        "mm_encoder_tp_mode=rows": "model argument mm_encoder_tp_mode: --mm-encoder-tp-mode on its command line takes "
        "one of data, weights",
        "skip_tokenizer_init=true": "model argument skip_tokenizer_init: answers are read as text",
    }
    for given, said in refused.items():
        run = _screen(harness, mmneedle_dir, f"pretrained={tiny_llava_336},{given}")
        (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error")]
        assert run.code != 0 and said in line, run.err


def _run(harness, data: Path, out: Path, model_args: str, gen_kwargs: str):
    run = harness(
        *("--tasks", TASK, "--model", "vllm", "--model_args", model_args, "--gen_kwargs", gen_kwargs),
        *("--data_dir", data, "--output_path", out),
    )
    assert run.code == 0, run.err
    (journal,) = out.rglob(f"journal_{TASK}.jsonl")
    (results,) = out.rglob("results_*.json")
    return json.loads(journal.read_text().splitlines()[0])["parts"]["model"], json.loads(results.read_text())


def test_they_reach_the_engine_and_key_the_answers_they_may_change(
    harness, mmneedle_dir, tiny_llava_336, tmp_path, monkeypatch
):
    import vllm

    monkeypatch.setattr(vllm, "LLM", fake_vllm.FakeLLM)
    fake_vllm.CALLS.clear()
    # the values in vLLM's own spellings (issue 74), which reach vLLM as `vllm serve` reads them
    spelled = "max_model_len=4k,attention_backend=FLASH_ATTN,kv_cache_memory_bytes=2G"
    args = f"pretrained={tiny_llava_336},{spelled},{OPEN}"
    identity, results = _run(
        harness, mmneedle_dir, tmp_path / "a", args, "max_gen_toks=4,repetition_penalty=1.05,min_tokens=2"
    )
    kwargs = fake_vllm.CALLS[0]["kwargs"]
    assert (kwargs["kv_cache_dtype"], kwargs["mm_encoder_tp_mode"], kwargs["skip_mm_profiling"]) == (
        "fp8",
        "data",
        True,
    )
    assert kwargs["max_model_len"] == 4000 and kwargs["generation_config"] == "vllm"
    assert (kwargs["attention_backend"], kwargs["kv_cache_memory_bytes"]) == ("FLASH_ATTN", 2 * 1024**3)
    # every argument vllm.LLM was built with, given or the backend's default, in the results (issue 74, item 3)
    assert results["config"]["backend_stats"]["engine_args"] == json.loads(json.dumps(kwargs))
    assert kwargs["gpu_memory_utilization"] == 0.9 and "gpu_memory_utilization" not in results["config"]["model_args"]
    sampling = [p for call in fake_vllm.CALLS for p in call["sampling"]]
    # (greedy: vLLM itself resets top_k and min_p, which only sampling reads)
    assert {(param(p, "repetition_penalty"), param(p, "min_tokens"), param(p, "max_tokens")) for p in sampling} == {
        (1.05, 2, 4)
    }
    # The engine's sampling keys are the backend's argument now; the tasks' settings keep the rest.
    assert results["config"]["gen_kwargs"] == {"max_gen_toks": 4}
    assert json.loads(results["config"]["model_args"]["sampling_params"]) == {
        "repetition_penalty": 1.05,
        "min_tokens": 2,
    }
    # A key that may change an answer keys the cache; one that places or schedules the work does not.
    assert identity["kv_cache_dtype"] == "fp8" and identity["sampling_params"] == {
        "repetition_penalty": 1.05,
        "min_tokens": 2,
    }
    assert not {"mm_encoder_tp_mode", "skip_mm_profiling", "max_model_len"} & set(identity)
    plain, _ = _run(harness, mmneedle_dir, tmp_path / "b", f"pretrained={tiny_llava_336},kv_cache_dtype=auto", "")
    assert set(plain) == {  # what it held before any engine key passed: a run with the same arguments keeps its key
        "model",
        "pretrained",
        "revision",
        "tokenizer",
        "dtype",
        "mm_processor_kwargs",
        "chat_template_sha",
        "chat_template_content_format",
        "generation_config",
        "hf_overrides",
        "prompt_style",
        "vllm_version",
    }
    assert (plain["dtype"], plain["generation_config"], plain["hf_overrides"], plain["revision"]) == (
        "auto",
        "vllm",
        None,
        None,
    )


def test_max_model_len_auto_is_vllms_fit_to_memory_and_the_engine_reports_it(
    harness, mmneedle_dir, tiny_llava_336, tmp_path, monkeypatch
):
    """Issue 89: `max_model_len=auto`, vLLM's own spelling of "what fits the memory", was refused as
    "max_model_len=-1: must be at least 1", a value the user never typed. It reaches vLLM as its command line reads
    it (-1), and the run screens its prompts on the length the built engine reports."""
    import vllm

    args = f"pretrained={tiny_llava_336},max_model_len=auto"
    screened = _screen(harness, mmneedle_dir, args)
    assert screened.code == 0 and f"| {TASK} | 3 | 3 |" in screened.out, screened.err
    monkeypatch.setattr(vllm, "LLM", fake_vllm.FakeLLM)
    fake_vllm.CALLS.clear()
    run = harness(*("--tasks", TASK, "--model", "vllm", "--model_args", args, "--data_dir", mmneedle_dir))
    assert run.code == 0, run.err
    assert fake_vllm.CALLS[0]["kwargs"]["max_model_len"] == -1
    assert f"max_model_len={fake_vllm.FITTED}, " in run.err  # the engine's own, once built


@pytest.mark.parametrize(
    ("backend", "gen_kwargs", "said"),
    [
        ("vllm", "top_kk=2", "unknown sampling parameter 'top_kk': not a field of "),
        ("vllm", "top_kk=2", "SamplingParams; did you mean top_k?"),
        ("vllm", "max_tokens=5", "sampling parameter max_tokens: the answer's length is the generation setting"),
        ("vllm", "top_k=many", "SamplingParams.top_k expects"),
        # an answer is decoded from its ids as on hf (`answer_text`), whatever vLLM's own text would have been
        ("vllm", "skip_special_tokens=false", "decoded without special tokens, as the hf backend decodes it"),
        ("vllm", "include_stop_str_in_output=true", "an answer ends before its stop string, as the hf backend"),
        ("hf", "top_k=20", "unknown generation setting(s) ['top_k']"),  # another backend refuses as it did
    ],
)
def test_a_sampling_key_is_checked_before_any_task(backend, gen_kwargs, said, mmneedle_dir, tiny_llava_336):
    from harness.run.arguments import parse_options
    from harness.run.plan import plan_run

    argv = ["--tasks", TASK, "--model", backend, "--model_args", f"pretrained={tiny_llava_336}"]
    argv += ["--gen_kwargs", gen_kwargs, "--data_dir", str(mmneedle_dir), "--screen_only"]
    with pytest.raises(UserError) as err:
        plan_run(parse_options(argv), argv)
    assert str(err.value).startswith("--gen_kwargs ") and said in str(err.value)


def test_the_limit_is_the_runs_images_or_the_one_given(jpeg_red, png_blue):
    requests = [make_request("a", [jpeg_red, "x", png_blue]), make_request("b", ["y", sized_ref(300, 20)], doc_id=1)]
    profile = ImageProfile().covering(requests)
    assert profile == ImageProfile(2, 300, 20)  # the widest image's width, the tallest's height
    assert engine_limit(profile, None, None, None) == {"image": {"count": 2, "width": 300, "height": 20}, "video": 0}
    # under the model's image cap and the processor's max_pixels (the side ratio kept)
    assert engine_limit(profile, 1, 1500, None) == {"image": {"count": 1, "width": 150, "height": 10}, "video": 0}
    given = vllm_settings(
        {"pretrained": "m", "limit_mm_per_prompt": '{"image": {"count": 4, "width": 64, "height": 48}}'}
    )
    assert given.engine["limit_mm_per_prompt"] == {"image": {"count": 4, "width": 64, "height": 48}}
    assert vllm_settings({"pretrained": "m", "limit_mm_per_prompt": "7"}).max_images == 7  # the form it once took
    fake_vllm.CALLS.clear()
    model = fake_model(limit_mm_per_prompt={"image": {"count": 1, "width": 64, "height": 48}})
    try:
        first, second = model.generate([requests[0], make_request("c", ["z", jpeg_red], doc_id=2)])
    finally:
        model.close()
    assert fake_vllm.CALLS[0]["kwargs"]["limit_mm_per_prompt"] == {"image": {"count": 1, "width": 64, "height": 48}}
    assert first.error.startswith("too_many_images: 2 images > limit_mm_per_prompt=1") and second.error is None


def test_an_image_the_encoder_cache_cannot_hold_is_kept_from_the_engine(jpeg_red):
    """The built engine's own figure (the stand-in's: max_num_batched_tokens): the request is recorded over_length, as
    vLLM would refuse it whole, and the engine never sees it."""
    big = make_request("big", ["q", sized_ref(2048, 2048)], image_tokens=(5329,))
    small = make_request("small", ["q", jpeg_red], doc_id=1)
    fake_vllm.CALLS.clear()
    model = fake_model(pretrained="Qwen/Qwen2-VL-2B-Instruct", max_model_len=20_000, max_num_batched_tokens=1000)
    try:
        refused, answered = model.generate([big, small])
    finally:
        model.close()
    tokens = model.count.image_tokens(big)[0]  # the Qwen2-VL family's rule, the processor not being here
    assert tokens > 1000 and refused.error == (
        f"over_length: image 1 is {tokens:,} tokens, more than the 1,000 of vLLM's encoder cache (the engine's own), "
        "which refuses the whole request (vLLM #34040); give limit_mm_per_prompt a larger width and height, or a "
        "larger max_num_batched_tokens"
    )
    assert answered.ok and [len(call["conversations"]) for call in fake_vllm.CALLS] == [1]


def test_the_screen_says_which_rows_the_encoder_cache_would_refuse(harness, mmneedle_dir):
    """A limit that profiles small images, and a small batch: the least the encoder cache will hold is the larger of
    max_num_batched_tokens and the profiled image's tokens; each row with a larger image is screened out."""
    qwen = "Qwen/Qwen2-VL-2B-Instruct"  # not here: counted by its family's rule (an estimate, said so)
    limit = 'limit_mm_per_prompt=\'{"image": {"count": 10, "width": 56, "height": 56}}\''

    def screened(batched: int) -> str:
        run = _screen(
            harness, mmneedle_dir, f"pretrained={qwen},max_model_len=32768,max_num_batched_tokens={batched},{limit}"
        )
        assert run.code == 0, run.err
        return run.out

    count = fake_model(pretrained=qwen).count
    family = count.family  # the alias's family: its config.json is not on this machine
    assert count.processor is None and family is not None
    tokens = [count.image_tokens(request)[0] for request in task_requests(mmneedle_dir)]
    assert tokens == [
        family.image_tokens(r.images[0].width, r.images[0].height, {}) for r in task_requests(mmneedle_dir)
    ]
    for batched in (min(tokens) - 1, max(tokens) - 1, max(tokens)):
        over = sum(t > batched for t in tokens)
        out = screened(batched)
        assert f"| {TASK} | 3 | {3 - over} | {over} |" in out, out
        assert (
            f"more than the {batched:,} of vLLM's encoder cache (max_num_batched_tokens {batched:,} (given)" in out
        ) == (over > 0)


def task_requests(data: Path):
    from harness.config.task_index import TaskIndex
    from harness.running.task.task import Task

    task = Task(TaskIndex([]).tasks[TASK])
    task.load(data)
    settings = task.generation_settings({}, 0)
    return [task.build_request(i, task.doc(i), settings) for i in range(len(task))]


def test_a_pool_knows_the_runs_largest_image_before_a_replica_builds_its_engine(jpeg_red, png_blue):
    from harness.models.backends.replicas.shares import LargestImage

    largest = LargestImage()
    requests = [make_request("a", [jpeg_red]), make_request("b", [png_blue], doc_id=1)]
    model = fake_model()
    assert largest.size is None
    next(iter(model.batches(largest.seeing(requests))))  # the backend reads every request before its first batch
    assert largest.size == (16, 14)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("num_gpu_blocks_override=many", "--num-gpu-blocks-override on its command line takes int | None"),
        ("eplb_config=x", "--eplb-config on its command line takes a JSON object of EPLBConfig's fields"),
        ("limit_mm_per_prompt=x", "takes dict[str, int | dict[str, int]]"),
    ],
)
def test_a_value_an_option_refuses_says_what_it_takes_in_the_fields_words(given: str, said: str) -> None:
    """Issue 89: these said "takes _optional_type" and "takes parse_dataclass", the names of vLLM's own readers."""
    name, value = given.split("=", 1)
    with pytest.raises(ValueError) as refused:
        vllm_settings({"pretrained": "tiny/qwen-vl", name: value})
    assert str(refused.value).startswith(f"vllm backend: model argument {name}: ") and str(refused.value).endswith(said)


def test_a_value_that_makes_vllm_import_code_is_said_and_imports_nothing_while_read(
    harness, mmneedle_dir, tiny_llava_336, tmp_path, monkeypatch
):
    """Issue 87: `compilation_config={"inductor_passes": {"x": "mod.f"}}` imported `mod` while the arguments were read
    (vLLM's CompilationConfig resolves its passes when built), before the checkpoint was checked, at --screen_only
    too. Now the value is read without its passes, said in one line, and given to the engine as written, which builds
    it (and imports `mod`) at load; the rest of it is still read by vLLM's command line."""
    mark = tmp_path / "imported"
    (tmp_path / "planted_pass.py").write_text(f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    passes = '{"inductor_passes": {"x": "planted_pass.f"}}'
    run = _screen(harness, mmneedle_dir, f"pretrained={tiny_llava_336},compilation_config={passes}")
    assert run.code == 0 and not mark.exists(), run.err
    assert "harness: compilation_config names code vLLM will import: planted_pass.f" in run.err.splitlines()
    settings = vllm_settings({"pretrained": "x", "compilation_config": passes, "worker_cls": "planted_pass.Worker"})
    assert settings.engine["compilation_config"] == json.loads(passes) and not mark.exists()
    with pytest.raises(ValueError, match="model argument compilation_config: --compilation-config"):
        vllm_settings({"pretrained": "x", "compilation_config": '{"inductor_passes": {"x": "a.b"}, "mode": "odd"}'})


def test_an_architecture_vllm_runs_right_only_otherwise_gets_the_field_unless_given(tmp_path: Path) -> None:
    """vLLM's EXAONE 4.5 declares device-side image normalisation, Qwen2.5-VL's (its processor then leaves the pixels
    unnormalised), and builds its vision tower without the layer that normalises them: the engine is started with the
    processor normalising, unless the run says otherwise; another architecture's start is left as vLLM's."""
    from vllm.model_executor.models.exaone4_5 import Exaone4_5_ForConditionalGeneration

    from harness.models.backends.vllm_engine.start_checks import before_start

    assert Exaone4_5_ForConditionalGeneration.supports_mm_device_do_normalize  # vLLM's declaration, the cause
    for architecture, given, expected in (
        ("Exaone4_5_ForConditionalGeneration", {}, False),
        ("Exaone4_5_ForConditionalGeneration", {"mm_device_do_normalize": True}, True),
        ("Qwen2_5_VLForConditionalGeneration", {}, None),
    ):
        folder = tmp_path / architecture
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(json.dumps({"architectures": [architecture]}))
        kwargs = before_start({"model": str(folder), "kv_cache_memory_bytes": 1 << 30, **given})
        assert kwargs.get("mm_device_do_normalize") == expected, architecture
