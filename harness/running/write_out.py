"""`--write_out`: the first prompts of each task printed before generating, as lm-eval prints them, so a user sees
what the model will be asked: as the run's backend renders it (`Model.render`, `harness.sent`: its chat template's
text, or the messages an API is sent), after the alias's input policies and the task's text round trip; a backend
that renders nothing of its own (a baseline) shows the turns, each image marked `<image>` (a system turn,
`--system_instruction` included, labelled). A task's truncation rule applies afterwards, per request."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import TextIO

from harness.api import Model, Request
from harness.inputs.prompts import prompt_text
from harness.inputs.round_trip import round_tripped
from harness.running.task import RowProblem, Task

DOCS_PER_TASK = 2


def write_out(
    tasks: Sequence[Task],
    gen_kwargs: Mapping[str, object],
    seed: int | None,
    out: TextIO | None = None,
    docs: int = DOCS_PER_TASK,
    model: Model | None = None,
    policies: Callable[[Request], Request] | None = None,
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
                sent = _rendered(request, model, policies)
                if sent is not None:
                    print(sent, file=out)
                else:
                    print(
                        prompt_text(request.messages)
                        + (f"\n[assistant] {request.assistant_prefix}" if request.assistant_prefix else ""),
                        file=out,
                    )
                print(f"--- target: {task.target(doc)}", file=out)


def _rendered(request: Request, model: Model | None, policies: Callable[[Request], Request] | None) -> str | None:
    """The request as `model` renders it, after its input policies and text round trip; None where it renders
    nothing of its own."""
    if model is None:
        return None
    request = policies(request) if policies is not None else request
    request = round_tripped(request, model.text_round_trip() if request.text_round_trip else None)
    try:
        sent = model.render(request)
    except Exception:  # as the record of a request it cannot render: its turns
        return None
    return sent.text if sent is not None else None
