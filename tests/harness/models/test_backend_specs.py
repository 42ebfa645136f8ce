"""Each backend's declaration (`BackendSpec`, in its package) does what the tables it replaced did, read where they
were: the extras a run needs, `--device` and `--trust_remote_code`, `--max_batch_tokens`, Ray replicas, the results
folder, the report's labels and an alias switched to another backend. And reading a declaration loads none of the
backend's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.models.backends.replicas import build_model
from harness.models.backends.replicas.settings import replica_resources
from harness.outputs.results.model_results import load_results
from harness.outputs.results.results import model_folder_name
from harness.run.arguments import parse_options
from harness.run.lm_eval_flags import apply_compat_flags
from harness.run.requirements import missing_modules, run_needs


class Judged:
    name = "judged_task"
    judge = object()
    metadata: dict[str, object] = {}


def test_a_run_needs_its_backends_extra_and_its_judges() -> None:
    assert run_needs("hf", "qwen2.5-vl", None, []) == [("hf", ("flag", "--model qwen2.5-vl"))]
    assert run_needs("vllm", "vllm", None, []) == [("vllm", ("flag", "--model vllm"))]
    assert run_needs("random", "random", ("openai", "gpt-4o"), [Judged()]) == [
        ("openai", ("flag", "--judge_model gpt-4o"))
    ]
    assert run_needs("constant", "constant", ("openai", "gpt-4o"), []) == []  # no task judged: no judge opened
    assert run_needs("test_registered_only", "x", None, []) == []
    # What each extra brings, checked by import: hf's torch and transformers are installed here, vLLM is not.
    assert missing_modules("hf") == [] and missing_modules("openai") == []
    assert missing_modules("vllm") == ([] if _installed("vllm") else ["vllm"])


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(
    ("backend", "device", "remote_code"),
    [("hf", True, True), ("vllm", False, True), ("openai", False, False), ("random", False, False)],
)
def test_device_and_remote_code_reach_the_backends_that_take_them(
    backend: str, device: bool, remote_code: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse_options(["--tasks", "t", "--model", backend, "--device", "cuda:1", "--trust_remote_code"])
    model_args = apply_compat_flags(args, backend, {})
    assert ("device" in model_args, "trust_remote_code" in model_args) == (device, remote_code)
    err = capsys.readouterr().err
    assert (f"the {backend} backend places itself" in err) == (not device)
    assert (f"the {backend} backend runs no checkpoint code" in err) == (not remote_code)


@pytest.mark.parametrize(("backend", "noted"), [("hf", False), ("vllm", True), ("random", True)])
def test_max_batch_tokens_is_noted_for_a_backend_that_batches_its_own_way(
    backend: str, noted: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.run.plan import plan_run

    argv = ["--tasks", "no_such_task", "--model", backend, "--max_batch_tokens", "1000"]
    with pytest.raises(UserError):  # the task is unknown: the note comes before the tasks are looked up
        plan_run(parse_options(argv), argv)
    assert (f"{backend} batches its own way" in capsys.readouterr().err) == noted


class Front:
    def __init__(self, **settings: object) -> None:
        self.settings = type("Settings", (), settings)()


def test_each_replica_reserves_what_its_backend_declares() -> None:
    from harness.models.backends.vllm_engine.settings import vllm_settings

    hf = Front(device=None, threads=None)
    assert replica_resources("hf", hf, 8.0) == {"num_gpus": 1.0, "num_cpus": 1.0}
    assert replica_resources("hf", hf, 0.0) == {"num_gpus": 0.0, "num_cpus": 1.0}
    assert replica_resources("hf", Front(device="cpu", threads=3), 8.0) == {"num_gpus": 0.0, "num_cpus": 3.0}
    vllm = Front()
    vllm.settings = vllm_settings({"pretrained": "m", "tensor_parallel_size": "2", "pipeline_parallel_size": "2"})
    assert replica_resources("vllm", vllm, 8.0) == {"num_gpus": 4.0, "num_cpus": 1.0}
    assert replica_resources("random", object(), 8.0) == {"num_gpus": 0.0, "num_cpus": 1.0}
    with pytest.raises(ValueError, match="data_parallel_size: the openai backend sends requests to a server"):
        build_model("openai", {"model": "m", "data_parallel_size": "2"})


def test_the_results_folder_and_the_reports_label_follow_the_backend(tmp_path: Path) -> None:
    checkpoint = {"pretrained": "ORG/NAME"}
    assert [model_folder_name(b, checkpoint) for b in ("hf", "vllm", "openai")] == [
        "ORG__NAME",
        "vllm__ORG__NAME",
        "openai__ORG__NAME",
    ]
    for i, backend in enumerate(["hf", "vllm", "random", "constant", "openai", "elsewhere", None, ["hf"]]):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        config = {"model_name": f"m{i}"} | ({"model": backend} if backend is not None else {})
        (folder / "results_x.json").write_text(json.dumps({"config": config, "results": {}, "date": i}))
    for backend, path in (("hf", "/ckpt/m8"), ("vllm", "./m9")):  # a local checkpoint: by its folder (issue 89)
        folder = tmp_path / model_folder_name(backend, {"pretrained": path})
        folder.mkdir()
        run = {"config": {"model_name": path, "model": backend}, "results": {}, "date": 0}
        (folder / "results_x.json").write_text(json.dumps(run))
    labels = set(load_results(tmp_path, reader=lambda path: json.loads(path.read_text())))
    assert labels == {"m0", "m1 (vllm)", "m2", "m3", "m4 (openai)", "m5 (elsewhere)", "m6", "m7 (['hf'])"} | {
        "__ckpt__m8",
        "vllm__.__m9",
    }


def test_an_hf_alias_switched_to_another_backend_takes_its_arguments() -> None:
    from harness.models.aliases import resolve

    assert resolve("qwen2.5-vl", {})[1]["no_context_limit"] == "true"
    backend, args, _ = resolve("qwen2.5-vl", {"backend": "vllm"})
    assert backend == "vllm" and "no_context_limit" not in args
    assert (args["max_model_len"], args["generation_config"]) == ("139264", "auto")
    backend, args, _ = resolve("qwen2.5-vl", {"backend": "openai"})
    assert backend == "openai" and args["context_length"] == "139264"
    assert "prompt_style" not in args and "max_model_len" not in args and "generation_config" not in args


def test_reading_a_declaration_loads_none_of_the_backends_code() -> None:
    code = """
import sys
from harness.models.registry import BACKENDS, backend_spec
specs = {name: backend_spec(name) for name in BACKENDS}
heavy = sorted(m for m in ("torch", "transformers", "vllm", "httpx") if m in sys.modules)
loaded = sorted(s.module for name, s in specs.items() if s.module != BACKENDS[name] and s.module in sys.modules)
print(heavy, loaded)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []"
