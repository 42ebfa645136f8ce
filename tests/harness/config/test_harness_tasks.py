"""The task system: discovery, include, !function hooks, groups and tags, and bad task files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.config.task_index import TaskIndex, default_tasks_dir
from harness.config.yaml_loader import load_config
from harness.errors import TaskConfigError
from harness.inputs.build_files import datasets_quiet
from tests.support.deadline import within
from tests.support.run_setups import run_args


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_installed_tasks_are_indexed() -> None:
    index = TaskIndex()
    assert len([t for t in index.tasks if t.startswith("mmneedle_")]) == 42
    assert set(index.groups) >= {"mmneedle", "mmneedle_k1", "mmneedle_k2", "mmneedle_k5"}
    assert len(index.tags["mmneedle_pos"]) == 21 and len(index.tags["mmneedle_neg"]) == 21
    selection = index.select(["mmneedle"])
    assert len(selection.tasks) == 42
    assert selection.groups["mmneedle"] == ["mmneedle_k1", "mmneedle_k2", "mmneedle_k5"]
    assert len(selection.groups["mmneedle_k2"]) == 14
    config = index.tasks["mmneedle_m10_n4_k2_pos"]
    # include: chain merged (template + default), generation settings of spec A11
    assert config.dataset_name == "m10_n4_k2" and config.dataset_path == "mmneedle"
    assert config.generation_kwargs == {"max_gen_toks": 300, "temperature": 0.0, "do_sample": False, "until": []}
    assert "individual_exact_acc" in [m.metric for m in config.metric_list]
    assert index.select(["mmneedle_m1_n2_k*_neg"]).tasks == [
        "mmneedle_m1_n2_k1_neg",
        "mmneedle_m1_n2_k2_neg",
        "mmneedle_m1_n2_k5_neg",
    ]


def test_committed_yamls_match_their_generator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_yamls", default_tasks_dir() / "mmneedle" / "_make_yamls.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.main()
    generated = sorted(tmp_path.glob("*.yaml"))
    assert len(generated) == 42 + 4  # leaves and groups only: the templates are written by hand
    for path in generated:
        assert (default_tasks_dir() / "mmneedle" / path.name).read_text() == path.read_text(), path.name


def test_task_leaves_cover_exactly_the_builders_configs() -> None:
    from builders.mmneedle import CONFIGS

    index = TaskIndex()
    leaves = {name: config for name, config in index.tasks.items() if config.dataset_path == "mmneedle"}
    assert {config.dataset_name for config in leaves.values()} == set(CONFIGS)
    assert set(leaves) == {f"mmneedle_{name}_{polarity}" for name in CONFIGS for polarity in ("pos", "neg")}
    for name, config in leaves.items():
        assert name == f"mmneedle_{config.dataset_name}_{name.rsplit('_', 1)[1]}"


@pytest.mark.slow  # the console script in a child process
def test_ls_from_another_folder_uses_the_installed_tasks(tmp_path: Path, harness_script: str, script_env) -> None:
    proc = subprocess.run(
        [harness_script, "ls"], cwd=tmp_path, env=script_env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    total = len(TaskIndex().tasks)  # every benchmark's leaves: the count grows as benchmarks are added
    assert f"Tasks ({total}):" in proc.stdout and "mmneedle_m10_n8_k5_pos" in proc.stdout
    assert "mmneedle_k1" in proc.stdout and "mmneedle_pos" in proc.stdout


def test_custom_task_with_include_function_and_weighted_group(tmp_path: Path, needle_run) -> None:
    tasks = tmp_path / "my_tasks"
    write(
        tasks / "utils.py",
        """
        def process_results(doc, results):
            return {"says_minus_one": float(results[0].strip() == "-1")}
    """,
    )
    write(
        tasks / "_base.yaml",
        """
        dataset_path: mmneedle
        doc_to_image: images
        doc_to_text: "{{prompt}}"
        doc_to_target: answer
        process_results: !function utils.process_results
        metric_list:
          - metric: says_minus_one
            aggregation: mean
        metadata:
          version: 2.0
    """,
    )
    write(tasks / "a.yaml", "include: _base.yaml\ntask: probe_k1\ndataset_name: m1_n2_k1\n")
    write(tasks / "b.yaml", "include: _base.yaml\ntask: probe_k2\ndataset_name: m10_n1_k2\ntag: probes\n")
    write(
        tasks / "group.yaml",
        """
        group: probe_all
        task: [probe_k1, probe_k2]
        aggregate_metric_list:
          - metric: says_minus_one
            weight_by_size: true
    """,
    )
    probes = {"model_args": "answer=-1", "include_path": tasks}
    run = needle_run("probe_all", "constant", tmp_path / "out", "--limit", "5", **probes)
    assert run.code == 0, run.err
    results = run.results("constant")
    assert results["results"]["probe_k1"]["says_minus_one,none"] == 1.0
    assert results["versions"]["probe_k1"] == 2.0
    assert results["group_subtasks"] == {"probe_all": ["probe_k1", "probe_k2"]}
    assert results["groups"]["probe_all"]["says_minus_one,none"] == 1.0
    assert results["group_aggregation"]["probe_all"]["n_scored"] == 10
    assert results["configs"]["probe_k1"]["process_results"] == "!function utils.process_results"
    tagged = needle_run("probes", "constant", None, "--limit", "2", **probes)
    assert tagged.code == 0 and "probe_k2" in tagged.out and "probe_k1" not in tagged.out


def test_malformed_yaml_names_file_and_line(tmp_path: Path, harness) -> None:
    bad = write(
        tmp_path / "t" / "broken.yaml", "task: broken\ndataset_path: x\ndoc_to_text: [unclosed\nmetric_list: []\n"
    )
    run = harness("--tasks", "broken", "--model", "constant", "--model_args", "answer=-1", "--include_path", bad.parent)
    assert run.code == 2
    assert f"{bad}:4:" in run.err and "malformed YAML" in run.err
    assert "Traceback" not in run.err


def test_a_task_file_that_is_not_utf8_is_named_in_one_line(tmp_path: Path, data_dir: Path, harness) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "good.yaml").write_text("task: fine\ndataset_path: mmneedle\ndoc_to_text: prompt\n")
    bad = folder / "latin1.yaml"
    bad.write_bytes("task: caf\u00e9\ndataset_path: mmneedle\n# r\u00e9sum\u00e9\n".encode("latin-1"))
    expected = (
        f"harness: error: {bad}:1: not UTF-8 text (byte 0xe9 at offset 9); task and group files must be saved as UTF-8"
    )
    for args in (
        ("ls", "--include_path", folder),
        ("--tasks", "fine", "--model", "random", "--include_path", folder, "--data_dir", data_dir),
        ("--tasks", bad, "--model", "random"),
    ):
        run = harness(*args)
        assert run.code == 2 and "Traceback" not in run.err, args
        assert run.err.strip().splitlines() == [expected], args


def test_a_control_character_in_a_task_file_is_one_line_naming_file_and_line(tmp_path: Path, harness) -> None:
    """PyYAML's message for it is two lines (issue 41's YAML fuzz property let it through: it checked nothing)."""
    bad = write(tmp_path / "t" / "control.yaml", 'task: control\ndataset_path: x\ndoc_to_text: "a\x06b"\n')
    run = harness("ls", "--include_path", bad.parent)
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert run.err.strip().splitlines() == [
        f"harness: error: {bad}:3: malformed YAML: unacceptable character #x0006 (control characters are not allowed)"
    ]


def test_missing_function_names_file_and_line(tmp_path: Path, needle_run) -> None:
    folder = tmp_path / "t"
    write(folder / "utils.py", "def something_else(doc, results):\n    return {}\n")
    task = write(
        folder / "t.yaml",
        """
        task: needs_hook
        dataset_path: mmneedle
        dataset_name: m1_n2_k1
        doc_to_text: prompt
        process_results: !function utils.not_there
        metric_list:
          - metric: acc
    """,
    )
    run = needle_run("needs_hook", "constant", None, model_args="answer=-1", include_path=folder)
    assert run.code == 2
    assert f"{task}:5:" in run.err and "not_there" in run.err and "utils.py" in run.err


def test_unknown_task_key_is_reported_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "task: x\ndataset_path: d\ndoc_to_text: prompt\nmetric_lst: []\n")
    with pytest.raises(TaskConfigError, match=rf"{path}:4: unknown task key 'metric_lst'; did you mean: metric_list"):
        TaskIndex([path], include_defaults=False)


@pytest.mark.parametrize("key", ["truncation", "text_round_trip", "fit_context"])
def test_a_prompt_rewriting_hook_needs_doc_to_text(tmp_path: Path, key: str) -> None:
    path = write(
        tmp_path / "t.yaml", f"task: x\ndataset_path: d\ndoc_to_messages: !function u.m\n{key}: !function u.f\n"
    )
    with pytest.raises(TaskConfigError, match=rf"{path}:4: `{key}` rewrites the `doc_to_text` prompt"):
        TaskIndex([path], include_defaults=False)


def test_include_cycle_and_missing_include(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "include: b.yaml\ntask: a\n")
    write(tmp_path / "b.yaml", "include: a.yaml\n")
    with pytest.raises(TaskConfigError, match="include cycle"):
        load_config(tmp_path / "a.yaml")
    missing = write(tmp_path / "c.yaml", "task: c\n\ninclude: nowhere.yaml\n")
    with pytest.raises(TaskConfigError, match=rf"{missing}:3: included file 'nowhere.yaml' not found"):
        load_config(missing)


def test_a_template_is_parsed_once_per_index_and_each_task_gets_its_own_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.config.yaml_loader as yaml_loader

    write(
        tmp_path / "_base.yaml", "dataset_path: d\ndoc_to_text: q\ngeneration_kwargs:\n  until: [stop]\ntag: [probes]\n"
    )
    for name in "abc":
        write(tmp_path / f"{name}.yaml", f"include: _base.yaml\ntask: t_{name}\n")
    parsed: list[str] = []
    parse = yaml_loader.load_yaml_file
    monkeypatch.setattr(yaml_loader, "load_yaml_file", lambda path: (parsed.append(path.name), parse(path))[1])
    index = TaskIndex([tmp_path], include_defaults=False)
    # Once for the three tasks that include it, once as a file of the folder (a template, indexed as nothing).
    assert sorted(parsed) == ["_base.yaml", "_base.yaml", "a.yaml", "b.yaml", "c.yaml"]
    assert index.tags["probes"] == ["t_a", "t_b", "t_c"]
    index.tasks["t_a"].generation_kwargs["until"].append("mine")
    assert index.tasks["t_b"].generation_kwargs["until"] == ["stop"]  # not one list shared by every includer
    assert TaskIndex([tmp_path], include_defaults=False).tasks["t_a"].generation_kwargs["until"] == ["stop"]


def test_a_folder_indexed_again_in_one_process_is_parsed_again_only_where_a_file_it_read_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.config.yaml_loader as yaml_loader

    folder, shared = tmp_path / "tasks", tmp_path / "shared"
    write(shared / "_base.yaml", "dataset_path: d\ndoc_to_text: q\ngeneration_kwargs:\n  until: [aaaa]\n")
    write(folder / "a.yaml", "include: ../shared/_base.yaml\ntask: t_a\n")
    parsed: list[str] = []
    parse = yaml_loader.load_yaml_file
    monkeypatch.setattr(yaml_loader, "load_yaml_file", lambda path: (parsed.append(path.name), parse(path))[1])

    def until() -> list[str]:
        return TaskIndex([folder], include_defaults=False).tasks["t_a"].generation_kwargs["until"]

    assert until() == ["aaaa"] and parsed == ["a.yaml", "_base.yaml"]
    assert until() == ["aaaa"] and len(parsed) == 2  # nothing changed: nothing parsed
    write(shared / "_base.yaml", "dataset_path: d\ndoc_to_text: q\ngeneration_kwargs:\n  until: [bbbb]\n")
    assert until() == ["bbbb"]  # a template outside the folder, rewritten at the same size
    write(folder / "b.yaml", "task: t_b\ndataset_path: d\ndoc_to_text: q\n")
    assert set(TaskIndex([folder], include_defaults=False).tasks) == {"t_a", "t_b"}  # a file added
    (shared / "_base.yaml").unlink()
    os.mkfifo(shared / "_base.yaml")  # swapped for a FIFO once parsed: the kept parse's check never waits on it
    with within(10, "indexing again over a FIFO"), pytest.raises(TaskConfigError, match="_base.yaml' not found"):
        TaskIndex([folder], include_defaults=False)


@pytest.mark.parametrize("rewritten", ["a.yaml", "_base.yaml"])
def test_a_file_rewritten_while_it_is_parsed_is_parsed_again(
    rewritten: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 87: a task file (or the template it includes) rewritten between its parse and the digest that keys the
    kept parse: the next index in the process reads the new bytes, not the old parse (the cache is keyed by the bytes
    that were parsed)."""
    import harness.config.yaml_loader as yaml_loader

    write(tmp_path / "_base.yaml", "dataset_path: d\ndoc_to_text: aaaa\n")
    write(tmp_path / "a.yaml", "include: _base.yaml\ntask: t_a\ngeneration_kwargs:\n  until: [aaaa]\n")
    parse = yaml_loader.load_yaml_file

    def parse_then_rewrite(path: Path) -> object:
        data = parse(path)
        if path.name == rewritten:  # a writer racing the index, once its bytes are parsed
            write(path, path.read_text().replace("aaaa", "bbbb"))
        return data

    def read() -> tuple[str, str]:
        task = TaskIndex([tmp_path / "a.yaml"], include_defaults=False).tasks["t_a"]
        return task.generation_kwargs["until"][0], str(task.doc_to_text)

    monkeypatch.setattr(yaml_loader, "load_yaml_file", parse_then_rewrite)
    assert read() == ("aaaa", "aaaa")
    monkeypatch.setattr(yaml_loader, "load_yaml_file", parse)
    assert read() == (("bbbb", "aaaa") if rewritten == "a.yaml" else ("aaaa", "bbbb"))


def test_an_include_cycle_through_a_template_many_tasks_share(tmp_path: Path) -> None:
    write(tmp_path / "_t.yaml", "include: _u.yaml\ndataset_path: d\n")
    write(tmp_path / "_u.yaml", "include: _t.yaml\n")
    for name in "ab":
        write(tmp_path / f"{name}.yaml", f"include: _t.yaml\ntask: {name}\ndoc_to_text: q\n")
    with pytest.raises(TaskConfigError, match="include cycle"):
        TaskIndex([tmp_path], include_defaults=False)


def test_unknown_task_and_model_suggest_names(harness, data_dir: Path) -> None:
    run = harness("--tasks", "mmneedle_m1_n2_k1_pso", "--model", "random")
    assert run.code == 2 and "unknown task 'mmneedle_m1_n2_k1_pso'; did you mean: mmneedle_m1_n2_k1_pos" in run.err
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "qwen2.5vl", "--data_dir", data_dir)
    assert run.code == 2 and "unknown model 'qwen2.5vl'; did you mean:" in run.err and "qwen2.5-vl" in run.err


def test_missing_dataset_names_the_builder_command(tmp_path: Path, harness) -> None:
    (tmp_path / "empty").mkdir()
    run = harness("--tasks", "mmneedle_m10_n4_k1_pos", "--model", "random", "--data_dir", tmp_path / "empty")
    assert run.code == 2
    assert "dataset 'mmneedle' not found" in run.err
    assert "builders build mmneedle" in run.err and "--configs m10_n4_k1" in run.err


def test_missing_config_in_a_build_names_the_builder_command(data_dir: Path, harness) -> None:
    run = harness("--tasks", "mmneedle_m10_n8_k5_neg", "--model", "random", "--data_dir", data_dir)
    assert run.code == 2
    assert "m10_n8_k5" in run.err and "builders build mmneedle" in run.err


@pytest.mark.slow  # the CLI in fresh processes (~2 s)
def test_bad_arguments_exit_2_without_traceback(harness, data_dir: Path) -> None:
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "constant", "--data_dir", data_dir)
    assert run.code == 2 and "constant needs the answer" in run.err
    run = harness(
        "--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--model_args", "sed=1", "--data_dir", data_dir
    )
    assert run.code == 2 and "unknown model argument 'sed'; known: " in run.err and "seed" in run.err
    run = harness(
        "--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--gen_kwargs", "max_tokens=5", "--data_dir", data_dir
    )
    assert run.code == 2 and "max_tokens" in run.err
    run = harness("--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--metadata", "{bad", "--data_dir", data_dir)
    assert run.code == 2 and "--metadata" in run.err


def test_help_mentions_subcommands() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness.run.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "harness ls" in proc.stdout and "harness report" in proc.stdout


def test_doc_to_messages_system_turn(tmp_path: Path, needle_run) -> None:
    write(
        tmp_path / "t" / "utils.py",
        """
        def messages(doc):
            return [{"role": "system", "content": "Answer tersely."},
                    {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image"},
                                                 {"type": "text", "text": doc["prompt"].replace("<image>", "")}]}]
    """,
    )
    write(
        tmp_path / "t" / "t.yaml",
        """
        task: chat_task
        dataset_path: mmneedle
        dataset_name: m1_n2_k1
        doc_to_messages: !function utils.messages
        doc_to_visual: images
        doc_to_target: answer
        metric_list:
          - metric: exact_match
    """,
    )
    chat = {"model_args": "answer=-1", "include_path": tmp_path / "t"}
    run = needle_run("chat_task", "constant", tmp_path / "out", "--limit", "1", "--log_samples", **chat)
    assert run.code == 0, run.err
    (sample,) = run.samples("constant", "chat_task")
    assert sample["prompt"].startswith("[system] Answer tersely.\n[user] Look:<image>Given 1 image")


def test_alias_resolution_and_overrides() -> None:
    from harness.models.aliases import resolve

    backend, args, alias = resolve("qwen2.5-vl", {"max_pixels": "401408"})
    assert (backend, alias) == ("hf", "qwen2.5-vl")
    # As MMLongBench runs it: Qwen's default pixel limits, and no context limit at all (the official wrapper has none).
    assert args == {
        "pretrained": "Qwen/Qwen2.5-VL-7B-Instruct",
        "no_context_limit": "true",
        "prompt_style": "qwen",  # the chat as vlm_model/qwen2_vl.py builds it
        "max_pixels": "401408",
    }
    backend, args, _ = resolve("qwen2.5-vl", {"backend": "vllm"})
    assert backend == "vllm" and "backend" not in args and "max_pixels" not in args
    assert resolve("hf", {"pretrained": "x"}) == ("hf", {"pretrained": "x"}, None)
    from harness.models.aliases import task_benchmarks
    from harness.run.results_config import alias_info as _alias_info

    # The training window is recorded with the results, never used as a limit; so is how the paper of the run's
    # benchmark ran the model (its declaration, read through the tasks).
    info = _alias_info("qwen2.5-vl", task_benchmarks(["mmlongbench_8k"]))
    assert info is not None and info["trained_context"] == 32768 and info["paper_name"] == "Qwen2.5-VL-7B"
    assert info["papers"] == {
        "mmlongbench": {
            "paper_name": "Qwen2.5-VL-7B",
            "ran": "Qwen/Qwen2.5-VL-7B-Instruct",
            "status": "as the paper",
            "args": {},
        }
    }
    assert info["rules"] == [] and info["prompt"]["name"] == "qwen" and info["prompt"]["prefill"] is True
    assert _alias_info(None) is None
    elsewhere = _alias_info("qwen2.5-vl", task_benchmarks(["mmneedle"]))  # not a model of MMNeedle's paper
    assert elsewhere is not None and elsewhere["papers"] == {} and elsewhere["paper_name"] is None


def test_a_plain_dataset_with_one_image_column(tmp_path: Path, harness) -> None:
    """Not MMNeedle: one `Image()` per row, no token figures (context checks skipped), builtin metric."""
    import io

    import datasets
    from PIL import Image

    def png(color: str) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), color).save(buffer, format="PNG")
        return buffer.getvalue()

    rows = {
        "id": ["a", "b", "c"],
        "image": [{"bytes": png(c), "path": None} for c in ("red", "blue", "red")],
        "question": ["<image>Colour?"] * 3,
        "answer": ["red", "blue", "red"],
    }
    ds = datasets.Dataset.from_dict(rows).cast_column("image", datasets.Image())
    (tmp_path / "data" / "colours" / "data").mkdir(parents=True)
    with datasets_quiet():  # its bar would be read as the run's (a run no longer turns them off for the process)
        ds.to_parquet(str(tmp_path / "data" / "colours" / "data" / "test-00000-of-00001.parquet"))
    write(
        tmp_path / "t" / "colours.yaml",
        """
        task: colours
        dataset_path: colours
        doc_to_visual: image
        doc_to_text: question
        doc_to_target: answer
        metric_list:
          - metric: exact_match
    """,
    )
    colours = {"model_args": "answer=red", "include_path": tmp_path / "t", "out": tmp_path / "out"}
    args = (*run_args("colours", "constant", data_dir=tmp_path / "data", **colours), "--log_samples")
    refused = harness(*args)  # no build manifest: nothing to verify its files against
    assert refused.code == 2 and len(refused.err.splitlines()) == 1
    assert f"{tmp_path / 'data' / 'colours'}: cannot verify this data: no build manifest" in refused.err
    run = harness(*args, "--trust_unverified_data")
    assert run.code == 0, run.err
    assert run.results("constant")["results"]["colours"]["exact_match,none"] == 2 / 3
    assert run.results("constant")["datasets"]["colours"]["verification"] == "unverified"
    samples = run.samples("constant", "colours")
    assert [s["image_sha256"] for s in samples] == [
        [hashlib.sha256(png(c)).hexdigest()] for c in ("red", "blue", "red")
    ]


def test_missing_configs_of_a_group_get_one_build_command(data_dir: Path, harness) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", data_dir)
    assert run.code == 2
    assert "12 tasks have no data:" in run.err  # the build holds m1_n2_k1 only, of the K=1 configs
    assert run.err.count("build manifest") == 1  # what the build holds, said once and not per task
    assert f"the build manifest of {data_dir / 'mmneedle'} lists: " in run.err
    assert (
        f"build them with: builders build mmneedle --source coco=COCO_DIR --configs m1_n4_k1 m1_n8_k1 "
        f"m10_n1_k1 m10_n2_k1 m10_n4_k1 m10_n8_k1 --out {data_dir}"
    ) in run.err


def test_the_build_hint_repeats_the_users_own_build(tmp_path: Path, data_dir: Path, harness) -> None:
    import json
    import shutil

    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    manifest_path = root / "mmneedle" / "build_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["build_command"] = ["builders", "build", "mmneedle", "--source", "coco=/my data/coco", "--limit", "12"]
    manifest_path.write_text(json.dumps(manifest))
    run = harness("--tasks", "mmneedle_m1_n4_k1,mmneedle_m1_n8_k1", "--model", "random", "--data_dir", root)
    assert run.code == 2
    assert (
        f"build them with: builders build mmneedle --source 'coco=/my data/coco' --limit 12 --configs m1_n4_k1 "
        f"m1_n8_k1 --out {root}"
    ) in run.err
