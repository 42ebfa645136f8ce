"""A loopback server that speaks the Anthropic Messages API (`POST /v1/messages`) as Anthropic's SDK calls it, for the
`anthropic` backend's tests. Every request is recorded.

Scenarios beyond `provider_server.py`'s: `overloaded_once` (1st attempt: 529, Anthropic's "overloaded"; then ok),
`refusal` (stop_reason "refusal", no text), `empty` (no content blocks, stop_reason end_turn).
"""

from __future__ import annotations

from typing import Any

from tests.support.provider_server import ProviderServer, Received


class AnthropicServer(ProviderServer):
    def texts(self, body: Any) -> list[str]:
        if not isinstance(body, dict):
            return []
        out = []
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(b["text"] for b in content or [] if b.get("type") == "text")
        return out

    def error(self, status: int, message: str) -> Any:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}

    def _generation(self, handler: Any, record: Received, sample: str, do: str, attempt: int) -> None:
        if do == "overloaded_once" and attempt == 1:
            self.send(handler, 529, self.error(529, "Overloaded"))
        else:
            super()._generation(handler, record, sample, do, attempt)

    def answer(self, record: Received, sample: str, do: str) -> tuple[int, Any, dict[str, str]]:
        images = sum(
            1
            for m in record.body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "image"
        )
        content: list[dict[str, Any]] = [{"type": "text", "text": f"answer:{sample}"}]
        stop = "end_turn"
        if do == "refusal":
            content, stop = [], "refusal"
        elif do == "empty":
            content = []
        return (
            200,
            {
                "id": f"msg_{sample}",
                "type": "message",
                "role": "assistant",
                "model": record.body.get("model"),
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": 10 + images, "output_tokens": 3},
            },
            {},
        )
