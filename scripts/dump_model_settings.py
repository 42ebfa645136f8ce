#!/usr/bin/env python
"""Dump what every alias resolves to, for a before/after comparison of a refactor of the model layer (issue 50).

For every alias: its resolved backend and arguments and its input policy on every task and group of the four
benchmarks (each name alone, as `--tasks NAME` gives it), what the results record of it (`config.alias_info`), and
the prompt it is sent on the first row of a few tasks per benchmark and length: the request after the input policy
(its text parts, image hashes and sizes, token figures, processor settings) and the prompt its backend renders
(`hf`/`vllm`: the chat template's text, rendered with the family's published template around a tiny tokenizer from
`tests/support/family_processors.py`; `openai`: the chat-completions messages, images by hash). Also `harness
models`. Writes one JSON file; compare two with `diff`.

    python scripts/dump_model_settings.py --data_dir demo_out/data --out /tmp/settings.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LENGTHS = ("8k", "16k", "32k", "64k", "128k")
MMLB = ("vrag_infoseek", "niah_vh_single", "niah_mmniah_ret_image", "icl_food101", "summ_govreport", "docvqa_slidevqa")
RENDERED = (
    [f"mmlongbench_{task}_{length}" for length in LENGTHS for task in MMLB]
    + ["milebench_clevr_change", "milebench_image_needle", "milebench_text_needle_combined"]
    + ["mmneedle_m10_n1_k2_pos", "mmneedle_m1_n2_k1_neg", "locovqa_okvqa_cmp_4", "locovqa_mnist_int_9"]
)
# The tiny processor (tests/support/family_processors.py) a prompt style renders with.
PROCESSORS = {
    "qwen": "qwen2_vl",
    "gemma3": "gemma3",
    "idefics": "idefics2",
    "internvl2_5": "internvl3",
    "internvl2_chatml": "internvl3",
    "internvl2_phi3": "internvl3",
    "ovis2": "ovis2",
    "llava_llama_2": "llava_1_5",
    "default": "llava_1_5",
    "phi": "phi3_vision",
    "pixtral": "pixtral",
}


def _model_layer() -> tuple[Any, Any, Any, Any]:
    """(alias names, resolve(name, given, task_names) -> (backend, args, alias), policy(alias, task), info(alias)),
    from whichever layout the checkout has."""
    from harness.models.aliases import ALIASES, alias_policy, index_benchmarks, resolve, task_benchmarks
    from harness.run.results_config import alias_info

    def resolved(name: str, given: dict[str, str], task_names: list[str]) -> Any:
        return resolve(name, given, task_benchmarks(task_names))

    def info(name: str) -> Any:  # the alias on a run of every installed benchmark
        return alias_info(name, index_benchmarks())

    return sorted(ALIASES), resolved, alias_policy, info


def request_record(request: Any) -> dict[str, Any]:
    from harness.api import ImagePart

    return {
        "messages": [
            {
                "role": m.role,
                "content": [
                    {"image": p.image.sha256, "size": [p.image.width, p.image.height]}
                    if isinstance(p, ImagePart)
                    else {"text": p.text}
                    for p in m.content
                ],
            }
            for m in request.messages
        ],
        "assistant_prefix": request.assistant_prefix,
        "text_tokens": request.text_tokens,
        "image_tokens": list(request.image_tokens),
        "processor_kwargs": dict(request.processor_kwargs),
        "truncation": request.truncation,
        "text_round_trip": request.text_round_trip.rule if request.text_round_trip else None,
    }


def render_hf(args: dict[str, str], request: Any, processors: dict[str, Any]) -> dict[str, Any]:
    from harness.models.families import style_named
    from harness.models.shared.hf_counting import ProcessorCount
    from tests.support import family_processors

    style = args.get("prompt_style", "default")
    name = PROCESSORS[style]
    if name not in processors:
        processors[name] = getattr(family_processors, name)()
    count = ProcessorCount(processors[name], None, name=name, style=style_named(style))
    try:  # the runner applies a task's text round trip before the backend renders (issue 50 item 3)
        from harness.inputs.round_trip import round_tripped
    except ImportError:  # before it did, the backend applied it while rendering
        return {"processor": name, "text": count.render(request)}
    return {"processor": name, "text": count.render(round_tripped(request, count.decode_encode))}


def render_api(args: dict[str, str], request: Any) -> list[dict[str, Any]]:
    from harness.models.backends.openai_chat.wire import build_messages

    detail = dict(request.processor_kwargs).get("image_detail", args.get("image_detail"))
    prefill = args.get("continue_final_message") == "true"
    shown = []
    for message in build_messages(request, detail, prefill=prefill):
        content = message["content"]
        if isinstance(content, list):
            content = [
                {
                    "image_url_sha256": hashlib.sha256(p["image_url"]["url"].encode()).hexdigest(),
                    "detail": p["image_url"].get("detail"),
                }
                if p["type"] == "image_url"
                else p
                for p in content
            ]
        shown.append({"role": message["role"], "content": content})
    return shown


def first_requests(data_dir: Path) -> dict[str, Any]:
    from harness.config.task_index import TaskIndex
    from harness.running.task.task import Task

    index = TaskIndex()
    out = {}
    for name in RENDERED:
        task = Task(index.tasks[name])
        task.load(data_dir, 1)
        doc_id, doc = next(task.iter_docs())
        out[name] = task.build_request(doc_id, doc, task.generation_settings({}))
    return out


def dump(data_dir: Path) -> dict[str, Any]:
    from harness.config.task_index import TaskIndex
    from harness.inputs.input_policy import apply_policy
    from harness.models.registry import available_models

    names, resolve, policy_of, info_of = _model_layer()
    index = TaskIndex()
    every = sorted([*index.tasks, *index.groups])
    requests = first_requests(data_dir)
    processors: dict[str, Any] = {}
    out: dict[str, Any] = {"aliases": {}}
    listing = io.StringIO()
    from harness.run.cli import main

    with contextlib.redirect_stdout(listing), contextlib.suppress(SystemExit):
        main(["models"])
    out["harness_models"] = listing.getvalue().splitlines()
    out["backends"] = sorted(available_models())
    for name in names:
        by_setting: dict[str, list[str]] = {}
        for task in every:
            try:
                backend, args, alias = resolve(name, {}, [task])
                policy = policy_of(name, task).describe() if task in index.tasks else None
                key = json.dumps({"backend": backend, "args": args, "alias": alias, "policy": policy}, sort_keys=True)
            except Exception as err:  # a refused combination is part of the behaviour
                key = json.dumps({"error": f"{type(err).__name__}: {err}"})
            by_setting.setdefault(key, []).append(task)
        rendered = {}
        for task, request in requests.items():
            backend, args, _ = resolve(name, {}, [task])
            sent = apply_policy(request, policy_of(name, task))
            record: dict[str, Any] = {"request": request_record(sent)}
            record["prompt"] = render_api(args, sent) if backend == "openai" else render_hf(args, sent, processors)
            rendered[task] = record
        out["aliases"][name] = {
            "settings": {key: tasks for key, tasks in sorted(by_setting.items())},
            "alias_info": info_of(name),
            "rendered": rendered,
        }
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", type=Path, required=True, help="a folder with the four benchmarks' builds")
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args(argv)
    options.out.write_text(json.dumps(dump(options.data_dir), indent=1, sort_keys=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
