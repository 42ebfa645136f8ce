"""README.md is a front door: under 10 KB, every local link leads to a file, and every command in its `sh` blocks
that runs offline is run here, as extracted from the file, so a stale example fails.

The commands run in one temporary folder, in order, offline (HF_HUB_OFFLINE=1), with a Hub cache filled from
MMLongBench's offline fixture under the release's published file names: `--source hf://ZhaoweiWang/MMLongBench`
builds as the README says. What cannot run here is said, not skipped silently:
- `pip install`, `make` (they install; CI runs `make test` itself);
- a line marked `# GPU` runs with `--model random` in place of its model (no GPU here): its tasks, data and flags
  are still checked.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
NOT_RUN = {"pip": "installs packages", "make": "builds .venv and runs what CI runs"}
# Pages other issues write at the same time (30: integrity, 32: viewing, 34: scaling); linked before they land.
PAGES_IN_FLIGHT = {"docs/integrity.md", "docs/viewing.md", "docs/scaling.md"}


def readme_commands(text: str) -> list[str]:
    """The command lines of the README's `sh` blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                commands.append(line.strip())
    return commands


def runnable(command: str) -> list[str] | None:
    """The argv to run for a README line (as `python -m`), or None for a line that cannot run here."""
    gpu = re.search(r"#\s*GPU\s*$", command) is not None
    argv = shlex.split(command, comments=True)
    if argv[0] in NOT_RUN:
        return None
    assert argv[0] in ("builders", "harness"), f"README command of an unknown kind: {command}"
    if gpu:
        at = argv.index("--model")
        argv[at + 1] = "random"
        if "--model_args" in argv:
            del argv[argv.index("--model_args") : argv.index("--model_args") + 2]
    return [sys.executable, "-m", argv[0], *argv[1:]]


def test_the_readme_is_short_and_its_links_lead_to_files() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) < 10_000
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert set(missing) <= PAGES_IN_FLIGHT, missing


@pytest.mark.slow
def test_every_offline_command_of_the_readme_runs(tmp_path: Path) -> None:
    from builders.mmlongbench.fixture import write_fixture
    from builders.mmlongbench.leaves import IMAGE_ARCHIVES, TEXT_ARCHIVES
    from tests.support.hub_cache import fill_hub_cache

    release = write_fixture(tmp_path / "release", archives=True)
    files = {TEXT_ARCHIVES[0]: release / TEXT_ARCHIVES[1]}
    files |= {hub: release / old for hub, old in IMAGE_ARCHIVES.values() if (release / old).is_file()}
    fill_hub_cache(tmp_path / "hub", "ZhaoweiWang/MMLongBench", files)
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "PYTHONPATH": str(ROOT),
        "MMLONGEVAL_DATA_DIR": str(work / "no-data"),
    }
    commands = readme_commands(README.read_text(encoding="utf-8"))
    ran = 0
    for command in commands:
        argv = runnable(command)
        if argv is None:
            continue
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"README command failed: {command}\n{done.stderr[-3000:]}"
        ran += 1
    assert ran >= 6
    assert (work / "results" / "report.md").is_file()


def test_the_readme_and_the_demo_say_how_to_reach_the_commands_and_the_cpu_build_of_torch() -> None:
    """Issue 44: nothing said to activate .venv after `make demo` (its commands are in .venv/bin, not on PATH), and
    `pip install -e '.[hf,view]'` pulls the CUDA build of torch on a CPU-only machine without a word."""
    text = README.read_text(encoding="utf-8")
    install = text.split("## Install")[1].split("## ")[0]
    assert "pip install torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cpu" in install
    make = text.split("## Two make commands")[1].split("## ")[0]
    assert "source .venv/bin/activate" in make and "harness view demo_out/results" in make
    last = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8").strip().splitlines()[-1]
    done = subprocess.run(
        ["bash", "-c", f"BIN=/x/.venv/bin OUT=/x/demo_out; {last}"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == (
        "demo: the commands are in /x/.venv/bin: run 'source /x/.venv/bin/activate' (or put /x/.venv/bin on your "
        "PATH), then: harness view /x/demo_out/results"
    )
