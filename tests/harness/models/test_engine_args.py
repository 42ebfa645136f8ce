"""An engine's arguments read from the installed engine's own declarations (`harness.models.shared.engine_args`): vLLM's
`EngineArgs` (a dataclass) and `SamplingParams` (a msgspec struct), as vLLM 0.33.0 declares them here."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from harness.models.shared.engine_args import declared_fields, field_value, split_engine_args

arg_utils = pytest.importorskip("vllm.engine.arg_utils", reason="vLLM's classes (make test installs them)")
vllm = pytest.importorskip("vllm")
EngineArgs = arg_utils.EngineArgs
SamplingParams = vllm.SamplingParams


def test_every_init_field_of_the_installed_engine_args_is_known():
    names = {f.name for f in dataclasses.fields(EngineArgs) if f.init and not f.name.startswith("_")}
    assert set(declared_fields(EngineArgs)) == names
    # the settings a survey of users found refused by a fixed list of 33
    assert {"kv_cache_dtype", "mm_encoder_tp_mode", "skip_mm_profiling", "enable_expert_parallel"} <= names


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("kv_cache_dtype", "fp8", "fp8"),
        ("mm_encoder_tp_mode", "data", "data"),
        ("skip_mm_profiling", "true", True),
        ("enable_expert_parallel", "1", True),
        ("max_model_len", "131072", 131072),
        ("gpu_memory_utilization", "0.85", 0.85),
        ("revision", "none", None),
        # JSON for mappings and lists, typed by the field: vLLM's per-image profiling sizes
        ("limit_mm_per_prompt", '{"image": {"count": 8, "width": 1024, "height": 768}}', None),
        ("served_model_name", '["a", "b"]', ["a", "b"]),
        ("tokenizer", "007", "007"),  # a string field keeps its text, though it reads as a number
    ],
)
def test_a_value_is_converted_by_its_fields_own_type(name, text, value):
    converted = field_value(text, declared_fields(EngineArgs)[name])
    expected = {"image": {"count": 8, "width": 1024, "height": 768}} if value is None and text[0] == "{" else value
    assert converted == expected
    assert type(converted) is type(expected)


def test_the_converted_arguments_build_the_engines_own_declaration():
    own, engine = split_engine_args(
        {"pretrained": "org/model", "kv_cache_dtype": "fp8", "mm_encoder_tp_mode": "data", "skip_mm_profiling": "true"},
        ["pretrained"],
        EngineArgs,
        "vllm",
    )
    assert own == {"pretrained": "org/model"}
    # vLLM's own constructor takes them by name (building it would look the checkpoint up: offline, it is not there)
    bound = inspect.signature(EngineArgs).bind(model="org/model", **engine).arguments
    assert {k: bound[k] for k in engine} == {
        "kv_cache_dtype": "fp8",
        "mm_encoder_tp_mode": "data",
        "skip_mm_profiling": True,
    }


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"kv_cache_dtyp": "fp8"}, "unknown model argument 'kv_cache_dtyp'"),
        ({"kv_cache_dtyp": "fp8"}, "did you mean kv_cache_dtype?"),
        ({"max_model_len": "long"}, "EngineArgs.max_model_len expects int"),
        ({"skip_mm_profiling": "maybe"}, "valid boolean"),
        ({"mm_encoder_tp_mode": "rows"}, "'weights' or 'data'"),
        ({"limit_mm_per_prompt": '{"image": "four"}'}, "limit_mm_per_prompt expects"),
        ({"data_parallel_size": "2"}, "replicas are the harness's"),
    ],
)
def test_what_is_not_a_field_or_not_of_its_type_is_one_line(args, said):
    with pytest.raises(ValueError) as err:
        split_engine_args(
            args, ["pretrained"], EngineArgs, "vllm", refused={"data_parallel_size": "replicas are the harness's"}
        )
    assert said in str(err.value)
    assert "\n" not in str(err.value)


def test_a_secret_value_is_never_shown():
    with pytest.raises(ValueError) as err:
        split_engine_args({"max_model_len": "sk-secret-123"}, [], EngineArgs, "vllm")
    assert "sk-secret" not in str(err.value)


def test_sampling_params_a_msgspec_struct_are_read_the_same_way():
    own, sampling = split_engine_args(
        {"top_k": "20", "repetition_penalty": "1.05", "stop": '["x"]'}, [], SamplingParams, "vllm"
    )
    assert own == {}
    assert sampling == {"top_k": 20, "repetition_penalty": 1.05, "stop": ["x"]}
    params = SamplingParams(**sampling)
    assert (params.top_k, params.repetition_penalty, params.stop) == (20, 1.05, ["x"])
