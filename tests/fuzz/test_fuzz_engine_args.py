"""Fuzz: `--model_args` passed through to an engine's own declaration (issue 64): vLLM's `EngineArgs` and
`SamplingParams`, SGLang's `ServerArgs`, as installed, each field read by the engine's own command line where it has an
option for it (as the backends read them: `cli_value`). Any key and any text, for any of their fields, is either
converted or refused with one `ValueError` line naming the backend and the key; never another exception, never a hang
(a long integer, a deep JSON value at any option, a choice list's look-alike, a value the engine's own check refuses)."""

from __future__ import annotations

import argparse
import json
import re

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


# --- values naming code (issue 87) ------------------------------------------------------------------------------

PLANTED = "planted_code_87"  # a module on the path while the property runs: importing it is what must not happen


def _config_keys(kind: object) -> list[str]:
    """The fields of the config a field's type declares (compilation_config: CompilationConfig's), or none."""
    import dataclasses
    import typing

    configs = [k for k in (kind, *typing.get_args(kind)) if isinstance(k, type) and dataclasses.is_dataclass(k)]
    return sorted({f.name for config in configs for f in dataclasses.fields(config) if f.init})


CODE_NAMES = st.sampled_from([PLANTED, f"{PLANTED}.f", f"{PLANTED}.Worker", f"{PLANTED}.sub.g"])
NAMING = st.one_of(
    CODE_NAMES,
    st.lists(CODE_NAMES, min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=6), CODE_NAMES, min_size=1, max_size=3),
)


@st.composite
def code_values(draw: st.DrawFn) -> dict[str, str]:
    """`--model_args` for vLLM where a value names the planted module: any EngineArgs field, the value itself a
    qualified name (or a list or mapping of them), or a config whose own fields (read from its dataclass) hold them."""
    fields = declared_fields(arg_utils.EngineArgs)
    args = {}
    for name in draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=3, unique=True)):
        keys = _config_keys(fields[name])
        if keys and draw(st.booleans()):
            value = draw(st.dictionaries(st.sampled_from(keys), NAMING | JSON, min_size=1, max_size=3))
        else:
            value = draw(NAMING)
        args[name] = value if isinstance(value, str) and draw(st.booleans()) else json.dumps(value)
    return args


@pytest.fixture(scope="module")
def planted_code(tmp_path_factory: pytest.TempPathFactory):
    """`planted_code_87` importable (a module and a package's submodule), and taken out of the path afterwards."""
    import sys

    folder = tmp_path_factory.mktemp("planted")
    (folder / f"{PLANTED}.py").write_text("def f(*a, **k):\n    pass\n\n\nclass Worker:\n    pass\n")
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


@budget(fuzz=1500, ci=20)
@given(args=code_values())
@example(args={"compilation_config": '{"inductor_passes": {"x": "planted_code_87.f"}}'})  # issue 87: imported at read
@example(args={"worker_cls": "planted_code_87.Worker", "logits_processors": '["planted_code_87.f"]'})
@example(args={"kv_transfer_config": '{"kv_connector_module_path": "planted_code_87", "kv_role": "kv_both"}'})
def test_a_value_naming_code_imports_nothing_while_read_and_is_a_result_or_one_line(planted_code, args) -> None:
    """Any EngineArgs field (or its config's field) given a qualified name of code: read into the backend's settings,
    or refused in one line, without importing it (vLLM's CompilationConfig resolves its passes as it is built: the
    import ran before the checkpoint was checked, at --screen_only too); where vLLM will import it, said in a line."""
    import contextlib
    import io
    import sys

    from harness.models.backends.vllm_engine.settings import vllm_settings

    counted()
    said = io.StringIO()
    with bounded(10, f"vllm {sorted(args)}"), contextlib.redirect_stderr(said):
        try:
            settings = vllm_settings({"pretrained": "x", **args})
        except ValueError as err:
            assert "\n" not in str(err), str(err)[:300]
            settings = None
    imported = [name for name in sys.modules if name.split(".")[0] == PLANTED]
    for name in imported:
        del sys.modules[name]
    assert not imported, (args, imported)
    ours = [line for line in said.getvalue().splitlines() if line.startswith("harness: ")]  # (torch logs there too)
    assert all(re.fullmatch(rf"harness: \w+ names code vLLM will import: {PLANTED}[\w., ]*", line) for line in ours), (
        ours
    )
    if settings is not None and ours:  # what is said is given to the engine, to import at load
        assert all(line.split()[1] in settings.engine for line in ours), (ours, settings.engine)
