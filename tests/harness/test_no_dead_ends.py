"""Issue 31's dead ends, each as a newcomer met it: every stop is one line in seconds that says what to do.

- item 4: `--data_dir data/mmneedle` (the folder `builders build` printed) and a `--data_dir` that does not exist;
"""

from __future__ import annotations

from pathlib import Path


def test_a_data_dir_naming_a_build_folder_says_once_to_pass_its_parent(harness, data_dir: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", data_dir / "mmneedle")
    assert run.code == 2
    assert run.err.strip() == (f"harness: error: --data_dir {data_dir / 'mmneedle'} is a mmneedle build (it holds "
                               f"build_manifest.json); --data_dir takes the folder holding the builds: use --data_dir "
                               f"{data_dir}")


def test_a_data_dir_that_does_not_exist_is_one_line_for_every_task(harness, tmp_path: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", tmp_path / "nowhere")
    assert run.code == 2
    line = run.err.strip()
    assert "\n" not in line
    assert line.startswith(f"harness: error: --data_dir {tmp_path / 'nowhere'}: no such folder (read by 14 tasks); "
                           "build them with: builders build mmneedle")
    assert f"--out {tmp_path / 'nowhere'}" in line
