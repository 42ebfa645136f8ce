"""Engine values as the engines' own command lines read them (issue 74, item 1): every field of vLLM's `EngineArgs`
and SGLang's `ServerArgs` given in `--model_args` reaches the engine with the value and type `vllm serve` or
`sglang.launch_server` gives it (vLLM's `32k`, `2G`, `auto`, its backend names; SGLang's `none`, kept a string).
Each side is the real one: the engine's parser reads a whole command line, the harness one `--model_args` value."""

from __future__ import annotations

import argparse
import contextlib
import io
import json

import pytest

from harness.models.shared.engine_args import declared_fields, split_engine_args

pytest.importorskip("vllm.engine.arg_utils", reason="vLLM's classes (make test installs them)")
pytest.importorskip("sglang.srt.server_args", reason="SGLang's classes (make test installs them)")

# What a value may look like, tried in turn where a field's option lists no choices: the first its command line takes
# is the one compared (a size, a count, a fraction, an engine's `auto`, a name, a JSON object, a JSON list).
TRIED = ("32k", "7", "0.5", "auto", "x", '{"a": 1}', '["a", "b"]')


def _engines():
    from harness.models.backends.sglang_engine import settings as sglang
    from harness.models.backends.vllm_engine import settings as vllm

    server, _ = sglang._declarations()
    return {
        "vllm": (vllm.engine_args_class(), vllm.cli_parser(), []),
        "sglang": (server, sglang.cli_parser(), ["--model-path", "org/model"]),
    }


def _texts(action: argparse.Action) -> list[str]:
    if action.choices:
        return [str(c) for c in action.choices if c is not None]
    return list(TRIED)


def _command_line(parser: argparse.ArgumentParser, required: list[str], action: argparse.Action, text: str):
    """What the engine's command line makes of `--option text` (a JSON list as several values where it takes
    several; a switch as given, `true`); None where it refuses it."""
    option = next(o for o in action.option_strings if o.startswith("--"))  # a switch's first is its positive form
    listed = json.loads(text) if text.startswith("[") else None
    if action.nargs == 0:
        argv = [option]
    elif listed is not None and action.nargs in ("+", "*"):
        argv = [option, *listed]
    else:
        argv = [f"{option}={text}"]
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return (vars(parser.parse_args([*required, *argv]))[action.dest],)
    except (argparse.ArgumentError, SystemExit, ValueError, TypeError):
        return None


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_field_reaches_the_engine_as_its_command_line_reads_it(engine: str) -> None:
    declaration, parser, required = _engines()[engine]
    options = {a.dest: a for a in parser._actions if a.option_strings}
    compared, unlike = 0, []
    for name in declared_fields(declaration):
        action = options.get(name)
        if action is None:
            continue  # no option on its command line: read by the field's type (test_engine_args)
        for text in ["true"] if action.nargs == 0 else _texts(action):
            said = _command_line(parser, required, action, text)
            if said is None:
                continue
            _, given = split_engine_args({name: text}, (), declaration, engine, cli=parser)
            compared += 1
            if given[name] != said[0] or type(given[name]) is not type(said[0]):
                unlike.append((name, text, said[0], given[name]))
            if not action.choices:
                break  # one value its command line takes; every choice where it lists them
    assert unlike == []
    assert compared >= 0.9 * len(options)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_value_nested_past_the_parsers_depth_is_one_line_for_every_option(engine: str) -> None:
    """Issue 87: 30,000 `[` (or `{`) at any option of either engine's command line is refused in one line naming the
    option, where a RecursionError escaped for 24 of vLLM's options and 18 of SGLang's."""
    declaration, parser, _ = _engines()[engine]
    options = {a.dest: a for a in parser._actions if a.option_strings and a.nargs != 0}
    for name in sorted(set(declared_fields(declaration)) & set(options)):
        for deep in ("[" * 30_000, '{"a": ' * 30_000):
            try:
                split_engine_args({name: deep}, (), declaration, engine, cli=parser)
            except ValueError as err:
                assert str(err).startswith(f"{engine} backend: model argument {name}: ") and "\n" not in str(err)
