"""Fuzz: what a chat-completions server or a judge sends back (issue 30). Any body is parsed without a traceback;
any bytes on a real loopback socket (status line, headers, body, a stall, a close) end each attempt within its
bound as one response; any judge reply is parsed within a bound, and one over the cap is never parsed."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.api import BackendFatalError, GenerationSettings, Response
from harness.models.backends.openai_chat.wire import parse_completion
from harness.models.registry import get_model_class
from harness.models.shared.api_client.replies import EXCERPT_MOST, error_message, parse_body
from harness.running.task.judge import JudgeSpec, judge_samples
from tasks.mmlongbench.scoring import parse_judge_json
from tests.support.model_requests import make_request

from .conftest import JSON, bounded, budget, counted, deep, mutated

GOOD = {
    "id": "x",
    "object": "chat.completion",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "red", "refusal": None}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "completion_tokens_details": {"reasoning_tokens": 0}},
}
BODIES = st.one_of(
    mutated(GOOD).map(lambda v: json.dumps(v).encode()),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60),
    st.sampled_from(
        [
            deep(5000).encode(),
            deep(3000, "{").encode(),
            b'{"choices": ' + deep(900).encode() + b"}",
            b'"\\ud800"',
            b"NaN",
            b'{"error": ' + deep(950, "{").encode() + b"}",
        ]
    ),
)


@budget(fuzz=2000, ci=40)
@given(body=BODIES)
def test_any_body_parses_into_one_response(body: bytes) -> None:
    counted()
    with bounded(10, "parse"):
        data, problem = parse_body(body)
        assert (data is None) == (problem is not None) or data is None
        response = parse_completion(data)
        assert isinstance(response, Response) and (response.text is None) == (
            response.error is not None or response.refused
        )
        message, code = error_message(data if data is not None else body.decode("utf-8", "replace"))
        assert len(message) <= EXCERPT_MOST + len("... (cut: 9,999,999,999 characters in all)")  # and its length


class RawServer:
    """A loopback TCP server that answers each connection with the bytes of `reply` (then, unless `linger`, closes)."""

    def __init__(self) -> None:
        self.reply = b""
        self.trickle = 0.0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            conn.recv(1 << 20)  # the request (its headers and body, small here)
            reply, trickle = self.reply, self.trickle
            step = 1 if trickle else len(reply) or 1
            for start in range(0, len(reply), step):
                if trickle and self.stopping.wait(trickle):
                    break
                conn.sendall(reply[start : start + step])
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopping.set()
        self.sock.close()


@pytest.fixture(scope="module")
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    yield server
    server.stop()


def _http(status: bytes, headers: list[bytes], body: bytes, length: str) -> bytes:
    head = [b"HTTP/1.1 " + status]
    if length == "right":
        head.append(b"Content-Length: " + str(len(body)).encode())
    elif length == "wrong":
        head.append(b"Content-Length: " + str(len(body) * 3 + 7).encode())
    return b"\r\n".join([*head, *headers, b"Connection: close", b"", b""]) + body


STATUS = st.one_of(
    st.sampled_from(
        [b"200 OK", b"400 Bad", b"429 Slow", b"500 Err", b"401 No", b"301 Moved", b"204 None", b"999 What"]
    ),
    st.binary(max_size=12),
)
HEADER = st.one_of(
    st.sampled_from(
        [
            b"Content-Type: application/json",
            b"Retry-After: 0",
            b"retry-after-ms: 1",
            b"Content-Encoding: gzip",
            b"Content-Encoding: br",
            b"Transfer-Encoding: chunked",
            b"Retry-After: Wed, 21 Oct 2099 07:28:00 GMT",
            b"Content-Length: -5",
            b"Content-Length: 99999999999",
        ]
    ),
    st.binary(max_size=30),
)
RAW = st.one_of(
    st.builds(_http, STATUS, st.lists(HEADER, max_size=3), BODIES, st.sampled_from(["right", "wrong", "none"])),
    st.binary(max_size=80),
)


@budget(fuzz=400, ci=15)
@given(reply=RAW, trickle=st.sampled_from([0.0, 0.0, 0.0, 0.05]))
def test_any_bytes_from_a_server_end_each_attempt_within_its_bound(
    raw_server: RawServer, reply: bytes, trickle: float
) -> None:
    counted()
    raw_server.reply, raw_server.trickle = reply, trickle
    model = get_model_class("openai").from_args(
        {
            "model": "m",
            "base_url": raw_server.base_url,
            "api_key": "k",
            "timeout": "0.5",
            "max_retries": "1",
            "backoff": "0.01",
            "max_backoff": "0.01",
            "max_response_bytes": "4096",
        }
    )
    started = time.monotonic()
    try:
        with bounded(15, "a server reply"):
            (response,) = model.generate([make_request("s", ["hi"])])
    except BackendFatalError as err:  # 401/403/404: the run stops with this one line, by design
        assert "HTTP 40" in str(err) and err.responses, err
        return
    finally:
        model.close()
    assert isinstance(response, Response) and (response.ok or response.error or response.refused)
    # Two attempts of 0.5 s each and a backoff: well within this, however slowly the bytes come (a byte a second
    # held a request for minutes before), with room for a machine busy with other work.
    assert time.monotonic() - started < 2 * 0.5 + 5


JUDGE_REPLY = st.one_of(
    st.text(alphabet='{}`"json:1 \n', max_size=9000),
    st.text(max_size=200),
    st.sampled_from(["{" * 8192, "{" * 9000, '```json\n{"a": 1}\n```', "}" * 8000 + "{", '{"fluency": 1}' * 500]),
)


@budget(fuzz=400, ci=15)
@given(reply=JUDGE_REPLY)
@example(reply="NONE")  # `make fuzz` drew it: a reply that reads as no value on a command line
def test_any_judge_reply_is_parsed_within_its_bound(reply: str) -> None:
    counted()
    spec = JudgeSpec(
        prompts=lambda doc, response: {"only": "judge this"},
        parse=parse_judge_json,
        score=lambda doc, response, verdicts: {"v": 1.0},
        metrics=("v",),
        model=None,
        settings=GenerationSettings(max_gen_toks=4096),
    )
    judge = get_model_class("constant")(reply)  # not through --model_args, where "none" means no value
    with bounded(10, "a judge reply"):
        (outcome,) = judge_samples(spec, "t", judge, [("s", 0, {}, "answer")], progress=False)
    assert outcome.status in ("judged", "unparsed")
    if len(reply) > spec.max_reply_chars:
        assert outcome.status == "unparsed" and "over the judge's cap" in outcome.error
