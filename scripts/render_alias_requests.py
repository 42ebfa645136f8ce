#!/usr/bin/env python
"""Render one request per alias from the real processor files, for a machine that has them (the offline tests render
each family with its transcribed template and a tiny tokenizer: tests/harness/models/test_family_rendering.py).

For every alias asked (default: all) and each of the three papers' benchmarks, the first row of one task is built as a
run builds it (the alias's arguments for that benchmark, its input policy, its prompt style), and:

* an `hf` or `vllm` alias: the checkpoint's processor is loaded (offline by default: a local folder or the Hub cache;
  `--online` lets it download the config and processor, never the weights) and the prompt rendered exactly as the
  backend sends it (`ProcessorCount.render`), then tokenized with the processor and the row's images: its length, its
  BOS count, its image-token count, and the prompt's start and end;
* an `openai` alias: the chat-completions messages it sends (images shown as `<image detail=...>`).

    python scripts/render_alias_requests.py --data_dir DATA [--aliases internvl,phi3.5-vision] [--online] [--chars 300]

DATA holds built `mmlongbench`, `milebench` and `mmneedle` folders (the offline fixtures do: `builders build
mmlongbench --source fixture --configs niah_vh_single_8k --out DATA`, likewise `milebench --source fixture --configs
clevr_change` and `mmneedle --source synthetic --configs m10_n1_k2`). A Markdown report goes to stdout; an alias whose
processor cannot be had says why on its line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TASKS = {
    "mmlongbench": "mmlongbench_niah_vh_single_8k",
    "milebench": "milebench_clevr_change",
    "mmneedle": "mmneedle_m10_n1_k2_pos",
}


def first_request(data_dir: Path, task_name: str, policy: Any) -> Any:
    from harness.config.task_index import TaskIndex
    from harness.inputs.input_policy import apply_policy
    from harness.running.task.task import Task

    task = Task(TaskIndex().tasks[task_name])
    task.load(data_dir, 1)
    doc_id, doc = next(task.iter_docs())
    return apply_policy(task.build_request(doc_id, doc, task.generation_settings({})), policy)


def render_model(args: dict[str, str], request: Any, online: bool, chars: int, backend: str = "hf") -> str:
    from harness.models.families import style_named
    from harness.models.shared.hf_counting import ProcessorCount

    count = ProcessorCount.load(
        args["pretrained"],
        revision=args.get("revision"),
        trust_remote_code=args.get("trust_remote_code") == "true",
        offline=not online,
        style=style_named(args.get("prompt_style", "default")),
        settings_at_load=backend == "hf",  # as each backend applies a request's processor settings
    )
    prompt = count.render(request)
    images = [ref.pil() for ref in request.images]
    ids = count.tokenizer(prompt).input_ids
    try:
        settled = count.settle(dict(request.processor_kwargs))
        inputs = settled.processor(text=[prompt], images=images or None, **settled.call)
        ids = list(inputs["input_ids"][0])
    except Exception as err:  # a tokenizer-only checkpoint (remote code): the text's own tokens
        print(f"  (the processor did not expand the images: {type(err).__name__}: {err})", file=sys.stderr)
    bos = count.tokenizer.bos_token_id
    image_id = getattr(count.processor, "image_token_id", None)
    head, tail = json.dumps(prompt[:chars]), json.dumps(prompt[-chars:])
    return (
        f"{len(ids)} tokens, BOS x{ids.count(bos) if bos is not None else 0}, "
        f"image tokens {ids.count(image_id) if image_id is not None else 'n/a'}, {len(images)} images; "
        f"starts {head}; ends {tail}"
    )


def render_api(args: dict[str, str], request: Any) -> str:
    from harness.models.backends.openai_chat.wire import build_messages

    detail = dict(request.processor_kwargs).get("image_detail", args.get("image_detail"))
    prefill = args.get("continue_final_message") == "true"
    shown = []
    for message in build_messages(request, detail, prefill=prefill):
        content = message["content"]
        if isinstance(content, list):
            content = [
                f"<image detail={p['image_url'].get('detail')}>" if p["type"] == "image_url" else p["text"]
                for p in content
            ]
        shown.append({"role": message["role"], "content": content})
    return json.dumps(shown)[:2000]


def main(argv: list[str]) -> int:
    from harness.models.aliases import ALIASES, alias_policy, resolve, task_benchmarks

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", type=Path, required=True)
    parser.add_argument("--aliases", default="", help="comma-separated (default: every alias)")
    parser.add_argument("--online", action="store_true", help="download configs and processors (never weights)")
    parser.add_argument("--chars", type=int, default=300, help="characters of the prompt's start and end shown")
    options = parser.parse_args(argv)
    names = [n for n in options.aliases.split(",") if n] or sorted(ALIASES)
    print("| alias | benchmark | rendered |\n|---|---|---|")
    for name in names:
        for benchmark, task in TASKS.items():
            backend, args, _ = resolve(name, {}, task_benchmarks([task]))
            try:
                request = first_request(options.data_dir, task, alias_policy(name, task))
                shown = (
                    render_api(args, request)
                    if backend == "openai"
                    else render_model(args, request, options.online, options.chars, backend)
                )
            except Exception as err:  # one alias's missing files or task data never stop the report
                shown = f"not rendered: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            cell = shown.replace("|", "\\|")
            print(f"| {name} | {benchmark} | {cell} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
