"""The end-to-end runs of a benchmark scored by a judge (MMLongBench, its other versions, MMLongBench-Doc): a loopback
chat server standing in for the judge, the `harness` arguments of a run judged through it, the prompt a judge call
asked, and the prompt VLMEvalKit's DocVQA judge hook writes for a row."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.chat_server import ChatServer


@contextmanager
def judge_server(answer: Callable[[dict[str, Any]], str], **options: Any) -> Iterator[ChatServer]:
    """A started chat server that answers each judge call's body with `answer` (`options`: ChatServer's others, such
    as `faults`), stopped on leaving."""
    server = ChatServer(answer=answer, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def judged_run(
    server: ChatServer, tasks: str, data_dir: Path, *, answer: str | None = None, judge_options: str = "api_key=k"
) -> tuple[str | Path, ...]:
    """The `harness` arguments of a run of `tasks` on `data_dir` judged by the openai backend at `server` (with
    `judge_options` beside its base_url): the constant model answering `answer`, or the random model without one."""
    model = ("--model", "random") if answer is None else ("--model", "constant", "--model_args", f"answer={answer}")
    judge = ("--judge_model", "openai", "--judge_args", f"base_url={server.base_url},{judge_options}")
    return ("--tasks", tasks, *model, "--data_dir", data_dir, *judge)


def prompt_of(body: dict[str, Any]) -> str:
    """The text of a judge call's one message (a plain string, or the text of its first part)."""
    (message,) = body["messages"]
    return message["content"] if isinstance(message["content"], str) else message["content"][0]["text"]


def vlmevalkit_judge_prompt(gold: str, answer_format: str, question: str, reply: str) -> str:
    """The one prompt VLMEvalKit's DocVQA judge hook (`utils_vlmevalkit.docvqa_judge_prompts`) writes for `reply` to
    the row asking `question`, whose gold `gold` the release stores as JSON."""
    from tasks.mmlongbench import utils_vlmevalkit

    row = {"answer": json.dumps(gold), "answer_format": answer_format, "question": question}
    (prompt,) = utils_vlmevalkit.docvqa_judge_prompts(row, reply).values()
    return prompt
