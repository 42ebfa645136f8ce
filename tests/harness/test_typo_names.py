"""Issue 99 item 4: a typo of a path or a flag gets the name the user meant, through the `harness` command line. A
path typed beside the folder it meant (`--data_dir dta` beside `data/`, `--include_path mytaks` beside `mytasks/`,
`pretrained=.../tiny-lava` beside `tiny-llava`) is named by one rule (`harness.errors.close_path`): the closest name
beside it that holds what was asked for, never a folder that merely exists; `--data_dir dta` no longer offers to build
a second copy into `dta`. A decoding setting typed as a flag (`--num_beams 1`) is named as its `--gen_kwargs` key."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.support.run_setups import needle_task_yaml


def _error(run) -> str:
    lines = [line for line in run.err.strip().splitlines() if line.startswith("harness: error:")]
    assert run.code == 2 and len(lines) == 1, run.err
    return lines[0]


def test_a_data_dir_typed_beside_the_builds_names_that_folder(
    harness, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").symlink_to(data_dir)  # the builds, as `builders build --out data` left them
    (tmp_path / "date").mkdir()  # as close, and no build in it
    monkeypatch.chdir(tmp_path)
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--data_dir", "dta")
    assert _error(run) == "harness: error: --data_dir dta: no such folder; did you mean data?"
    # A folder of another name is still one to build into: nothing beside it holds the build.
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--data_dir", "builds")
    assert "--data_dir builds: no such folder; build it with: builders build mmneedle" in _error(run)
    assert "did you mean" not in run.err


def test_an_include_path_typed_beside_the_tasks_names_that_folder(
    harness, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mytasks").mkdir()
    (tmp_path / "mytasks" / "mine.yaml").write_text(needle_task_yaml("mine"))
    (tmp_path / "mytask").mkdir()  # closer, and no task in it
    monkeypatch.chdir(tmp_path)
    common = ("--tasks", "mine", "--model", "constant", "--model_args", "answer=1", "--data_dir", data_dir)
    run = harness(*common, "--include_path", "mytaks")
    assert _error(run) == "harness: error: --include_path mytaks: no such file or folder; did you mean mytasks?"
    run = harness(*common, "--include_path", "mytasks", "--limit", "1")
    assert run.code == 0, run.err


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the hf backend needs torch")
def test_a_checkpoint_typed_beside_its_folder_names_that_folder(
    harness, data_dir: Path, tiny_llava: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pretrained=.../tiny-lava` said "no such folder, and not a Hub model id"; `./tiny-lava` (a Hub id to the
    pattern) got the Hub client's words about repo ids; offline, `tiny-lava` said it is not in the Hub cache."""
    typo = tiny_llava.name.replace("llava", "lava")
    common = ("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--data_dir", data_dir, "--limit", "1")
    run = harness(*common, "--model_args", f"pretrained={tiny_llava.parent / typo}")
    said = f"checkpoint {tiny_llava.parent / typo}: no such folder; did you mean {tiny_llava}?"
    assert _error(run).endswith(said)
    monkeypatch.chdir(tiny_llava.parent)
    for typed in (f"./{typo}", typo):
        run = harness(*common, "--model_args", f"pretrained={typed}")
        assert _error(run).endswith(f"checkpoint {typed}: no such folder; did you mean {tiny_llava.name}?")
    # a path that is no Hub id and has no checkpoint beside it: said as a path, not in the Hub client's words
    run = harness(*common, "--model_args", "pretrained=./no-checkpoint-here")
    assert _error(run).endswith("checkpoint ./no-checkpoint-here: no such folder, and not a Hub model id (ORG/NAME)")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (("--num_beams", "1"), "--gen_kwargs num_beams=1"),
        (("--num_beams=4",), "--gen_kwargs num_beams=4"),
        (("--max_new_tokens", "16"), "--gen_kwargs max_new_tokens=16"),
        (("--temperature",), "--gen_kwargs temperature=VALUE"),
    ],
)
def test_a_decoding_setting_typed_as_a_flag_names_its_gen_kwargs_key(
    harness, data_dir: Path, typed: tuple[str, ...], meant: str
) -> None:
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--data_dir", data_dir, *typed)
    assert _error(run) == f"harness: error: unrecognized arguments: {' '.join(typed)}; did you mean {meant}?"


def test_the_gen_kwargs_a_num_beams_flag_is_named_as_runs(harness, data_dir: Path) -> None:
    common = ("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--data_dir", data_dir, "--limit", "1")
    assert harness(*common, "--gen_kwargs", "num_beams=1").code == 0
    run = harness(*common, "--gen_kwargs", "num_beams=4")  # no run makes a beam search: said, not ignored
    assert "--gen_kwargs num_beams=4: beam search is not run" in _error(run)
