"""Adding configs to a build with other flags: the error suggests the command that adds them with the flags the
build in place recorded, and that command works as suggested."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from builders.cli import main as builders_main
from builders.core.contract import read_manifest


def test_a_different_build_suggests_the_recorded_flags_and_the_suggestion_adds_the_configs(tmp_path: Path,
                                                                                            capsys) -> None:
    first = ["build", "locovqa", "--limit", "2", "--cell-size", "112", "--configs", "okvqa_cmp_1", "--out",
             str(tmp_path), "--quiet"]
    assert builders_main(first) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert builders_main(["build", "locovqa", "--configs", "okvqa_int_4", "--out", str(tmp_path), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "already holds a different build (limit: 2 -> 4;" in err  # the short difference first
    (suggested,) = re.findall(r"repeat the flags it was built with: (.+?); or pass --overwrite", err)
    assert shlex.split(suggested) == ["builders", "build", "locovqa", "--limit", "2", "--cell-size", "112",
                                      "--configs", "okvqa_int_4", "--out", str(tmp_path)]
    assert builders_main([*shlex.split(suggested)[1:], "--quiet"]) == 0, capsys.readouterr().err
    assert read_manifest(tmp_path / "locovqa")["request"]["configs"] == ["okvqa_cmp_1", "okvqa_int_4"]
