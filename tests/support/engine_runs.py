"""The `vllm` backend against the `hf` backend on the same rows, through the `harness` command (issues 86, 96, 104):
the runs and the rows compared, said once for the CPU engine's tests (`tests/harness/models/vllm_cpu`, which assert
that nothing differs) and the engine sweep (`scripts/engine_sweep.py`, which records what differs, type by type).

The rows: MMNeedle's synthetic rows of 1 and 10 images and two configs of MMLongBench's fixture (rows of 5 images).
The `hf` backend runs them first (no limits, float32: `run_dtype`); the `vllm` backend then runs them, as hf, with
`max_model_len` one token short of the longest rows (MMNeedle's of 10 images) as its own `--screen_only` counts them.
On every row the engine ran: the screen's count is vLLM's `len(prompt_token_ids)` (`count_differences`); where the hf
processor expands the images as vLLM does, the prompt's token ids are the hf backend's (their sha256 in both
journals: `prompt_differences`), and the greedy answers and their statuses are the hf backend's
(`answer_differences`).

    from tests.support.engine_runs import build_engine_data, differences, run_both
    runs = run_both(checkpoint, build_engine_data(tmp / "data"), tmp / "runs")
    assert differences(runs) == []
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import PROJECT

TASKS = "mmneedle_m1_n2_k1,mmneedle_m10_n1_k1,mmlongbench_niah_vh_single_8k,mmlongbench_vrag_infoseek_8k"
MAX_GEN_TOKS = 16
GEN = ("--gen_kwargs", f"max_gen_toks={MAX_GEN_TOKS}", "--limit", "4")
# the CPU engine's memory is its KV cache's; 4 requests a call, so a killed run has answers journalled
ENGINE = "enforce_eager=true,kv_cache_memory_bytes=256M,chunk_size=4"
QUIET = ("--log_samples", "--no_progress")
TIMEOUT = 900  # seconds a `harness` run may take before it is stopped (`finished`)


class RunFailed(AssertionError):
    """A `harness` run that ended otherwise than successfully: its exit code (None: stopped at its time bound) and
    what it printed."""

    def __init__(self, code: int | None, output: str) -> None:
        super().__init__(output[-4000:])
        self.code = code
        self.output = output


def harness(*argv: str, **popen: Any) -> Any:
    """`harness ARGV` in a process of its own (its own session, so a kill reaches the engine's processes too); `env`
    adds to the environment it is given."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.update(popen.pop("env", {}))
    command = [sys.executable, "-m", "harness", *argv, *QUIET]
    return subprocess.Popen(command, env=env, cwd=PROJECT, start_new_session=True, **popen)


def finished(*argv: str, timeout: float = TIMEOUT) -> str:
    """`harness ARGV` run to its end, successfully: what it printed. `RunFailed` otherwise, the run's session killed
    where it outlived `timeout`."""
    process = harness(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise RunFailed(None, f"{output}\nstopped after {timeout:.0f} s") from None
    if process.returncode != 0:
        raise RunFailed(process.returncode, output)
    return output


def journals(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every sample record of a run's journals, by (task, sample id)."""
    records = {}
    for path in out.glob("*/journal_*.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            record = json.loads(line)
            records[(record["task"], record["sample_id"])] = record
    return records


def build_engine_data(data: Path) -> Path:
    """MMNeedle's synthetic rows of 1 and 10 images and two configs of MMLongBench's fixture, built into `data`."""
    for build in (
        ("mmneedle", "--source", "synthetic", "--configs", "m1_n2_k1,m10_n1_k1", "--limit", "2"),
        ("mmlongbench", "--source", "fixture", "--configs", "niah_vh_single_8k,vrag_infoseek_8k"),
    ):
        subprocess.run(
            [sys.executable, "-m", "builders", "build", *build, "--out", str(data), "--quiet"], check=True, cwd=PROJECT
        )
    return data


def screened(*argv: str) -> tuple[int, int]:
    """The shortest prompt and the longest prompt + max_gen_toks of the tasks `harness --screen_only ARGV` would send
    any row of (its table's columns)."""
    with tempfile.TemporaryDirectory() as out:
        output = finished("--screen_only", *argv, "--output_path", out, timeout=600)
    rows = [line.split("|")[1:-1] for line in output.splitlines() if line.startswith("| ") and "---" not in line]
    sent = [cells for cells in rows[1:] if int(cells[2]) > 0]
    assert sent, output[-4000:]
    number = lambda cell: int(cell.strip().replace(",", ""))  # noqa: E731
    return min(number(c[10].split("-")[0]) for c in sent), max(number(c[6]) for c in sent)


def linear_attention(checkpoint: Path) -> bool:
    """Whether `checkpoint`'s language model has linear-attention layers (Qwen3.5's and Qwen4-Exp's gated delta nets):
    the field vLLM's CPU platform reads to take its kernel for them (`_cpu_mamba_backend`, "linear_attention" in
    `layer_types`)."""
    config = json.loads((checkpoint / "config.json").read_text())
    kinds = {kind for part in (config, config.get("text_config") or {}) for kind in part.get("layer_types") or ()}
    return "linear_attention" in kinds


def run_dtype(checkpoint: Path) -> str:
    """The dtype both backends run `checkpoint` in: float32, but bfloat16 where its language model has linear-attention
    layers, which vLLM's CPU kernel runs in bfloat16 alone ("CPU GDN attention requires BF16.",
    `cpu_gdn_attention_core`, the one path the gated delta net's `forward_cpu` takes on the CPU platform: no engine
    argument chooses another)."""
    return "bfloat16" if linear_attention(checkpoint) else "float32"


@dataclass
class EngineRuns:
    """A checkpoint's `hf` run and `vllm` run of the same rows: their journals, the engine's context, where they ran."""

    checkpoint: Path
    hf: dict[tuple[str, str], dict[str, Any]]
    vllm: dict[tuple[str, str], dict[str, Any]]
    context: int
    work: Path
    data: Path


def run_both(
    checkpoint: Path,
    data: Path,
    work: Path,
    model_args: str = "",
    style: str = "",
    run_vllm: Callable[..., object] = finished,
    stage: Callable[[str], None] = lambda _: None,
) -> EngineRuns:
    """The `hf` run, then the `vllm` run (by `run_vllm(*argv)`), of the rows in `data`, written under `work`. `style`:
    `--model_args` both backends take (a prompt style), `model_args` those of the hf backend alone; `stage(name)` is
    told where it is."""
    common = ("--tasks", TASKS, "--data_dir", str(data), *GEN)
    dtype = run_dtype(checkpoint)
    stage("the hf run")
    finished(*common, "--model", "hf", "--model_args", f"pretrained={checkpoint},dtype={dtype}{style}{model_args}",
             "--output_path", str(work / "hf"))  # fmt: skip
    # the context: the longest prompt + max_gen_toks the engine may run, as the vllm backend's `--screen_only` counts
    # it (vLLM expands images its own way: LLaVA-OneVision's), less one token (that row, and any as long, over_length)
    stage("the vllm screen")
    context = screened(*common, "--model", "vllm", "--model_args", f"pretrained={checkpoint}{style}")[1] - 1
    stage("the vllm run")
    run_vllm(*common, "--model", "vllm", "--output_path", str(work / "vllm"), "--model_args",
             f"pretrained={checkpoint},max_model_len={context},dtype={dtype},{ENGINE}{style}")  # fmt: skip
    return EngineRuns(checkpoint, journals(work / "hf"), journals(work / "vllm"), context, work, data)


def ran(runs: EngineRuns) -> list[tuple[str, str]]:
    """The rows the engine ran (those with vLLM's usage)."""
    return [key for key, record in runs.vllm.items() if "usage" in record]


def count_differences(runs: EngineRuns) -> list[str]:
    """Where the engine's rows are not the screen's: a row only one backend has, a row kept from the engine that is
    not over the context nor of more images than vLLM's model takes (or was sent), a row it ran whose count before
    sending is not vLLM's own."""
    vllm, hf = runs.vllm, runs.hf
    found = [f"{key}: in one run only" for key in sorted(vllm.keys() ^ hf.keys())]
    for key, record in sorted(vllm.items()):
        if "usage" not in record and record["status"] == "over_length":
            if record["token_count"] + MAX_GEN_TOKS <= runs.context:
                found.append(f"{key}: over_length at {record['token_count']} tokens, within {runs.context}")
        elif "usage" not in record and record["status"] == "too_many_images":
            continue  # the images vLLM's model takes in one prompt (PaliGemma's one), its refusal recorded so
        elif "usage" not in record:
            found.append(f"{key}: {record['status']} ({record.get('error') or 'not sent'})")
        elif record["status"] not in ("ok", "empty"):
            found.append(f"{key}: {record['status']} with vLLM's usage ({record.get('error')})")
        elif record["token_count"] != record["usage"]["prompt_tokens"]:
            found.append(f"{key}: counted {record['token_count']}, vLLM's {record['usage']['prompt_tokens']}")
    return found


def expanded_alike(runs: EngineRuns) -> list[tuple[str, str]]:
    """The rows the engine ran whose images the hf processor expands as vLLM does: all, but a row of several images
    where the processor expands them otherwise than each alone (`hf_expansion.several_images`: LLaVA-OneVision's
    multi-image mode, which vLLM does not have)."""
    from transformers import AutoProcessor

    from harness.models.shared.hf_expansion import several_images

    processor = AutoProcessor.from_pretrained(runs.checkpoint)
    return [key for key in ran(runs) if several_images(processor, len(runs.hf[key]["image_sha256"])) is None]


def prompt_differences(runs: EngineRuns) -> list[str]:
    """The rows expanded alike whose prompt token ids are not the hf backend's, and those expanded otherwise whose
    prompt in vLLM is not the longer (each image alone)."""
    found = []
    alike = expanded_alike(runs)
    for key in ran(runs):
        ours, theirs = runs.vllm[key], runs.hf[key]
        if "usage" not in theirs:
            found.append(f"{key}: hf {theirs['status']} ({theirs.get('error')})")
            continue
        mine, its = ours["usage"]["prompt_tokens"], theirs["usage"]["prompt_tokens"]
        if key not in alike and mine <= its:
            found.append(f"{key}: {mine} prompt tokens, not more than hf's {its} (its images expanded together)")
        elif key in alike and ours["prompt_ids_sha256"] != theirs["prompt_ids_sha256"]:
            found.append(f"{key}: other prompt ids than hf's ({mine} tokens, hf {its})")
    return found


def answer_differences(runs: EngineRuns) -> list[str]:
    """Greedy, float32, the same prompt ids: the rows where both backends did not generate the same ids (as many, to
    the same end) or do not record the same answer and status from them."""
    found = []
    for key in expanded_alike(runs):
        ours, theirs = runs.vllm[key], runs.hf[key]
        if "usage" not in theirs or ours["prompt_ids_sha256"] != theirs["prompt_ids_sha256"]:
            continue  # another prompt (`prompt_differences`)
        # the whole output too, where thinking was taken out of the answer (`raw_response`)
        same = ("completion_tokens", "finish_reason", "response", "status", "raw_response")
        mine, its = (
            (r["usage"]["completion_tokens"], r["finish_reason"], r["response"], r["status"], r.get("raw_response"))
            for r in (ours, theirs)
        )
        if mine != its:
            which = ", ".join(name for name, a, b in zip(same, mine, its, strict=True) if a != b)
            found.append(f"{key}: another {which} than hf's ({ours['status']} {ours['response']!r}, hf "
                         f"{theirs['status']} {theirs['response']!r})")  # fmt: skip
    return found


def differences(runs: EngineRuns) -> list[str]:
    """Everything that differs between the two runs of the rows (nothing: the checkpoint runs end to end)."""
    return count_differences(runs) + prompt_differences(runs) + answer_differences(runs)


class VLLMInput:
    """vLLM's input processing for a checkpoint, as `LLM` builds it (`EngineArgs.create_engine_config`,
    `renderer_from_config`) with the arguments the vllm backend starts its engine with for these requests
    (`engine_kwargs`, `engine_limit`); no engine core starts."""

    def __init__(self, settings: Any, requests: list[Any]) -> None:
        from vllm import EngineArgs
        from vllm.renderers.registry import renderer_from_config

        from harness.models.backends.vllm_engine.image_limit import ImageProfile, engine_limit
        from harness.models.backends.vllm_engine.settings import engine_kwargs

        limit = engine_limit(ImageProfile().covering(requests), settings.max_images, settings.max_pixels, None)
        kwargs = engine_kwargs(settings, limit)
        kwargs = {key: value for key, value in kwargs.items() if key != "chat_template"}  # `LLM`'s, not an EngineArgs
        self.config = EngineArgs(**kwargs).create_engine_config()
        self.renderer = renderer_from_config(self.config)

    @property
    def max_images(self) -> int | None:
        """The images vLLM's processor takes in one prompt (None: any number)."""
        limit = self.renderer.get_mm_processor().info.get_supported_mm_limits().get("image")
        return int(limit) if limit is not None else None

    def rendered(self, prompt: dict[str, Any]) -> Any:
        """`LLM.generate`'s engine input for one of its prompts (`_preprocess_cmpl`): its `prompt_token_ids`, what the
        engine core runs, and its `mm_placeholders`."""
        from vllm.renderers.inputs.preprocess import parse_model_prompt

        parsed = parse_model_prompt(self.config.model_config, prompt)
        (engine_input,) = self.renderer.render_cmpl([parsed], self.renderer.default_cmpl_tok_params)
        return engine_input

    def prompt_token_ids(self, prompt: dict[str, Any]) -> list[int]:
        return list(self.rendered(prompt)["prompt_token_ids"])
