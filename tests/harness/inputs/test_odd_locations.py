"""Locations a user types that the system or the Hub's own checks cannot take are one line each (issue 49, item 7):
`--data_dir '~nosuchuser/x'` (`Path.expanduser` raised a RuntimeError), `--data_dir hf://a:b/c` (huggingface_hub's
HFValidationError), and the same in a checkpoint's `pretrained=` and in `builders build --source`."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import cli as builders_cli


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--data_dir", "~nosuchuser/x"), "--data_dir ~nosuchuser/x: ~nosuchuser names no user's home folder"),
        (("--data_dir", "hf://a:b/c"), "'a:b' is not a name the Hub gives an owner or a repo"),
        (("--data_dir", "hf://org/-x-"), "'-x-' is not a name the Hub gives an owner or a repo"),
    ],
    ids=["tilde-user", "hub-colon", "hub-dashes"],
)
def test_a_data_dir_the_system_cannot_take_is_one_line(harness, argv: tuple[str, ...], said: str) -> None:
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "constant", "--model_args", "answer=1", *argv)
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert said in line, line


def test_a_checkpoint_under_an_unknown_users_home_is_one_line(harness, data_dir: Path) -> None:
    run = harness(
        "--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--model_args", "pretrained=~nosuchuser/ckpt",
        "--data_dir", data_dir, "--limit", "1",
    )  # fmt: skip
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert "checkpoint ~nosuchuser/ckpt: ~nosuchuser names no user's home folder on this machine" in line, line


@pytest.mark.parametrize("benchmark", ["mmlongbench", "milebench"])
def test_a_hub_source_the_hub_would_refuse_is_one_line(
    benchmark: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = builders_cli.main(["build", benchmark, "--source", "hf://a:b/c", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "Traceback" not in err, err
    assert "--source 'hf://a:b/c': expected hf://ORG/NAME" in err
