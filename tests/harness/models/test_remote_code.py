"""A checkpoint's own code runs only where the user asked for it for that checkpoint, and never unsaid (issue 49,
item 2): an alias's `trust_remote_code` covers the checkpoint it names, not one put in its place with
`--model_args pretrained=...` (which imported the other's `auto_map` module, even at `--screen_only`); any run that
will run a checkpoint's code says which checkpoint and which module in one line before it does; a family that
transformers implements itself is refused its checkpoint's code (`trust_remote_code=true` given to gemma3 ran it).

The checkpoints here are the tiny LLaVA with a config that maps a module of their own (`auto_map`), which leaves a
mark and a line on stderr when imported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.models.aliases import resolve
from harness.models.facts import remote_code

TASK = "mmneedle_m1_n2_k1_pos"


def with_code(tiny_llava: Path, folder: Path, mark: Path, model_type: str) -> Path:
    """The tiny LLaVA whose config maps `AutoConfig` to `configuration_own.OwnConfig`, a module that leaves `mark` and
    says so on stderr when imported; `model_type` its config's (a type transformers knows, or one of its own)."""
    checkpoint = Path(shutil.copytree(tiny_llava, folder))
    (checkpoint / "configuration_own.py").write_text(
        "import pathlib, sys\n"
        f"pathlib.Path({str(mark)!r}).write_text('ran')\n"
        "print('checkpoint code imported', file=sys.stderr)\n"
        "from transformers import LlavaConfig\n\n\n"
        f"class OwnConfig(LlavaConfig):\n    model_type = {model_type!r}\n"
    )
    config = json.loads((checkpoint / "config.json").read_text())
    config.update(model_type=model_type, auto_map={"AutoConfig": "configuration_own.OwnConfig"})
    (checkpoint / "config.json").write_text(json.dumps(config))
    return checkpoint


@pytest.fixture(autouse=True)
def _nothing_said_yet() -> None:
    remote_code._SAID.clear()  # each test's checkpoints are said afresh


def test_an_aliass_trust_covers_its_own_checkpoint_only(capsys: pytest.CaptureFixture) -> None:
    backend, args, _ = resolve("internvl2-1b", {})
    assert backend == "vllm" and args["trust_remote_code"] == "true"  # as the official wrapper loaded it
    _, args, _ = resolve("internvl2-1b", {"pretrained": "OpenGVLab/InternVL2-1B"})
    assert args["trust_remote_code"] == "true"
    capsys.readouterr()
    _, args, _ = resolve("internvl2-1b", {"pretrained": "someone/other"})
    assert "trust_remote_code" not in args
    said = capsys.readouterr().err.strip()
    assert said == (
        "harness: alias internvl2-1b trusts the code of OpenGVLab/InternVL2-1B, not of someone/other put in its place "
        "(pretrained=...): someone/other's own code is not run; give trust_remote_code=true in --model_args to run it"
    )
    _, args, _ = resolve("internvl2-1b", {"pretrained": "someone/other", "trust_remote_code": "true"})
    assert args["trust_remote_code"] == "true"  # the user's own trust


def test_a_checkpoint_put_in_an_aliass_place_runs_none_of_its_code_at_screen_only(
    tmp_path: Path, tiny_llava: Path, data_dir: Path, harness
) -> None:
    """The issue's `--model internvl2-1b --model_args pretrained=OTHER`: OTHER's auto_map module was imported."""
    mark = tmp_path / "imported"
    other = with_code(tiny_llava, tmp_path / "other", mark, "own_llava")
    argv = ("--tasks", TASK, "--model", "internvl2-1b", "--model_args", f"pretrained={other}", "--data_dir", data_dir)
    run = harness(*argv, "--screen_only", "--limit", "2")
    assert "Traceback" not in run.err, run.err
    assert not mark.exists()
    assert f"alias internvl2-1b trusts the code of OpenGVLab/InternVL2-1B, not of {other}" in run.err


def test_a_run_that_will_run_a_checkpoints_code_says_which_before_it_does(
    tmp_path: Path, tiny_llava: Path, data_dir: Path, harness
) -> None:
    mark = tmp_path / "imported"
    own = with_code(tiny_llava, tmp_path / "own", mark, "own_llava")
    argv = ("--tasks", TASK, "--model", "hf", "--data_dir", data_dir, "--limit", "2", "--screen_only")
    run = harness(*argv, "--model_args", f"pretrained={own},trust_remote_code=true")
    assert mark.exists()  # asked for: it ran
    said = [line for line in run.err.splitlines() if "code" in line]
    assert said[:2] == [
        f"harness: trust_remote_code=true: running the code of checkpoint {own}: configuration_own.py "
        "(AutoConfig: configuration_own.OwnConfig)",
        "checkpoint code imported",
    ], run.err


def test_a_family_transformers_implements_is_refused_its_checkpoints_code(
    tmp_path: Path, tiny_llava: Path, data_dir: Path, harness
) -> None:
    """A `llava` checkpoint (a type transformers implements) that maps code of its own: trust_remote_code=true would
    replace transformers' classes with it. Refused in one line; without the flag it loads as transformers' llava."""
    mark = tmp_path / "imported"
    native = with_code(tiny_llava, tmp_path / "native", mark, "llava")
    argv = ("--tasks", TASK, "--model", "hf", "--data_dir", data_dir, "--limit", "2", "--screen_only")
    run = harness(*argv, "--model_args", f"pretrained={native},trust_remote_code=true")
    assert run.code == 2 and not mark.exists(), run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert f"checkpoint {native}: its model_type 'llava' is one transformers implements itself" in line
    assert "configuration_own.py (AutoConfig: configuration_own.OwnConfig)" in line and "not loaded" in line
    plain = harness(*argv, "--model_args", f"pretrained={native}")
    assert plain.code == 0 and not mark.exists(), plain.err


def test_the_vllm_engine_says_it_before_it_loads_the_checkpoint(
    tmp_path: Path, tiny_llava: Path, capsys: pytest.CaptureFixture
) -> None:
    """The engine (here vLLM's stand-in, which imports nothing) is made after the line, in whatever process holds it
    (a Ray replica's too); a tokenizer from another checkpoint is said as well."""
    from harness.models.backends.vllm_engine.engines import LocalEngine
    from tests.support.fake_vllm import FAKE_LLM, FAKE_SAMPLING

    own = with_code(tiny_llava, tmp_path / "own", tmp_path / "imported", "own_llava")
    other = with_code(tiny_llava, tmp_path / "tokenizer", tmp_path / "imported_too", "own_llava")
    kwargs = {"model": str(own), "tokenizer": str(other), "trust_remote_code": True}
    LocalEngine(kwargs, llm_factory=FAKE_LLM, sampling_factory=FAKE_SAMPLING).close()
    said = capsys.readouterr().err.splitlines()
    assert [line.split(": configuration_own.py")[0] for line in said] == [
        f"harness: trust_remote_code=true: running the code of checkpoint {own}",
        f"harness: trust_remote_code=true: running the code of checkpoint {other}",
    ]
