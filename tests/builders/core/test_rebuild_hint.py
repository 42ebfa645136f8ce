"""Adding configs to a build with other flags: the error suggests the command that adds them with the flags the
build in place recorded, and that command works as suggested."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from builders.cli import main as builders_main
from builders.core.contract import read_manifest


@pytest.mark.slow  # three builds (~2 s)
def test_a_different_build_suggests_the_recorded_flags_and_the_suggestion_adds_the_configs(
    tmp_path: Path, capsys
) -> None:
    recorded = ["--limit", "2", "--cell-size", "112"]  # the flags the build in place was made with
    first = ["build", "locovqa", *recorded, "--configs", "okvqa_cmp_1", "--out", str(tmp_path), "--quiet"]
    assert builders_main(first) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert builders_main(["build", "locovqa", "--configs", "okvqa_int_4", "--out", str(tmp_path), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "already holds a different build (limit: 2 -> 4;" in err  # the short difference first
    (suggested,) = re.findall(r"repeat the flags it was built with: (.+?); or pass --overwrite", err)
    adding = ["build", "locovqa", *recorded, "--configs", "okvqa_int_4", "--out", str(tmp_path)]
    assert shlex.split(suggested) == ["builders", *adding]
    assert builders_main([*shlex.split(suggested)[1:], "--quiet"]) == 0, capsys.readouterr().err
    assert read_manifest(tmp_path / "locovqa")["request"]["configs"] == ["okvqa_cmp_1", "okvqa_int_4"]


@pytest.mark.slow  # three fixture:full builds, one of them 256K
def test_when_the_configs_change_the_source_the_hint_builds_both_sets_together(tmp_path: Path, capsys) -> None:
    """`fixture:full` writes pools for configs past 128K, so asking one of them with the flags a build recorded
    gives another source: repeating those flags (the hint above) would fail the same way again."""
    flags = ["build", "mmlongbench", "--source", "fixture:full", "--fixture-ids", "1"]
    assert builders_main([*flags, "--configs", "vrag_viquae_8k", "--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    assert builders_main([*flags, "--configs", "vrag_viquae_256k", "--out", str(tmp_path), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert '(source: "fixture-full-v1-ids1" -> "fixture-full-v1-ids1-pools256k")' in err
    assert "repeat the flags it was built with" not in err
    (suggested,) = re.findall(r"build all together: (.+?); or build these into another --out", err)
    assert shlex.split(suggested) == [
        "builders",
        *flags,
        "--configs",
        "vrag_viquae_8k,vrag_viquae_256k",
        "--out",
        str(tmp_path),
        "--overwrite",
    ]
    assert builders_main([*shlex.split(suggested)[1:], "--quiet"]) == 0, capsys.readouterr().err
    request = read_manifest(tmp_path / "mmlongbench")["request"]
    assert request["configs"] == ["vrag_viquae_8k", "vrag_viquae_256k"]
    assert request["source"] == "fixture-full-v1-ids1-pools256k"
