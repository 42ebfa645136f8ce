"""The `harness` command ends without the interpreter's teardown, and loses nothing a normal exit would keep:
`atexit` callbacks run, stdout and stderr are flushed, the exit code is kept, and a process that still has a
non-daemon thread or a child exits the normal way (`harness.run.process_exit`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# A finalizer that runs only during the interpreter's teardown (module globals cleared): it marks whether the
# teardown happened. The atexit callback and the unterminated, piped (so block-buffered) print are what a fast
# exit must still deliver.
SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
from harness.run.process_exit import exit_without_teardown

class MarksTeardown:
    def __init__(self, out):
        self.mark = (out / "teardown").touch  # bound now: the module's globals are gone by the time it runs

    def __del__(self):
        self.mark()

def late():
    time.sleep(0.3)
    (Path(sys.argv[1]) / "thread").write_text("done")

if __name__ == "__main__":
    out, mode, code = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    held = MarksTeardown(out)
    atexit.register(lambda: (out / "atexit").write_text("ran"))
    print("a line not ended", end="")
    print("to stderr", end="", file=sys.stderr)
    if mode == "thread":
        threading.Thread(target=late).start()
    if mode == "child":
        import multiprocessing
        multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0.5,)).start()
    exit_without_teardown(code)
"""


def run_script(tmp_path: Path, mode: str, code: int) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "exits.py"
    script.write_text(SCRIPT)
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path), mode, str(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize("code", [0, 3])
def test_a_quiet_process_skips_the_teardown_and_keeps_code_output_and_atexit(tmp_path: Path, code: int) -> None:
    proc = run_script(tmp_path, "alone", code)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == "a line not ended"
    assert proc.stderr == "to stderr"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()


def test_a_live_non_daemon_thread_gets_the_normal_exit(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "thread", 3)
    assert proc.returncode == 3, proc.stderr
    assert (tmp_path / "thread").read_text() == "done"  # joined, as a normal exit joins it
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "teardown").exists()
    assert proc.stdout == "a line not ended"


def test_a_live_child_process_gets_the_normal_exit(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "child", 0)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "teardown").exists()


def test_a_stdout_that_cannot_be_flushed_exits_120_as_cpython_does(tmp_path: Path) -> None:
    script = tmp_path / "full.py"
    script.write_text(
        "import sys\nfrom harness.run.process_exit import exit_without_teardown\n"
        "sys.stdout = open('/dev/full', 'w')\nprint('x' * 10)\nexit_without_teardown(0)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2]
    )
    assert proc.returncode == 120, proc.stderr


def test_the_console_script_writes_everything_a_run_writes(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness_script: str, script_env: dict, harness
) -> None:
    """The installed `harness` (which ends through `exit_without_teardown`) and `main()` in this process write the
    same results, samples and journal for the same run."""
    args = ["--tasks", "toy_colors,toy_pairs", "--model", "constant", "--model_args", "answer=red"]
    args += ["--include_path", str(toy_tasks), "--data_dir", str(toy_dir), "--log_samples", "--no_progress"]
    script = subprocess.run(
        [harness_script, *args, "--output_path", str(tmp_path / "script")],
        env=script_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert script.returncode == 0, script.stderr
    assert "results written to" in script.stderr
    in_process = harness(*args, "--output_path", tmp_path / "main")
    assert in_process.code == 0, in_process.err

    def written(root: Path) -> dict[str, object]:
        (model_dir,) = [p for p in root.iterdir() if p.is_dir()]
        files: dict[str, object] = {}
        for path in sorted(model_dir.iterdir()):
            if path.name.startswith("results_"):
                results = json.loads(path.read_text())
                files["results"] = results["results"]
            elif path.name.startswith("samples_"):  # one sample a line
                lines = path.read_text().splitlines()
                rows = [json.loads(line) for line in lines]
                files[path.name.split("_2")[0]] = sorted((r["sample_id"], r["resps"], r["metrics"]) for r in rows)
            elif path.name.startswith("journal_"):  # a header line, then one sample a line
                lines = path.read_text().splitlines()[1:]
                rows = [json.loads(line) for line in lines]
                files[path.name] = sorted((r["sample_id"], r["response"], r["metrics"]) for r in rows)
        return files

    script_files, main_files = written(tmp_path / "script"), written(tmp_path / "main")
    assert {name: len(v) for name, v in script_files.items() if isinstance(v, list)} == {
        "journal_toy_colors.jsonl": 6,
        "journal_toy_pairs.jsonl": 6,
        "samples_toy_colors": 6,
        "samples_toy_pairs": 6,
    }
    assert script_files == main_files
