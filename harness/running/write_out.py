"""`--write_out`: the first prompts of each task printed before generating, as lm-eval prints them, so a user sees
what the model will be asked (each image marked `<image>`; a system turn, `--system_instruction` included, labelled).
The backend renders these messages with the model's chat template; an alias's input policies and a task's truncation
rule apply afterwards, per model."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import TextIO

from harness.inputs.prompts import prompt_text
from harness.running.task import RowProblem, Task

DOCS_PER_TASK = 2


def write_out(
    tasks: Sequence[Task],
    gen_kwargs: Mapping[str, object],
    seed: int | None,
    out: TextIO | None = None,
    docs: int = DOCS_PER_TASK,
) -> None:
    out = out or sys.stderr  # looked up at call time: a caller may have redirected it since import
    for task in tasks:
        settings = task.generation_settings(gen_kwargs, seed)
        with task.rows():  # read for this task only, and let go of after
            for doc_id, doc in islice(task.iter_docs(), docs):
                request = task.build_request(doc_id, doc, settings)
                print(f"--- {task.name}, document {doc_id} ---", file=out)
                if isinstance(request, RowProblem):
                    print(f"(cannot be built: {request.reason})", file=out)
                    continue
                print(
                    prompt_text(request.messages)
                    + (f"\n[assistant] {request.assistant_prefix}" if request.assistant_prefix else ""),
                    file=out,
                )
                print(f"--- target: {task.target(doc)}", file=out)
