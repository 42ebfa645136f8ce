"""Fuzz: `--model_args` passed through to an engine's own declaration (issue 64): vLLM's `EngineArgs` and
`SamplingParams`, SGLang's `ServerArgs`, as installed, each field read by the engine's own command line where it has an
option for it (as the backends read them: `cli_value`). Any key and any text, for any of their fields, is either
converted or refused with one `ValueError` line naming the backend and the key; never another exception, never a hang
(a long integer, a deep JSON value at any option, a choice list's look-alike, a value the engine's own check refuses)."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.models.shared.engine_args import declared_fields, split_engine_args

from .conftest import JSON, LONG_INTEGERS, bounded, budget, counted, deep

arg_utils = pytest.importorskip("vllm.engine.arg_utils", reason="vLLM's classes (make test installs them)")
vllm = pytest.importorskip("vllm")
server_args = pytest.importorskip("sglang.srt.server_args", reason="SGLang's classes (make test installs them)")
DECLARATIONS = {
    "vllm": arg_utils.EngineArgs,
    "vllm sampling": vllm.SamplingParams,
    "sglang": server_args.ServerArgs,
}


def _command_line(backend: str) -> argparse.ArgumentParser | None:
    """The engine's own command line the backend reads its fields with (none for the sampling parameters)."""
    from harness.models.backends.sglang_engine import settings as sglang_settings
    from harness.models.backends.vllm_engine import settings as vllm_settings

    return {"vllm": vllm_settings.cli_parser, "sglang": sglang_settings.cli_parser}.get(backend, lambda: None)()


OWN = ["pretrained", "max_images"]  # a backend's own settings pass as text, whatever they hold

TEXTS = st.one_of(
    st.sampled_from(
        ["", " ", "none", "None", "null", "true", "false", "1", "0", "-1", "0.5", "nan", "inf", "-inf", "1e999", "fp8"]
    ),
    st.sampled_from(['{"image": 4}', '{"image": "four"}', "[1, 2]", "[]", "{}", '"x"', "[", "{", '{"a": [}']),
    st.sampled_from([deep(3000), deep(3000, "{"), "9" * 5000, "\x00", "\udcff", "a" * 10_000]),
    LONG_INTEGERS,
    JSON.map(json.dumps),
    st.text(max_size=40),
)


@st.composite
def engine_args(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    backend = draw(st.sampled_from(sorted(DECLARATIONS)))
    fields = sorted(declared_fields(DECLARATIONS[backend]))
    names = st.one_of(st.sampled_from(fields), st.sampled_from(OWN), st.text(max_size=20))
    return backend, draw(st.dictionaries(names, TEXTS, min_size=1, max_size=4))


@budget(fuzz=1500, ci=60)
@given(drawn=engine_args())
@example(drawn=("sglang", {"abort_on_priority_when_disabled": deep(3000)}))  # once a RecursionError out of JSON
@example(drawn=("vllm", {"attention_backend": " "}))  # a line listing the enum's every choice
@example(drawn=("vllm sampling", {"structured_outputs": '{"image": 4}'}))  # once vLLM's own VLLMValidationError
@example(drawn=("vllm", {"override_generation_config": "[" * 30_000}))  # issue 87: a RecursionError by its option
@example(drawn=("sglang", {"cuda_graph_config": deep(3000, "{")}))  # the same by SGLang's
@example(drawn=("sglang", {"lora_paths": '{"x": 1}'}))  # issue 87: SGLang's own check's AssertionError
def test_any_model_args_are_converted_or_one_line(drawn: tuple[str, dict[str, str]]) -> None:
    backend, args = drawn
    declaration = DECLARATIONS[backend]
    counted()
    with bounded(10, f"{backend} {sorted(args)}"):
        try:
            own, passed = split_engine_args(args, OWN, declaration, backend, cli=_command_line(backend))
        except ValueError as err:
            line = str(err)
            assert line.startswith(f"{backend} backend: ") and "\n" not in line, line
            # the value is never shown (it may be a key): the line is as long as the field's declaration makes it
            # (an enum's every choice), not as the value
            assert not any(len(text) >= 16 and text in line for text in args.values()), line[:300]
            assert len(line) < 20_000, line[:300]
            return
    assert own == {k: v for k, v in args.items() if k in OWN}
    assert set(passed) == set(args) - set(OWN)
    fields = declared_fields(declaration)
    assert set(passed) <= set(fields)
