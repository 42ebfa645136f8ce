"""`make engine-sweep`: every vision-language architecture that vLLM and transformers both know, run on vLLM's CPU
build (issue 104), outside CI.

The types: each image-text-to-text `model_type` of the installed transformers whose model class is an architecture in
vLLM's multimodal registry (`sweep_types`: both registries read at run time). For each, one at a time: its tiny
checkpoint as the CPU engine runs it (`tests.support.engine_checkpoints.type_checkpoint`: 64-dim heads, weights under
their published names), `harness --model hf` and `harness --model vllm` on the same rows, and the rows compared
(`tests.support.engine_runs`, the comparisons the CI engine tests assert). Its outcome is "runs end to end" (every
row's count, prompt ids, answer and status the same) or one line: where it stopped and the reason it gave.

Each outcome is appended to the record (docs/engine_sweep.jsonl) as it finishes, so a stopped sweep loses nothing: a
rerun skips the types the record holds unless asked (`--again`), and TYPE... runs those alone. Each type runs in a
process of its own, stopped (with every process under it) past `--timeout` seconds. docs/backends.md's table is
written from the record by `make docs` (`scripts/docs_tables.py`, `table_lines`), which `make engine-sweep` runs after.

    .venv-vllm-cpu/bin/python scripts/engine_sweep.py [TYPE ...] [--again] [--timeout S] [--list]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "docs" / "engine_sweep.jsonl"
WORK = ROOT / ".scratch" / "engine_sweep"
RUNS = "runs end to end"
TIMEOUT = 1500  # seconds a type may take: its checkpoint, the hf run, the screen and the engine's run
# The harness's one line, and an exception line in a log ("ValueError: ...", "(Worker pid=1) ERROR 11-29 03:35:31
# [multiproc_executor.py:953] RuntimeError: ...")
ONE_LINE = re.compile(r"harness: error: (.+)$", re.M)
EXCEPTION = re.compile(
    r"^(?:\([\w.-]+ pid=\d+\)\s*)?(?:(?:ERROR|WARNING|INFO) [\d-]+ [\d:]+ \[[^\]]+\]\s*)?"  # vLLM's prefixes
    r"(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception))(?:: (.+))?$"
)
EXCEPTION_PREFIX = re.compile(r"^(?:\([\w.-]+ pid=\d+\)\s*)?(?:(?:ERROR|WARNING|INFO) [\d-]+ [\d:]+ \[[^\]]+\]\s*)?")
# vLLM's lines for a failure in another process, whose cause is in the engine's log
WRAPPED = ("Engine core initialization failed", "EngineCore encountered")


# Causes traced by hand for outcomes whose own line does not say them (issue 104's triage): the model_type, a text its
# outcome holds while the cause stands (the note is left out of the table once it does not), and the cause.
CAUSES: dict[str, tuple[str, str]] = {
    "aria": (
        "rows differ",
        "vLLM's Aria runs its vision encoder without the patch attention mask (`apply_encoder_attention_mask` off for "
        "Aria), so the padding patches of each image (padded to a square of `max_image_size`) are attended to, which "
        "transformers' Aria masks: the image features differ by about 1% (equal with the mask), a text prompt's "
        "logits are equal, and the tiny model's near-flat logits turn that into other answers",
    ),
    "gemma4_unified": (
        "rows differ",
        "vLLM's CPU attention has no bidirectional ranges (`supports_mm_prefix`, which the CPU platform does not "
        "check), so an image's tokens attend causally, where transformers' Gemma 4 Unified (`use_bidirectional_"
        "attention='vision'`) attends within each image both ways on its sliding layers: hf without it gives vLLM's "
        "logits exactly; a text prompt's are equal",
    ),
    # vllm/model_executor/models/mllama4.py, `Llama4UnfoldConvolution.forward`: `unfold(...).permute(0, 2, 1)` into a
    # linear layer, which the CPU build runs with oneDNN's matmul (`cpu_unquantized_gemm`), and that takes a contiguous
    # last dimension only; the published patch width (3 x 14 x 14) takes the same path
    "llama4": (
        "a.stride(-1) == 1",
        "vLLM's own: its CPU build's Llama 4 vision tower hands its unfolded patches, permuted (not contiguous), to "
        "oneDNN's matmul, which refuses them",
    ),
    "ernie4_5_vl_moe": (
        "Failed to apply Ernie4_5_VLMoeProcessor",
        "vLLM's ERNIE 4.5-VL processing is written for baidu's own processor code (trust_remote_code: its "
        "`<|image@placeholder|>` prompts, an `images` and a `grid_thw` output): transformers' Ernie4_5_VLMoeProcessor, "
        "which the installed transformers saves, fails on the empty video list vLLM passes it (IndexError in "
        "`make_batched_videos`) and returns `pixel_values` and `image_grid_thw`",
    ),
    # vllm/models/qwen4_exp/nvidia/qsa.py (the package's model on any platform but ROCm): its indexed attention's
    # `__init__` refuses without FlashAttention's varlen kernel, and, before that, any dtype but bfloat16 ("Qwen4Exp QSA
    # currently requires BF16"), which both backends run it in (its gated delta nets, `run_dtype`)
    "qwen4_exp": (
        "Qwen4Exp QSA requires FlashAttention",
        "vLLM's own: its Qwen4-Exp runs on CUDA and ROCm only (its package: \"Qwen4Exp currently supports CUDA and ROCm "
        'only"), its indexed (QSA) attention layers on FlashAttention, which the CPU build has not; every layer of '
        "the published checkpoints that is not linear attention is one (transformers' Qwen4-Exp config reads their "
        "`full_attention` so), as the tiny one's is",
    ),
    # vllm/model_executor/models/step3p7.py and step_vl.py (`PerceptionEncoder`) read the tower's names, step3p5.py
    # (its text model) `rope_theta`, `att_impl_type`, `need_fp32_gate`, ...; transformers' Step3p7VisionConfig and
    # Step3p7TextConfig pop the first from a config.json in `__post_init__` (`rope_theta` into `rope_parameters`) and
    # declare none of the rest; given the tower's by `hf_overrides`, vLLM's Step 3.7 goes on to its text model
    "step3p7": (
        "'Step3p7VisionConfig' object has no attribute 'width'",
        "vLLM's own with the installed transformers: vLLM's Step 3.7 reads the config by the names stepfun-ai's own "
        "config code gives them (its tower's `width`, `layers`, `heads`, `ls_init_value`, its text model's "
        "`rope_theta`), and registers no config class for it, so it reads transformers' Step3p7Config, which renames "
        "those on loading a config.json: the tiny config holds them as published, and loaded they are gone",
    ),
    "glm5_next": (
        "--mamba-block-size can only be set with --enable-prefix-caching",
        "vLLM's own settings conflict on its CPU build: its CPU platform turns prefix caching off for latent attention "
        "(MLA), which the mamba block size of GLM-5-Next's hybrid (KDA) cache needs on; past that, its DSA layers are "
        "sparse attention (`index_topk`), which the CPU platform does not take",
    ),
    "llava_next_video": (
        "not available for text-only models",
        "vLLM's LlavaNextVideoForConditionalGeneration takes videos alone (`get_supported_mm_limits`: one video, no "
        "image), so with videos off it is a text-only model to vLLM",
    ),
    # vllm/models/minimax_m3: its NVIDIA model (the one it takes on any platform but ROCm), whose vision tower's
    # `prepare_encoder_metadata` calls `vit_mrope_setup` (model_executor/layers/rotary_embedding/mrope_vit_setup.py)
    # with no fallback; its `MiniMAXGemmaRMSNorm` imports `flashinfer.norm` in `forward`, and its attention calls
    # `ops.fused_minimax_m3_qknorm_rope_kv_insert`, absent from the CPU build's `torch.ops._C`
    "minimax_m3_vl": (
        "'function' object is not subscriptable",
        "vLLM's own: its MiniMax-M3 runs on GPUs alone: its vision tower's rotary positions are a Triton kernel "
        "(`vit_mrope_setup`, which the CPU build, without Triton's CPU backend, leaves a plain function), and past "
        "that its norms are FlashInfer's and its attention a CUDA op, neither in the CPU build; the tiny checkpoint "
        "loads (its config and weights as published)",
    ),
    # vllm/model_executor/models/nano_nemotron_vl.py, `NemotronH_Nano_VL_V2.__init__`: `config.vit_hidden_size`, read
    # unconditionally; a config.json holding it loads without it (transformers' `_legacy_field_names` pops it)
    "nemotron_h_omni": (
        "has no attribute 'patch_size'",
        "vLLM's own with this transformers: its Nemotron-H Omni (`NemotronH_Nano_VL_V2`) reads the fields of nvidia's "
        "own config code (`patch_size`, `template`, `ps_version` at the top, the RADIO tower's `args`, "
        "`vit_hidden_size`), and transformers' NemotronH_Omni_Reasoning_V3_Config, the one vLLM loads, renames "
        "`vit_hidden_size` to `vision_hidden_size` (and `sound_config` to `audio_config`) on loading: no config.json "
        "brings it to vLLM's model",
    ),
}


# ---- the types and the record ---------------------------------------------------------------------------------------


def sweep_types() -> dict[str, str]:
    """Each image-text-to-text model_type of the installed transformers whose model class vLLM's multimodal registry
    holds: its architecture."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    from vllm.model_executor.models.registry import _MULTIMODAL_MODELS

    return {
        model_type: architecture
        for model_type, architecture in sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items())
        if architecture in _MULTIMODAL_MODELS
    }


def read_record(path: Path = RECORD) -> dict[str, dict[str, Any]]:
    """The record: model_type -> its outcome (the last line written for it)."""
    if not path.exists():
        return {}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {line["model_type"]: line for line in lines}


def append(outcome: dict[str, Any], path: Path = RECORD) -> None:
    """One type's outcome added to the record, on disk before the next type starts."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(outcome, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def compact(path: Path = RECORD) -> None:
    """The record rewritten whole with one line a type (its last), in the types' order."""
    from harness.file_writing import write_text

    record = read_record(path)
    write_text(path, "".join(json.dumps(record[t], sort_keys=True) + "\n" for t in sorted(record)))


# ---- the table ------------------------------------------------------------------------------------------------------


def table_lines(path: Path = RECORD) -> list[str]:
    """docs/backends.md's sentence and table, from the record alone (`make docs` writes them)."""
    record = read_record(path)
    runs = [t for t, line in record.items() if line["outcome"] == RUNS]
    versions = {(line["vllm"], line["transformers"]) for line in record.values()}
    said = "; ".join(f"vLLM {v} and transformers {t}" for v, t in sorted(versions))
    lines = [
        f"**{len(runs)} of {len(record)} types run end to end on vLLM's CPU build** ({said}): the counts, prompt ids, "
        "answers and statuses of every row the engine ran equal the `hf` backend's.",
        "",
        "| model_type | vLLM architecture | on vLLM's CPU build | rows the engine ran | how vLLM runs its images | swept |",
        "|---|---|---|---|---|---|",
    ]
    for model_type in sorted(record):
        line = record[model_type]
        outcome = line["outcome"]
        seen, cause = CAUSES.get(model_type, ("", ""))
        if cause and seen in outcome:
            outcome = f"{cause} ({outcome})"
        outcome = outcome.replace("|", "&#124;").replace("\n", " ")
        kept = ", ".join(f"{n} {status}" for status, n in sorted((line.get("kept") or {}).items()))
        rows = f"{line['rows_ran']} of {line['rows']}" + (f" ({kept})" if kept else "") if line.get("rows") else "-"
        path = line.get("path") or "-"
        lines.append(f"| {model_type} | {line['architecture']} | {outcome} | {rows} | {path} | {line['date']} |")
    return lines


# ---- one type -------------------------------------------------------------------------------------------------------


def _exceptions(text: str) -> list[str]:
    """The exception lines of a log, as "Type: message" (a bare `AssertionError`: the assert its traceback shows)."""
    rows = [row.strip() for row in text.splitlines()]
    found = []
    for i, row in enumerate(rows):
        matched = EXCEPTION.match(row)
        if matched and matched[2]:
            found.append(f"{matched[1]}: {matched[2]}")
        elif matched:
            shown = [EXCEPTION_PREFIX.sub("", r) for r in rows[max(0, i - 3) : i]]
            found.append(f"{matched[1]}: {next((r for r in reversed(shown) if r.startswith('assert ')), '')}")
    return found


def failed_line(output: str, folder: Path | None) -> str:
    """A failed `harness` run's one line (`harness: error: ...`, else its last exception line); where that is vLLM's
    generic "Engine core initialization failed" (or "EngineCore encountered an issue"), the root exception the engine's
    log holds beside it."""
    output = output.replace("\r", "\n")  # a progress bar's line ended by the one line
    said = ONE_LINE.findall(output)
    exceptions = _exceptions(output)
    line = said[-1] if said else exceptions[-1] if exceptions else output.strip().splitlines()[-1]
    line = re.sub(r"; finished samples are saved under .*$", "", line)
    line = re.sub(r" \((?:the engine's log|details in): [^)]*\)| \(details in [^)]*\)", "", line)
    if any(wrapper in line for wrapper in WRAPPED) and folder is not None:
        logs = "\n".join(p.read_text(errors="replace") for p in folder.glob("**/backend_error.log"))
        causes = [cause for cause in _exceptions(logs + "\n" + output) if not any(w in cause for w in WRAPPED)]
        if causes:
            line += f" [root exception in the engine's log: {causes[0]}]"
    return line[:600]


def processing_path(checkpoint: Path) -> str:
    """How vLLM runs the checkpoint's images, in the three ways its code branches on a model (read from vLLM's own
    declarations and its input processing of a prompt of two images, or of one where its model takes one, no engine
    started): the positions (M-RoPE, `ModelConfig.uses_mrope`, or one a token), an image's run of tokens (every one an
    image embedding, or text tokens among them: `PlaceholderRange.is_embed`), and the attention the KV cache holds
    (full only, sliding windows beside, or linear-attention or recurrent layers beside: `IsHybrid`)."""
    from vllm.model_executor.models.interfaces import is_hybrid
    from vllm.model_executor.models.registry import ModelRegistry

    from harness.models.backends.vllm_engine.backend import VLLMModel
    from harness.models.backends.vllm_engine.requests import engine_prompt, request_payload
    from harness.models.backends.vllm_engine.settings import vllm_settings
    from harness.models.families import style_named
    from tests.support.engine_runs import VLLMInput
    from tests.support.model_requests import encode_image, make_request

    settings = vllm_settings({"pretrained": str(checkpoint)})
    model = VLLMModel(settings, count_online=False)
    images = [encode_image((40 * i, 90, 160), size, "PNG") for i, size in enumerate(((640, 480), (50, 800)))]
    request = make_request("two", ["Look:", images[0], "and", images[1], "Which colour?"], doc_id=0)
    vllm = VLLMInput(settings, [request])
    if vllm.max_images == 1:  # PaliGemma's, BLIP-2's
        request = make_request("one", ["Look:", images[0], "Which colour?"], doc_id=0)
        vllm = VLLMInput(settings, [request])
    sent = request_payload(request, settings.seed, model.count.render(request), style_named(settings.prompt_style))
    placeholders = vllm.rendered(engine_prompt(sent, None))["mm_placeholders"]["image"]
    config = vllm.config.model_config
    model_class, _ = ModelRegistry.resolve_model_cls(config.architectures, config)
    text = config.hf_text_config
    kinds = {str(kind) for kind in getattr(text, "layer_types", None) or ()}
    sliding = any("sliding" in kind for kind in kinds) or bool(getattr(text, "sliding_window", None) and not kinds)
    return ", ".join(
        (
            "M-RoPE" if config.uses_mrope else "1-D positions",
            "text among an image's tokens"
            if any(p.is_embed is not None for p in placeholders)
            else "image tokens only",
            "hybrid KV cache" if is_hybrid(model_class) else "sliding windows" if sliding else "full attention",
        )
    )


def multimodal_path(line: dict[str, Any]) -> str:
    """A type's way through vLLM's multimodal processing, from its record line's `path`: the positions and an image's
    run of tokens (the KV cache's attention left out: the engine's, which the harness's count, prompt and statuses do
    not depend on)."""
    return ", ".join(str(line.get("path") or "").split(", ")[:2])


def run_one(model_type: str, work: Path, data: Path, stage_file: Path) -> dict[str, Any]:
    """A type's checkpoint built and both runs made and compared: its outcome's fields."""
    from tests.support.checkpoint_factory import CannotBuild
    from tests.support.engine_checkpoints import type_checkpoint, type_style
    from tests.support.engine_runs import RunFailed, differences, ran, run_both

    stages: list[str] = []

    def stage(name: str) -> None:
        stages.append(name)
        stage_file.write_text(name)

    stage("the tiny checkpoint")
    try:
        checkpoint = type_checkpoint(model_type, work / "checkpoint")
    except CannotBuild as err:
        return {"outcome": f"its tiny checkpoint does not build: {err}", "stage": stages[-1]}
    try:
        style = "".join(f",{key}={value}" for key, value in type_style(model_type).items())
        runs = run_both(checkpoint, data, work / "runs", style=style, stage=stage)
    except RunFailed as err:
        where = work / "runs" / ("vllm" if "vllm" in stages[-1] else "hf")
        timed = " (stopped at its time bound)" if err.code is None else ""
        return {"outcome": f"{stages[-1]} fails{timed}: {failed_line(err.output, where)}", "stage": stages[-1]}
    stage("the rows compared")
    found = differences(runs)
    try:
        path = processing_path(checkpoint)
    except Exception as err:  # vLLM's input processing raised outside the engine: said, the outcome kept
        path = f"not read ({type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''})"
    kept = [record["status"] for record in runs.vllm.values() if "usage" not in record]
    counts = {"rows": len(runs.vllm), "rows_ran": len(ran(runs)), "kept": dict(Counter(kept)), "path": path}
    if not found:
        return {"outcome": RUNS, **counts, "stage": "done"}
    return {"outcome": f"{len(found)} rows differ: {'; '.join(found[:2])}", "differences": found, **counts,
            "stage": stages[-1]}  # fmt: skip


def one(model_type: str, work: Path, data: Path, result: Path) -> int:
    """The child process's work: one type, its outcome written to `result`."""
    outcome = run_one(model_type, work, data, work / "stage")
    for key in {"outcome", "differences"} & outcome.keys():  # the record says where, not this machine's folders
        text = json.dumps(outcome[key])
        outcome[key] = json.loads(text.replace(str(work / "checkpoint"), "CHECKPOINT").replace(str(work), "WORK"))
    result.write_text(json.dumps(outcome))
    return 0


# ---- the sweep ------------------------------------------------------------------------------------------------------


def _kill_tree(pid: int) -> None:
    """The type's process and every process under it (the engine's, in sessions of their own), by id."""
    import psutil

    try:
        parent = psutil.Process(pid)
        family = [*parent.children(recursive=True), parent]
    except psutil.NoSuchProcess:
        return
    for process in family:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(family, timeout=30)


def sweep_one(model_type: str, architecture: str, data: Path, timeout: float) -> dict[str, Any]:
    """One type in a process of its own, bounded by `timeout`: its record line."""
    import transformers
    import vllm

    work = WORK / model_type
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    result = work / "result.json"
    started = time.monotonic()
    command = [sys.executable, __file__, "--one", model_type, "--work", str(work), "--data", str(data),
               "--result", str(result)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    with (work / "sweep.log").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        stopped = False
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            stopped = True  # its exit code may not say so: psutil's wait reaps it first, and Popen then reads 0
            _kill_tree(process.pid)
            process.wait()
    if result.exists():
        outcome = json.loads(result.read_text())
    else:
        stage = (work / "stage").read_text() if (work / "stage").exists() else "its start"
        tail = (work / "sweep.log").read_text(errors="replace").strip().splitlines()[-1:] or [""]
        why = f"stopped after {timeout:.0f} s" if stopped else f"ended ({process.returncode}): {tail[0]}"
        outcome = {"outcome": f"{stage} does not finish: {why}", "stage": stage}
    return {
        "model_type": model_type,
        "architecture": architecture,
        **outcome,
        "seconds": round(time.monotonic() - started),
        "date": datetime.date.today().isoformat(),
        "vllm": vllm.__version__,
        "transformers": transformers.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("types", nargs="*", help="these model_types alone (default: every type of both registries)")
    parser.add_argument("--again", action="store_true", help="run the types the record already holds again")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a type may take (default %(default)s)")
    parser.add_argument("--list", action="store_true", help="list the types and what the record holds; run nothing")
    parser.add_argument("--record", type=Path, default=RECORD, help="the record (default: %(default)s)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process: one type
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return one(args.one, args.work, args.data, args.result)
    types = sweep_types()
    unknown = [t for t in args.types if t not in types]
    if unknown:
        print(f"engine_sweep: not a type of both registries: {', '.join(unknown)}", file=sys.stderr)
        return 2
    record = read_record(args.record)
    if args.list:
        for model_type, architecture in types.items():
            print(f"{model_type} ({architecture}): {record.get(model_type, {}).get('outcome', 'not swept')}")
        return 0
    todo = [t for t in (args.types or types) if args.again or args.types or t not in record]
    print(f"engine_sweep: {len(todo)} of {len(types)} types to run ({len(record)} in {args.record})", flush=True)
    data = WORK / "data"
    if todo and not (data / "mmlongbench").exists():
        from tests.support.engine_runs import build_engine_data

        shutil.rmtree(data, ignore_errors=True)
        build_engine_data(data)
    for done, model_type in enumerate(todo, 1):
        line = sweep_one(model_type, types[model_type], data, args.timeout)
        append(line, args.record)
        print(f"[{done}/{len(todo)}] {model_type}: {line['outcome'][:300]} ({line['seconds']} s)", flush=True)
        if line["outcome"] == RUNS:
            shutil.rmtree(WORK / model_type, ignore_errors=True)  # a failure's folder is kept to read
    compact(args.record)
    record = read_record(args.record)
    print(f"engine_sweep: {sum(r['outcome'] == RUNS for r in record.values())} of {len(record)} run end to end")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
