"""The vllm engine's start on vLLM's CPU build (issue 95), run as a user runs it: its processes started by spawn, as on
a GPU, and recorded; a KV cache sized from free memory where none is given; a start that cannot work refused before
it, one that fails stopped in one line with vLLM's own reason (raised in its engine core, or in its worker), one that
does not finish in time stopped in one line naming where its core waited, its processes gone and the run resumable;
an engine that dies mid-run stopped in one line however the run was started; the engine's log in the run's folder;
a script without a main guard refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.models.backends.vllm_engine.engine_log import REASON_CHARS
from tests.harness.models.vllm_cpu.test_vllm_cpu_engine import _cpu_build, harness, journals
from tests.support.engine_checkpoints import ENGINE_FAMILIES, engine_checkpoint
from tests.support.forward_pass import tiny_checkpoint
from tests.support.paths import PROJECT

pytestmark = [
    pytest.mark.skipif(not _cpu_build(), reason="vLLM's CPU build: `make test` runs this folder in .venv-vllm-cpu"),
    pytest.mark.slow,
]

TASK = "mmneedle_m1_n2_k1"
ENGINE = "dtype=float32,enforce_eager=true,max_model_len=8192"


@pytest.fixture(scope="module")
def needle_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("start-data")
    subprocess.run(
        [sys.executable, "-m", "builders", "build", "mmneedle", "--source", "synthetic", "--configs", "m1_n2_k1",
         "--limit", "2", "--out", str(data), "--quiet"], check=True, cwd=PROJECT,
    )  # fmt: skip
    return data


@pytest.fixture
def temporary() -> Iterator[Path]:
    """A temporary folder of a short path, for a run's TMPDIR: vLLM's sockets live there too (107 bytes at most)."""
    folder = Path(tempfile.mkdtemp())
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run(data: Path, out: Path, model_args: str, *more: str) -> tuple[int, str]:
    """`harness` on MMNeedle's rows of one image with the first engine family's checkpoint and `model_args`; its exit
    code and its output. Every process of the run carries a mark in its environment (`left_behind`)."""
    checkpoint = model_args.startswith("pretrained=")
    args = model_args if checkpoint else f"pretrained={engine_checkpoint(ENGINE_FAMILIES[0])},{model_args}"
    process = harness("--tasks", TASK, "--data_dir", str(data), "--model", "vllm", "--model_args", args,
                      "--gen_kwargs", "max_gen_toks=4", "--output_path", str(out), *more,
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=marked())  # fmt: skip
    output, _ = process.communicate(timeout=900)
    return process.returncode, output


MARK = f"MMLONGEVAL_ENGINE_START_TEST={uuid.uuid4().hex}"


def marked() -> dict[str, str]:
    name, value = MARK.split("=")
    return {name: value}


def left_behind() -> list[str]:
    """Processes a run of this module started (its mark in their environment) still alive 10 s after the run ended
    (multiprocessing's resource tracker ends once it reads that its parent has)."""
    import psutil

    name, value = MARK.split("=")
    marked_alive = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(name) == value and process.status() != psutil.STATUS_ZOMBIE:
                marked_alive.append(process)
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(marked_alive, timeout=10)
    described = []
    for process in alive:
        try:
            described.append(f"{process.pid}: {' '.join(process.cmdline())}")
        except psutil.Error:
            continue
    return described


def harness_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "harness: error:" in line]


def test_weights_cut_short_are_refused_before_the_engine_starts(needle_data: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "cut"
    shutil.copytree(engine_checkpoint(ENGINE_FAMILIES[0]), checkpoint)
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size * 2 // 3])
    code, output = run(needle_data, tmp_path / "out", f"pretrained={checkpoint},{ENGINE},kv_cache_memory_bytes=64M")
    assert code == 1, output[-3000:]
    (line,) = harness_lines(output)
    assert f"{weights} is not a whole safetensors file" in line and "download it again" in line
    assert "Traceback" not in output and "engine ready" not in output
    assert not (tmp_path / "out").glob("*/journal_*.jsonl").__next__().read_text().splitlines()[1:]


def test_a_kv_cache_below_one_block_is_refused_before_the_engine_starts(needle_data: Path, tmp_path: Path) -> None:
    code, output = run(needle_data, tmp_path / "out", f"{ENGINE},kv_cache_memory_bytes=1")
    assert code == 2, output[-3000:]
    (line,) = harness_lines(output)
    assert "kv_cache_memory_bytes=1 is less than one block" in line
    assert "Traceback" not in output and "engine ready" not in output


def test_heads_the_cpu_attention_refuses_are_refused_before_the_engine_starts(
    needle_data: Path, tmp_path: Path
) -> None:
    """The family's tiny checkpoint as the hf tests build it, 16-dim heads, which vLLM's CPU attention does not take."""
    checkpoint = tiny_checkpoint(ENGINE_FAMILIES[0])
    code, output = run(needle_data, tmp_path / "out", f"pretrained={checkpoint},{ENGINE},kv_cache_memory_bytes=64M")
    assert code == 2, output[-3000:]
    (line,) = harness_lines(output)
    assert "has attention heads of 16, which vLLM's CPU attention does not take (it takes 32, 64" in line
    assert "Traceback" not in output and "engine ready" not in output


def test_latent_attention_is_left_to_the_engine_not_refused_by_the_cpu_attention_s_head_sizes() -> None:
    """GLM-5-Next's config (transformers' own) as the start check reads it: MLA, whose `head_dim` is the rotary part
    of a head (0: its DSA layers rotate none), which vLLM runs on its MLA backends, not by the CPU attention's head
    sizes ("attention heads of 0" was the refusal); whether it runs is the engine's to say."""
    from transformers import AutoConfig

    from harness.models.backends.vllm_engine.start_checks import refusal

    config = AutoConfig.for_model("glm5_next").to_dict()
    assert config["text_config"]["head_dim"] == 0 and config["text_config"]["kv_lora_rank"]
    assert refusal({}, config, on_cpu=True) is None


def refused(needle_data: Path, out: Path, model_args: str) -> tuple[str, str]:
    """A run whose engine does not start: its one line (it ends with exit 1) and its whole output."""
    code, output = run(needle_data, out, model_args)
    assert code == 1, output[-3000:]
    (line,) = harness_lines(output)
    return line, output


def test_a_configuration_vllm_refuses_is_refused_in_one_line_with_vllm_s_reason(
    needle_data: Path, tmp_path: Path
) -> None:
    """An engine over two processes of a checkpoint with one attention head: vLLM's config check (pydantic's
    ValidationError, whose first line only counts its errors) refuses it; the run's line gives vLLM's words."""
    line, _ = refused(needle_data, tmp_path / "out", f"{ENGINE},kv_cache_memory_bytes=64M,tensor_parallel_size=2")
    assert (
        "could not start: ValidationError: Value error, Total number of attention heads (1) must be divisible by "
        "tensor parallel size (2)" in line
    ), line
    assert not left_behind()


def test_an_engine_that_cannot_start_says_vllm_s_reason_in_one_line(needle_data: Path, tmp_path: Path) -> None:
    """A KV cache over one block but under the window's need: vLLM's own ValueError, from its engine core, is the
    run's one line; its tracebacks go to backend_error.log, not the console; no process of the engine is left."""
    line, output = refused(needle_data, tmp_path / "out", "dtype=float32,enforce_eager=true,kv_cache_memory_bytes=1M")
    assert "could not start: ValueError: To serve at least one request with the model's max seq len" in line
    assert "give the engine more KV cache" in line
    assert "Traceback" not in output
    details = next((tmp_path / "out").glob("*/backend_error.log")).read_text()
    assert "Traceback (most recent call last)" in details and "EngineCore" in details
    assert not left_behind()


def test_weights_named_otherwise_than_vllm_reads_them_say_vllm_s_reason_from_its_worker_in_one_line(
    needle_data: Path, tmp_path: Path
) -> None:
    """A tiny LLaVA-1.5 as transformers saves it: its CLIP tower's weights are `vision_tower.*`, where vLLM's loader
    reads `vision_tower.vision_model.*`. vLLM raises in its worker process, and its engine core only says that a
    worker failed: the run's one line is the worker's own reason, naming the weight, at most `REASON_CHARS` of it (vLLM
    lists every weight its model has)."""
    checkpoint = engine_checkpoint("llava-1.5")
    args = f"pretrained={checkpoint},dtype=float32,enforce_eager=true,max_model_len=4096,kv_cache_memory_bytes=64M"
    line, output = refused(needle_data, tmp_path / "out", args)
    assert (
        "could not start: ValueError: There is no module or parameter named 'vision_tower.embeddings' in "
        "LlavaForConditionalGeneration" in line
    ), line
    reason, advice = line.split("could not start: ")[1].split("; ", 1)
    assert advice.startswith("the checkpoint's config or weights are not what vLLM's model for its architecture")
    assert len(reason) <= REASON_CHARS + len("...") and "Traceback" not in output
    (log,) = (tmp_path / "out").glob("*/engine_model.log")  # the engine's log in the run's folder, named in the line
    assert f"(the engine's log: {log})" in line and "WorkerProc failed to start" in log.read_text()
    assert not left_behind()


def test_an_engine_that_dies_or_does_not_start_in_time_stops_the_run_in_one_line_and_the_same_command_resumes(
    needle_data: Path, tmp_path: Path, temporary: Path
) -> None:
    """Three runs of one command (two rows of each task, one request a call, 256 tokens each), each with a TMPDIR:
    - started with SIGINT ignored, as `nohup`, a script's background job and many launchers start it (the harness ends
      vLLM's wait on a dead core with a SIGINT of its own), its engine's core (`VLLM::EngineCore`) killed by its pid
      once the engine is ready: the run stops in one line saying the engine died, nothing of the engine is left;
    - with a bound the CPU engine cannot start within: one line naming the engine's last log line and where its core
      waited (its stacks in the run folder's `engine_model.log`), every process gone, the journal as it was;
    - without the bound, under VLLM_LOGGING_LEVEL=DEBUG: only the rows left go to the engine, its KV cache sized by
      the backend (none given), said and recorded with the start method; the console holds none of vLLM's progress
      bars (`--no_progress`) and no `--- Logging error ---` at exit (the harness once took away the log record factory
      vLLM's format reads). The engine's log of the runs is the run folder's, none is left in the temporary folder."""
    import signal

    import psutil

    out = tmp_path / "out"
    argv = ("--tasks", TASK, "--data_dir", str(needle_data), "--model", "vllm", "--limit", "2",
            "--gen_kwargs", "max_gen_toks=256,ignore_eos=true", "--output_path", str(out))  # fmt: skip
    args = f"pretrained={engine_checkpoint(ENGINE_FAMILIES[0])},{ENGINE},chunk_size=1"
    process = harness(*argv, "--model_args", args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                      env={**marked(), "TMPDIR": str(temporary)},
                      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # fmt: skip
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # until the engine is ready
        seen.append(line)
        if "vllm engine ready" in line:
            break
    cores = [p for p in psutil.Process(process.pid).children(recursive=True) if "EngineCore" in " ".join(p.cmdline())]
    assert len(cores) == 1, "".join(seen)[-3000:]
    cores[0].kill()
    try:
        output = "".join(seen) + process.communicate(timeout=300)[0]
    except subprocess.TimeoutExpired:  # waiting on the dead core: nothing else would end it
        os.killpg(process.pid, signal.SIGKILL)
        raise
    assert process.returncode == 1, output[-3000:]
    (line,) = harness_lines(output)
    assert "the model backend stopped: the vllm engine died:" in line and "run the same command to resume" in line
    assert "Traceback" not in output
    assert not left_behind()
    kept = journals(out)

    def again(model_args: str, **env: str) -> tuple[int, str]:
        process = harness(*argv, "--model_args", model_args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env={**marked(), "TMPDIR": str(temporary), **env})  # fmt: skip
        output = process.communicate(timeout=900)[0]
        return process.returncode, output

    code, output = again(f"{args},start_timeout=8")
    assert code == 1, output[-3000:]
    (line,) = harness_lines(output)
    assert "did not start within start_timeout=8 s; its last log line:" in line and " waited in " in line
    assert "run the same command to resume" in line and "Traceback" not in output
    (log,) = out.glob("*/engine_model.log")
    assert f"(every stack in {log})" in line
    assert not left_behind()
    assert journals(out) == kept

    code, output = again(args, VLLM_LOGGING_LEVEL="DEBUG")
    assert code == 0, output[-3000:]
    after = journals(out)
    assert all(after[key] == record for key, record in kept.items()) and len(after) == 4  # two rows of each task
    stats = json.loads(max(out.glob("*/results_*.json")).read_text())["config"]["backend_stats"]
    assert stats["engine_requests"] == len(after) - len(kept)
    assert "harness: vllm on vLLM's CPU build: a KV cache of" in output
    assert stats["engine_args"]["kv_cache_memory_bytes"] > 0
    assert stats["engine_start"]["method"] == "spawn" and stats["engine_start"]["set_by"] == "harness"
    assert "Processed prompts" not in output and "Rendering prompts" not in output
    assert "Logging error" not in output and "KeyError" not in output, output[-3000:]
    assert log.read_text().count("Initializing a V1 LLM engine") >= 2  # the first run's engine and this one's
    assert not list(temporary.glob("mmlongeval-vllm-engine-*"))


def test_a_script_without_a_main_guard_is_refused_in_one_line(needle_data: Path, tmp_path: Path) -> None:
    """`simple_evaluate` from a script's top level: spawn would run the script again in the engine's process; the run
    stops in one line naming the script's line before any engine process starts."""
    script = tmp_path / "evaluate.py"
    args = f"pretrained={engine_checkpoint(ENGINE_FAMILIES[0])},{ENGINE},kv_cache_memory_bytes=64M"
    script.write_text(
        "from harness import simple_evaluate\n\n"
        f"simple_evaluate(tasks=[{TASK!r}], model='vllm', model_args={args!r}, data_dir={str(needle_data)!r},\n"
        f"                limit=1, output_path={str(tmp_path / 'out')!r})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **marked()}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    (line,) = harness_lines(done.stderr + done.stdout)
    assert f"{script}, line 3: the engine starts its processes by spawn" in line
    assert 'under `if __name__ == "__main__":`' in line
    assert "engine ready" not in done.stderr and "EngineCore" not in done.stderr + done.stdout
    assert not left_behind()
