#!/usr/bin/env python
"""Does the screen count what the model sees? For a transformers checkpoint and some tasks, compare per
sample three counts of the prompt:

* `rows`: the rows' figures (text tokens by the build's counter + each image under the contract's
  Qwen2-VL rule), what `vllm` and `openai` screen with;
* `screen`: the `hf` backend's own count (`HFModel.prompt_tokens`: the chat template tokenized, each image
  as the processor says it expands), what an `hf` run and its `--screen_only` screen with;
* `actual`: the length of the `input_ids` the processor really builds from the prompt and the decoded images.

Also compares, image by image, the contract's vision-token rule with the processor's count at the image's
size. Prints a Markdown table and exits 1 if `screen` ever differs from `actual`.

    python scripts/check_token_counting.py --model_args pretrained=CKPT --tasks T1,T2 --data_dir DATA [--limit N]

Any `harness` run option is accepted (the run is planned exactly as `harness` plans it; nothing is generated).
"""

from __future__ import annotations

import sys
from collections import Counter

from builders.core import contract
from harness.models.backends.hf.model import HFModel
from harness.row_tokens import prompt_tokens as rows_prompt_tokens
from harness.run.arguments import parse_options
from harness.run.models import run_policies
from harness.run.plan import plan_run
from harness.running.task.requests import RowProblem


def main(argv: list[str]) -> int:
    plan = plan_run(parse_options(["--model", "hf", *argv]), argv)
    policies = run_policies(plan)
    model = HFModel.from_args(plan.model.args)
    assert isinstance(model, HFModel)
    lines = [
        "| task | samples | images | rows = actual | screen = actual | max abs(rows - actual) | "
        "image rule = processor |",
        "|---|---|---|---|---|---|---|",
    ]
    mismatched = 0
    for task in plan.tasks:
        settings = task.generation_settings(plan.options.gen_kwargs, plan.options.sampling_seed)
        tally: Counter[str] = Counter()
        worst = 0
        with task.rows():  # the rows, held for the block
            for doc_id, doc in task.iter_docs():
                request = task.build_request(doc_id, doc, settings)
                if isinstance(request, RowProblem):
                    continue
                if policies is not None:
                    request = policies(request)
                text = model._prompt(request)
                images = model._images(request)
                settled = model.count.settle(dict(request.processor_kwargs))  # as the backend sends it
                inputs = settled.processor(text=[text], images=images or None, return_tensors="pt", **settled.call)
                actual = int(inputs["input_ids"].shape[1])
                screen = model.prompt_tokens(request)
                rows = rows_prompt_tokens(request, model.facts.max_pixels)
                # The images' own sizes, as the row records them: the batch may hand the processor images it scaled first
                # (`harness.models.backends.hf.presize`, proven to give the same pixels), whose sizes say nothing of the rule.
                sizes = [
                    (ref.width or im.width, ref.height or im.height)
                    for ref, im in zip(request.images, images, strict=True)
                ]
                counted = settled.processor._get_num_multimodal_tokens(
                    image_sizes=[(h, w) for w, h in sizes], **settled.call
                ).num_image_tokens
                rule = [contract.image_tokens(w, h) for w, h in sizes]
                tally["samples"] += 1
                tally["images"] += len(images)
                tally["rows_equal"] += rows == actual
                tally["screen_equal"] += screen == actual
                tally["images_equal"] += sum(a == b for a, b in zip(rule, counted, strict=True))
                worst = max(worst, abs(rows - actual))
                if screen != actual:
                    mismatched += 1
                    print(f"{task.name} {request.sample_id}: screen {screen} != actual {actual}", file=sys.stderr)
        lines.append(
            f"| {task.name} | {tally['samples']} | {tally['images']} | {tally['rows_equal']} | "
            f"{tally['screen_equal']} | {worst} | {tally['images_equal']} of {tally['images']} |"
        )
    print(
        f"checkpoint {plan.model.args['pretrained']}: processor {type(model.processor).__name__}, "
        f"counting rule: {model.token_rule}"
    )
    print("\n".join(lines))
    model.close()
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
