"""Issue 63 item 7: the commands a newcomer tried, each ending in one line or succeeding, through the real CLI.

- `--device cuda:0` (lm-eval's README line), `mps`, `xpu`, `hpu`, `device_map=cuda:0` on a machine without them: one
  line before any model loads; `auto` and `cpu` honoured;
- `parallelize=True` (lm-eval's `device_map=auto`) without `accelerate`: one line naming it;
- a required model argument left out, or given as `none`: one line naming it;
- every install line in a message or a doc names an extra this checkout has (`pip install -e '.[X]'`);
- `--use_cache x.db` (lm-eval's file) keeps the cache in that file, not a folder of that name.
"""

from __future__ import annotations

import html
import importlib.util
import re
import shlex
import sqlite3
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.paths import PROJECT


def _one_line(run) -> str:
    lines = [line for line in run.err.strip().splitlines() if line.startswith("harness: error:")]
    assert run.code == 2 and len(lines) == 1, run.err
    return lines[0]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the hf backend needs torch")
@pytest.mark.parametrize(
    ("flags", "own", "said"),
    [  # lm-eval's and lmms-eval's spellings (issue 76, item 1), on a machine without an accelerator
        (("--device", "cuda:0"), "", "device cuda:0 (--device, --model_args device=)"),
        ((), ",device=cuda", "device cuda (--device, --model_args device=)"),
        (("--device", "mps"), "", "device mps (--device, --model_args device=): this torch"),
        (("--device", "xpu"), "", "device xpu (--device, --model_args device=): this torch"),
        (("--device", "hpu"), "", "device hpu (--device, --model_args device=): this torch"),
        (
            ("--device", "npu"),
            "",
            "device npu (--device, --model_args device=): not a device torch knows (torch's are cpu, cuda",
        ),
        ((), ",device_map=cuda:0", "device_map=cuda:0: this torch"),
    ],
)
def test_a_device_this_torch_cannot_use_is_one_line_before_the_model_loads(
    harness, data_dir: Path, tiny_llava: Path, flags: tuple[str, ...], own: str, said: str
) -> None:
    import torch

    if torch.accelerator.is_available():
        pytest.skip("an accelerator here takes some of these devices")
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--model_args", f"pretrained={tiny_llava}{own}",
                  "--data_dir", data_dir, "--limit", "1", *flags)  # fmt: skip
    line = _one_line(run)
    assert said in line and "Traceback" not in run.err
    if "cuda" in " ".join(flags) + own:
        assert ("CPU build without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible") in line
    assert "--device cpu" in line or "device_map=cpu" in line


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the hf backend needs torch")
@pytest.mark.parametrize(("flags", "own"), [(("--device", "auto"), ""), (("--device", "cpu"), ",device_map=cpu")])
def test_auto_and_the_cpu_are_honoured(
    harness, data_dir: Path, tiny_llava: Path, flags: tuple[str, ...], own: str
) -> None:
    """`--device auto`: the accelerator torch finds, else the CPU (here, the CPU); `device_map=cpu` a device too."""
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--model_args",
                  f"pretrained={tiny_llava},dtype=float32{own}", "--data_dir", data_dir, "--limit", "1", *flags)  # fmt: skip
    assert run.code == 0, run.err


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the hf backend needs torch")
def test_parallelize_without_accelerate_says_what_it_needs(
    harness, data_dir: Path, tiny_llava: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "accelerate", None)  # as where the hf extra is not installed: no spec found
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--model_args",
                  f"pretrained={tiny_llava},parallelize=True,device=cpu", "--data_dir", data_dir, "--limit", "1")  # fmt: skip
    line = _one_line(run)
    assert "device_map=auto (as parallelize=True asks) needs accelerate" in line and "pip install accelerate" in line


@pytest.mark.skipif(importlib.util.find_spec("accelerate") is None, reason="the hf extra installs accelerate")
def test_parallelize_with_the_hf_extra_places_the_model_and_runs(harness, data_dir: Path, tiny_llava: Path) -> None:
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "hf", "--model_args",
                  f"pretrained={tiny_llava},parallelize=True,device=cpu", "--data_dir", data_dir, "--limit", "1")  # fmt: skip
    assert run.code == 0, run.err


@pytest.mark.parametrize(
    ("model_args", "expected"),
    [
        # docs/cost.md's line as it was printed, without the model
        ("max_output_tokens=none", "gemini backend: model argument model is required: give --model_args model=..."),
        ("model=none,max_output_tokens=none", "model argument model='none': model cannot be none, give a value"),
    ],
)
def test_a_required_model_argument_missing_or_none_is_one_line_naming_it(
    harness, data_dir: Path, monkeypatch: pytest.MonkeyPatch, model_args: str, expected: str
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "gemini", "--model_args", model_args,
                  "--data_dir", data_dir, "--screen_only")  # fmt: skip
    line = _one_line(run)
    assert expected in line and "__init__" not in line


def test_docs_costs_gemini_line_runs_as_printed(harness, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (PROJECT / "docs" / "cost.md").read_text()
    (model_args,) = re.findall(r"`--model gemini --model_args ([^`\s]+)`", text.replace("\n  ", " "))
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "gemini", "--model_args", model_args,
                  "--data_dir", data_dir, "--screen_only")  # fmt: skip
    assert run.code == 0, run.err
    assert "not an upper bound" in run.out


def _install_lines() -> list[tuple[Path, str]]:
    """Every `pip install ...` that the messages and docs of this checkout print, with the file it is in."""
    found = []
    for folder, pattern in (("harness", "*.py"), ("builders", "*.py"), ("tasks", "*.py"), ("docs", "*.md")):
        for path in (PROJECT / folder).rglob(pattern):
            for hit in re.findall(r"pip install [^`\n\"]*", path.read_text()):
                found.append((path, hit))
    return found + [
        (PROJECT / "README.md", hit) for hit in re.findall(r"pip install [^`\n]*", (PROJECT / "README.md").read_text())
    ]


def test_every_install_line_in_a_message_or_a_doc_names_an_extra_of_this_checkout() -> None:
    extras = set(tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    lines = _install_lines()
    assert any("'.[view]'" in hit for _, hit in lines)
    for path, hit in lines:
        assert "mmlongeval[" not in hit, (path, hit)  # no such distribution on an index (not published)
        for named in re.findall(r"-e '\.\[([a-z0-9,]+)\]'", hit):
            assert set(named.split(",")) <= extras, (path, hit)


def test_the_viewers_missing_extra_names_the_install_that_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.run.cli import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    code = main(["view", str(tmp_path)])  # the `harness` fixture adds --no_progress, which `view` does not take
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == (
        "harness: error: harness view needs the `view` extra (uvicorn is missing): pip install -e '.[view]'"
    )


def test_use_cache_naming_a_file_keeps_the_cache_in_that_file(
    harness, data_dir: Path, tmp_path: Path, chat_server
) -> None:
    cache = tmp_path / "x.db"
    args = ("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "openai", "--model_args",
            f"model=m,base_url={chat_server.base_url}", "--data_dir", data_dir, "--limit", "2")  # fmt: skip
    run = harness(*args, "--output_path", tmp_path / "out", "--use_cache", cache)
    assert run.code == 0, run.err
    assert cache.is_file() and not (tmp_path / "x.db" / "cache.sqlite3").exists()
    with sqlite3.connect(cache) as db:
        assert db.execute("select count(*) from sqlite_master where type = 'table'").fetchone()[0] >= 1
    # A folder is still a folder: the cache inside it, as --cache_dir.
    folder = tmp_path / "caches"
    run = harness(*args, "--output_path", tmp_path / "out2", "--use_cache", folder)
    assert run.code == 0, run.err
    assert (folder / "cache.sqlite3").is_file()


def _docs_hub_line() -> list[str]:
    """docs/lm-eval.md's `--hf_hub_log_args` command line, as printed (its continuation joined)."""
    text = (PROJECT / "docs" / "lm-eval.md").read_text().replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.startswith("harness ") and "--hf_hub_log_args" in line]
    return shlex.split(line)[1:]


@pytest.mark.parametrize("repo_key", ["results_repo_name", "hub_repo_name"])
def test_the_docs_hub_line_runs_as_printed_and_lm_evals_hub_repo_name_names_the_repo(
    harness, data_dir: Path, tmp_path: Path, repo_key: str
) -> None:
    argv = _docs_hub_line()
    assert "--log_samples" in argv  # push_samples_to_hub=True pushes the sample logs, which only it writes
    here = {"mmneedle_k1": "mmneedle_m1_n2_k1_pos", "data": str(data_dir), "results": str(tmp_path / "results")}
    argv = [here.get(arg, arg).replace("results_repo_name", repo_key) for arg in argv]
    run = harness(*argv, "--limit", "1")
    # Offline (HF_HUB_OFFLINE=1), the upload is refused: one line naming the repo, the results kept.
    assert run.code == 1, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert line.startswith("harness: error: results not uploaded to https://huggingface.co/datasets/ORG/evals: ")
    assert list((tmp_path / "results").rglob("results_*.json")) and list((tmp_path / "results").rglob("samples_*"))


def test_ls_keeps_every_tasks_columns_apart(harness) -> None:
    run = harness("ls", "tasks")
    assert run.code == 0
    rows = [line.split() for line in run.out.splitlines() if line.startswith("  ")]
    assert len(rows) > 500  # every task of the four benchmarks
    for name, dataset, source in rows:  # three columns, none glued to the next
        assert dataset.split("/")[0] in name and source.endswith(f"{name}.yaml"), (name, dataset, source)


def test_a_group_page_never_says_not_run_above_the_numbers_of_its_tasks(data_dir: Path, tmp_path: Path) -> None:
    """`--tasks` naming some tasks of a benchmark: the run holds no entry for the benchmark's group, yet its page
    shows the tasks' numbers; its head says why the group has no value, not "not run"."""
    from starlette.testclient import TestClient

    from harness.run.cli import main
    from harness.view.app import create_app, served_hosts

    common = ["--data_dir", str(data_dir), "--output_path", str(tmp_path), "--no_progress"]
    assert main(["--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", *common]) == 0
    app = create_app(tmp_path, hosts=served_hosts("127.0.0.1", 8765))
    client = TestClient(app, base_url="http://127.0.0.1:8765")
    page = client.get("/samples", params={"model": "random", "task": "mmneedle"})
    assert page.status_code == 200
    (head,) = [line for line in page.text.splitlines() if '<span class="head" data-model="random"' in line]
    assert "not run" not in head
    assert "no value: its run did not pool mmneedle (--tasks named 1 of its tasks" in html.unescape(head)
    # A cell with a number is shaded on the scale; one without (N/A, —, not run) is not shaded as a 0.
    shades = re.findall(r'<td class="(h\d+|no-number)[ "]', page.text)
    assert shades and all(shade.startswith("h") for shade in shades)
    from harness.view.shown import NOT_RUN, Shown

    assert Shown("N/A", "no value: its results hold N/A", 1, None).shade == "no-number"
    assert Shown("", NOT_RUN).shade == "no-number" and Shown("0.0", "", 1, 0.0).shade == "h0"


def test_the_report_page_is_linked_once_while_report_md_stays_the_same(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starlette.testclient import TestClient

    import harness.view.pages as pages
    from harness.run.cli import main
    from harness.view.app import create_app, served_hosts

    common = ["--data_dir", str(data_dir), "--output_path", str(tmp_path), "--no_progress"]
    assert main(["--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", *common]) == 0
    assert main(["report", str(tmp_path), "--jobs", "1"]) == 0
    linked: list[str] = []
    real = pages.linked_report
    monkeypatch.setattr(pages, "linked_report", lambda text, catalog: linked.append(text) or real(text, catalog))
    client = TestClient(create_app(tmp_path, hosts=served_hosts("127.0.0.1", 8765)), base_url="http://127.0.0.1:8765")
    first, again = client.get("/report/"), client.get("/report/")
    assert first.status_code == again.status_code == 200 and first.text == again.text and len(linked) == 1
    assert again.headers["content-security-policy"] == first.headers["content-security-policy"]
    # A report rewritten since is linked afresh.
    report = tmp_path / "report.md"
    report.write_text(report.read_text() + "\nA line added after.\n")
    fresh = client.get("/report/")
    assert "A line added after." in fresh.text and len(linked) == 2


def test_a_hyphenated_flag_and_a_file_as_output_path_are_one_line_with_the_way_out(
    harness, data_dir: Path, tmp_path: Path
) -> None:
    """`--data-dir` (a hyphen for lm-eval's underscore) names the flag meant; an `--output_path` that is, or lies
    under, a file is refused before anything runs, saying what to give (issue 76, item 6)."""
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--data-dir", data_dir)
    assert _one_line(run).endswith("unrecognized arguments: --data-dir " + str(data_dir) + "; did you mean --data_dir?")
    (tmp_path / "taken").write_text("")
    for output in (tmp_path / "taken", tmp_path / "taken" / "sub"):
        run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--data_dir", data_dir,
                      "--output_path", output)  # fmt: skip
        said = f"--output_path {output}: {tmp_path / 'taken'} is a file, not a folder; give a folder"
        assert said in _one_line(run)
