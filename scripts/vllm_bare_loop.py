#!/usr/bin/env python
"""The reference for the `vllm` backend's throughput: the requests a harness run sends, through bare
`vllm.LLM.generate` calls (prompts rendered with the checkpoint's own chat template, images decoded to PIL),
with the engine and sampling settings the backend would use. Timed in passes on one engine (`--passes`, in the order
given, caches reset before each; default `per_task,one_call`): `per_task` one call per task, in task order, as the
runner once called the backend; `one_call` every task together in dataset order (task by task, rows in dataset
order), cut into the backend's engine calls (`chunk_size`, `chunk_tokens`); `backend_order` every task together in
the order a harness run hands the backend its requests (`engine_order`: each task long first, then with
`request_order=cache` the prefix-cache order), in the same chunks: what our run sends, request by request; a pass
named twice shows what running on a fresh engine costs against a warm one. Beside our run of the same tasks
(`--ours`), it reports samples/s of both, whether each sample got the same answer (each side's decoded from its
generated ids as the backend decodes them, `requests.output_result`: U+FFFD kept where an answer ends inside a
character), the same prompt ids (their sha256) and as many generated tokens, whether vLLM saw the same prompt
length (`len(output.prompt_token_ids)`) both ways, how many prompt tokens vLLM's prefix cache served
(`num_cached_tokens`) and how many tokens each side generated, and, sample by sample, the backend's screen count (its processor
count, `harness.models.shared.engine_count.EngineCount`) against that length: here for every sample sent, from our run's journal for ours.

    python scripts/vllm_bare_loop.py --tasks T1,T2 --model_args pretrained=CKPT,max_model_len=N --data_dir DATA \
        --json bare.json [--ours RUN_DIR --ours_exclude ENGINE_SECONDS] [--out bare.md] [--passes one_call,per_task]

Any `harness` run option is accepted; the requests are planned as `harness --model vllm` plans them and screened
by the backend's own rule (`screen_request` with its count), so both sides generate for the same samples. Timed:
reading and decoding the images, rendering the prompts and `LLM.generate`; not timed: the engine start, loading the
processor and reading the rows. Our side's time is its results' evaluation time (which ends before the engine's
shutdown) less `--ours_exclude` (its set-up: the engine start and the count's processor load, which
scripts/gpu_check.sh reads from the run's log); it also holds screening, building the requests from the rows,
scoring and journalling. Needs vLLM and a GPU (scripts/gpu_check.sh runs it after the
backend's run).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.api import ImagePart, Request, TextPart
from harness.models.backends.vllm_engine.backend import fallback_template
from harness.models.backends.vllm_engine.image_limit import ImageProfile, engine_limit, image_count
from harness.models.backends.vllm_engine.requests import output_result, sampling_kwargs, screen_request
from harness.models.backends.vllm_engine.settings import LIMIT, VLLMSettings, engine_kwargs, vllm_settings
from harness.models.backends.vllm_engine.start import start_method
from harness.models.shared.engine_count import EngineCount
from harness.models.shared.scheduling.batching import plan_batches
from harness.models.shared.scheduling.prefix_order import cache_order, prompt_key, task_order
from harness.run.arguments import parse_options
from harness.run.models import run_policies, with_run_files
from harness.run.plan import plan_run
from harness.running.task.requests import RowProblem

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_backends import load_run, throughput  # noqa: E402

# Each pass runs every sent request once, caches reset first; `--passes` names them in the order to run.
PASS_NAMES = {
    "per_task": "one call per task",
    "one_call": "dataset order, the backend's chunks",
    "backend_order": "the backend's order and chunks",
}
PASSES = ("per_task", "one_call")


def planned_requests(argv: list[str]) -> tuple[VLLMSettings, list[Request]]:
    plan = plan_run(parse_options(["--model", "vllm", *argv]), argv)
    policies = run_policies(plan)
    settings = vllm_settings(with_run_files(plan, "vllm", plan.model.args, "model"))  # as the run's backend gets them
    requests = []
    for task in plan.tasks:
        generation = task.generation_settings(plan.options.gen_kwargs, plan.options.sampling_seed)
        task.reload()  # held while the requests, whose images are read from the rows' files, are sent
        for doc_id, doc in task.iter_docs():
            request = task.build_request(doc_id, doc, generation)
            if isinstance(request, RowProblem):
                continue
            requests.append(policies(request) if policies is not None else request)
    return settings, requests


def engine_order(requests: Sequence[Request], tokens: Sequence[int], request_order: str) -> list[int]:
    """Indices of `requests` (in task order, rows in dataset order; `tokens` their screen counts) in the order a
    harness run hands them to the vllm backend: each task's in `task_order`, then, with `request_order=cache`,
    every task's together in the cache order again (`Runner.run_together`)."""
    tasks: dict[str, dict[int, int]] = {}  # task -> doc id -> index
    for i, request in enumerate(requests):
        tasks.setdefault(request.task, {})[request.doc_id] = i
    cached = request_order == "cache"
    ordered: list[int] = []
    for indices in tasks.values():
        keys = {doc: prompt_key(requests[i]) for doc, i in indices.items()} if cached else None
        ordered += [indices[doc] for _, doc in task_order([(tokens[i], doc) for doc, i in indices.items()], keys)]
    if not (cached and len(tasks) > 1):
        return ordered
    return [ordered[j] for j in cache_order([tokens[i] for i in ordered], [prompt_key(requests[i]) for i in ordered])]


def chat_messages(request: Request) -> list[dict[str, Any]]:
    """The request as a transformers chat (images as `{"type": "image"}` parts, in order), without its assistant
    prefix (`bare_prompt` adds it)."""
    messages = []
    for message in request.messages:
        content = []
        for part in message.content:
            if isinstance(part, TextPart):
                if part.text:
                    content.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                content.append({"type": "image"})
        messages.append({"role": message.role, "content": content})
    return messages


def bare_prompt(processor: Any, request: Request, template: str | None) -> str:
    """The prompt text as the harness renders a plain vllm run's (`harness.models.facts.prompt_style`, "default"): the chat,
    its assistant prefix a final assistant message the template continues (`continue_final_message`), as
    MMLongBench's wrappers prefill."""
    messages = chat_messages(request)
    continued = bool(request.assistant_prefix)
    if continued:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": request.assistant_prefix}]})
    return processor.apply_chat_template(
        messages,
        chat_template=template,
        tokenize=False,
        add_generation_prompt=not continued,
        continue_final_message=continued,
    )


def bare_sample(request: Request, output: Any, tokenizer: Any, screen_tokens: int) -> dict[str, Any]:
    """One sample of the bare loop, read from vLLM's `RequestOutput` as the backend reads it (`output_result`): its
    answer decoded from its generated ids by the engine's tokenizer, not vLLM's incremental text."""
    result = output_result(output, tokenizer)
    return {
        "task": request.task,
        "sample_id": request.sample_id,
        "response": result["text"],
        "prompt_tokens": result["prompt_tokens"],
        "prompt_ids_sha256": result["prompt_ids_sha256"],
        "screen_tokens": screen_tokens,
        "completion_tokens": result["completion_tokens"],
        "cached_tokens": result["cached_tokens"],
    }


def decode(data: bytes) -> Any:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")


def run_bare(settings: VLLMSettings, requests: list[Request], passes: Sequence[str] = PASSES) -> dict[str, Any]:
    from transformers import AutoProcessor
    from vllm import LLM, SamplingParams

    given = settings.engine.get(LIMIT)  # the engine sized as the backend sizes it (`image_limit`)
    limit = engine_limit(
        ImageProfile().covering(requests),
        settings.max_images,
        settings.processor_kwargs().get("max_pixels"),
        given if isinstance(given, dict) else None,
    )
    image_limit = image_count(limit, settings.max_images)
    if settings.max_model_len:
        os.environ.setdefault("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")  # as the backend's engine does
    start_method()  # the engine's processes start as the backend's do: by spawn, unless the environment says
    started = time.perf_counter()
    llm = LLM(**engine_kwargs(settings, limit))
    engine_seconds = time.perf_counter() - started
    max_len = llm.llm_engine.model_config.max_model_len
    processor = AutoProcessor.from_pretrained(settings.pretrained, revision=settings.revision)
    template = settings.chat_template
    if template is not None and os.path.isfile(template):
        template = Path(template).read_text(encoding="utf-8")
    # The backend's own screen (its processor count): both sides generate for the same samples, and each
    # sample's count is set beside the prompt length vLLM reports for it.
    count = EngineCount(settings, template, online=False, fallback=fallback_template)
    screen_tokens = {id(r): count.prompt_tokens(r) for r in requests}
    sent = [
        r
        for r in requests
        if screen_request(
            r, settings, prompt_tokens=screen_tokens[id(r)], max_model_len=max_len, image_limit=image_limit
        )
        is None
    ]

    def prepare(batch: list[Request]) -> tuple[list[dict[str, Any]], list[Any]]:
        inputs = []
        for request in batch:
            item: dict[str, Any] = {"prompt": bare_prompt(processor, request, template)}
            if request.images:
                item["multi_modal_data"] = {"image": [decode(i.data()) for i in request.images]}
            if request.processor_kwargs:
                item["mm_processor_kwargs"] = dict(request.processor_kwargs)
            inputs.append(item)
        sampling = [{**sampling_kwargs(r.settings, settings.seed), **settings.sampling} for r in batch]
        return inputs, [SamplingParams(**kwargs) for kwargs in sampling]

    def reset() -> None:  # no prefix or processor cache carried from one timing into the next
        for name in ("reset_prefix_cache", "reset_mm_cache"):
            if callable(getattr(llm, name, None)):
                getattr(llm, name)()

    tasks: dict[str, list[Request]] = {}
    for request in sent:
        tasks.setdefault(request.task, []).append(request)
    sent = [r for batch in tasks.values() for r in batch]  # task order, each task's rows in dataset order

    # The backend's engine calls: at most chunk_size requests and chunk_tokens prompt tokens (by the rows' figures).
    def chunked(ordered: list[Request]) -> list[list[Request]]:
        return [
            [ordered[i] for i in batch.indices]
            for batch in plan_batches(
                [r.token_count for r in ordered],
                max_batch_tokens=settings.chunk_tokens,
                max_batch_size=settings.chunk_size,
                padded=False,
                sort_long_first=False,
            )
        ]

    order = engine_order(sent, [screen_tokens[id(r)] for r in sent], settings.request_order)
    calls_of = {
        "per_task": list(tasks.values()),
        "one_call": chunked(sent),
        "backend_order": chunked([sent[i] for i in order]),
    }

    def timed(name: str) -> tuple[dict[str, Any], list[Any]]:
        """One pass over every sent request, caches reset first: `per_task` one generate call per task, in task
        order (as the runner once called the backend); `one_call` in dataset order, `backend_order` in our run's
        order, both in the backend's chunks. Outputs come back in `sent`'s order."""
        reset()
        prepare_seconds = generate_seconds = 0.0
        answered: dict[int, Any] = {}
        calls = calls_of[name]
        for batch in calls:
            start = time.perf_counter()
            inputs, params = prepare(batch)
            prepared = time.perf_counter()
            # use_tqdm as the backend passes it: both sides pay for the same progress bars
            results = llm.generate(inputs, sampling_params=params, use_tqdm=settings.use_tqdm)
            answered.update((id(r), o) for r, o in zip(batch, results, strict=True))
            prepare_seconds += prepared - start
            generate_seconds += time.perf_counter() - prepared
        outputs = [answered[id(r)] for r in sent]
        # With random weights answers end at different lengths run to run: the tokens generated say how much work
        # each pass did; vLLM's num_cached_tokens (prompt tokens its prefix cache served) what its prefill skipped.
        return {
            "name": name,
            "seconds": prepare_seconds + generate_seconds,
            "prepare_seconds": prepare_seconds,
            "generate_seconds": generate_seconds,
            "engine_calls": len(calls),
            "prompt_tokens": sum(len(o.prompt_token_ids) for o in outputs),
            "cached_tokens": sum(getattr(o, "num_cached_tokens", None) or 0 for o in outputs),
            "completion_tokens": sum(len(o.outputs[0].token_ids) for o in outputs),
        }, outputs

    runs = [timed(name) for name in passes]
    # The samples (answers, lengths) of the per-task pass where it ran (the reference), else of the first pass.
    reference = next((i for i, name in enumerate(passes) if name == "per_task"), 0)
    outputs = runs[reference][1]
    getter = getattr(llm, "get_tokenizer", None)  # the engine's, which the backend decodes each answer with
    tokenizer = getter() if callable(getter) else None  # (an engine stand-in's own text, as the backend takes it)
    samples = [bare_sample(r, o, tokenizer, screen_tokens[id(r)]) for r, o in zip(sent, outputs, strict=True)]
    shutdown = getattr(getattr(llm.llm_engine, "engine_core", None), "shutdown", None)
    if callable(shutdown):  # frees the GPU for the next run in this process
        shutdown()
    kept = {id(r) for r in sent}
    screened_out = [
        {"task": r.task, "sample_id": r.sample_id, "screen_tokens": screen_tokens[id(r)]}
        for r in requests
        if id(r) not in kept
    ]
    passes_run = [run for run, _ in runs]
    per_task = next((run for run in passes_run if run["name"] == "per_task"), None)
    one_call = [run for run in passes_run if run["name"] == "one_call"]
    return {
        "engine_seconds": engine_seconds,
        "passes": passes_run,
        "prepare_seconds": per_task["prepare_seconds"] if per_task else None,
        "generate_seconds": per_task["generate_seconds"] if per_task else None,
        # the last one-call pass: with a per-task pass before it, on an engine that has run every request once
        "one_call_seconds": one_call[-1]["seconds"] if one_call else None,
        "one_call_completion_tokens": one_call[-1]["completion_tokens"] if one_call else None,
        "token_rule": count.token_rule,
        "samples": samples,
        "screened_out": screened_out,
        "image_limit": image_limit,
        "max_model_len": max_len,
    }


def against_ours(bare: dict[str, Any], ours_dir: Path, exclude: float) -> dict[str, Any]:
    """Our run of the same tasks beside each pass of the bare loop: samples/s, same answers, same prompt lengths,
    prompt tokens vLLM's prefix cache served and tokens generated on each side."""
    ours = load_run(ours_dir)
    speed = throughput(ours, exclude=exclude)
    n = len(bare["samples"])
    compared = same_answer = same_ids = same_generated = same_length = screen_equal = 0
    differing = []
    for sample in bare["samples"]:
        record = ours.samples.get(sample["task"], {}).get(sample["sample_id"])
        if record is None or not isinstance(record.get("response"), str):
            continue
        compared += 1
        same_answer += record["response"] == sample["response"]  # each decoded from its ids, U+FFFD kept
        same_ids += record.get("prompt_ids_sha256") is not None and record["prompt_ids_sha256"] == sample.get(
            "prompt_ids_sha256"
        )
        same_generated += (record.get("usage") or {}).get("completion_tokens") == sample["completion_tokens"]
        reported = (record.get("usage") or {}).get("prompt_tokens")
        same_length += reported == sample["prompt_tokens"]
        screen_equal += record.get("token_count") == reported
        if reported != sample["prompt_tokens"] and len(differing) < 10:
            differing.append(
                {
                    "task": sample["task"],
                    "sample_id": sample["sample_id"],
                    "ours": reported,
                    "bare": sample["prompt_tokens"],
                }
            )
    usages = [r.get("usage") or {} for t in ours.samples.values() for r in t.values()]
    ours_work = {
        key: sum(u.get(key) or 0 for u in usages) for key in ("prompt_tokens", "cached_tokens", "completion_tokens")
    }
    passes = [
        {**run, "samples_per_s": n / run["seconds"] if run["seconds"] > 0 else float("nan")} for run in bare["passes"]
    ]
    for run in passes:
        run["ours_ratio"] = speed["samples_per_s"] / run["samples_per_s"]
    engine = {
        k: v
        for k, v in (ours.results.get("config", {}).get("backend_stats") or {}).items()
        if k in ("engine_calls", "engine_requests", "engine_call_seconds")
    }  # where our time went
    return {
        "ours": {**speed, **ours_work, **engine},
        "passes": passes,
        "compared": compared,
        "same_answer": same_answer,
        "same_prompt_ids": same_ids,
        "same_completion_tokens": same_generated,
        "same_prompt_tokens": same_length,
        "ours_screen_equals_engine": screen_equal,
        "differing_prompt_tokens": differing,
    }


def screen_against_engine(bare: dict[str, Any]) -> dict[str, Any]:
    """The backend's screen count of each sample against the prompt length vLLM reported for it."""
    samples = bare["samples"]
    differing = [s for s in samples if s["screen_tokens"] != s["prompt_tokens"]]
    by_task: dict[str, dict[str, int]] = {}
    for s in samples:
        entry = by_task.setdefault(s["task"], {"samples": 0, "equal": 0, "min": s["prompt_tokens"], "max": 0})
        entry["samples"] += 1
        entry["equal"] += s["screen_tokens"] == s["prompt_tokens"]
        entry["min"], entry["max"] = min(entry["min"], s["prompt_tokens"]), max(entry["max"], s["prompt_tokens"])
    return {
        "samples": len(samples),
        "equal": len(samples) - len(differing),
        "tasks": by_task,
        "differing": [
            {k: s[k] for k in ("task", "sample_id", "screen_tokens", "prompt_tokens")} for s in differing[:20]
        ],
    }


def _share(part: int, whole: int) -> str:
    return f"{part:,} ({part / whole:.1%})" if whole else f"{part:,}"


def render(result: dict[str, Any]) -> str:
    b, c = result["bare"], result.get("comparison")
    screen = screen_against_engine(b)
    lines = [
        "# The vllm backend against a bare LLM.generate loop",
        "",
        f"Bare loop: {len(b['samples'])} samples ({len(b['screened_out'])} screened out), engine start "
        f"{b['engine_seconds']:.1f} s; passes, in the order run: "
        + "; ".join(
            f"{PASS_NAMES[run['name']]} {run['seconds']:.2f} s (images + prompts {run['prepare_seconds']:.2f} s, "
            f"generate {run['generate_seconds']:.2f} s)"
            for run in b["passes"]
        )
        + ".",
        "",
        f"Screen count ({b['token_rule']}) against vLLM's `len(prompt_token_ids)`: {screen['equal']}/"
        f"{screen['samples']} equal.",
        "",
        "| task | samples | equal | vLLM's prompt tokens |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {task} | {t['samples']} | {t['equal']} | {t['min']:,}-{t['max']:,} |" for task, t in screen["tasks"].items()
    ]
    lines += [
        f"- {d['task']} {d['sample_id']}: screen {d['screen_tokens']} vLLM {d['prompt_tokens']}"
        for d in screen["differing"]
    ]
    lines += [
        f"- screened out (never sent): {d['task']} {d['sample_id']}: screen {d['screen_tokens']} tokens"
        for d in b["screened_out"][:20]
    ]
    if c is not None:
        o = c["ours"]
        lines += [
            "",
            "| | engine calls | samples | seconds | samples/s | ours / it | prompt tokens | served by the prefix "
            "cache | tokens generated |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| ours (vllm backend) | {o.get('engine_calls', '')} | {o['samples']} | {o['seconds']:.2f} | "
            f"{o['samples_per_s']:.2f} | | {o['prompt_tokens']:,} | {_share(o['cached_tokens'], o['prompt_tokens'])} "
            f"| {o['completion_tokens']:,} |",
        ]
        for number, run in enumerate(c["passes"], 1):
            lines.append(
                f"| bare pass {number}: {PASS_NAMES[run['name']]} | {run['engine_calls']} | {len(b['samples'])} | "
                f"{run['seconds']:.2f} (generate {run['generate_seconds']:.2f}) | {run['samples_per_s']:.2f} | "
                f"{run['ours_ratio']:.1%} | {run['prompt_tokens']:,} | "
                f"{_share(run['cached_tokens'], run['prompt_tokens'])} | {run['completion_tokens']:,} |"
            )
        lines += [
            "",
            f"Same answer (decoded from the generated ids, U+FFFD kept): {c['same_answer']}/{c['compared']}; same "
            f"prompt ids: {c['same_prompt_ids']}/{c['compared']}; as many tokens generated: "
            f"{c['same_completion_tokens']}/{c['compared']}; same prompt length reported by vLLM: "
            f"{c['same_prompt_tokens']}/{c['compared']}; our run's "
            f"screen count (journal `token_count`) equal to the length vLLM reported to it: "
            f"{c['ours_screen_equals_engine']}/{c['compared']}.",
        ]
        lines += [
            f"- {d['task']} {d['sample_id']}: ours {d['ours']} bare {d['bare']}" for d in c["differing_prompt_tokens"]
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    own = {"--json": None, "--ours": None, "--ours_exclude": "0", "--out": None, "--passes": ",".join(PASSES)}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in own and i + 1 < len(argv):
            own[argv[i]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    passes = [name for name in (own["--passes"] or "").split(",") if name]
    unknown = [name for name in passes if name not in PASS_NAMES]
    if not passes or unknown:
        print(
            f"vllm_bare_loop: --passes takes a comma-separated list of {', '.join(PASS_NAMES)}, got "
            f"{own['--passes']!r}",
            file=sys.stderr,
        )
        return 2
    settings, requests = planned_requests(rest)
    bare = run_bare(settings, requests, passes)
    result: dict[str, Any] = {"bare": bare}
    if own["--ours"]:
        result["comparison"] = against_ours(bare, Path(own["--ours"]), float(own["--ours_exclude"] or 0))
    report = render(result)
    print(report, end="")
    if own["--out"]:
        Path(own["--out"]).write_text(report)
    if own["--json"]:
        Path(own["--json"]).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
