"""A reply with no text (issue 62's shared `text_or_empty`): an empty answer where the model finished normally (a
reasoning model that spent its whole budget), else `empty_response` naming the finish reason, for each API backend
that reads its replies that way."""

from __future__ import annotations

import pytest

from harness.models.backends.openai_chat.wire import parse_completion


def _openai(finish: str | None) -> dict[str, object]:
    return {"choices": [{"message": {"content": None}, "finish_reason": finish}], "usage": {"completion_tokens": 7}}


@pytest.mark.parametrize("finish", ["stop", "length"])
def test_openai_no_content_after_a_normal_finish_is_an_empty_answer(finish: str) -> None:
    response = parse_completion(_openai(finish))
    assert (response.text, response.error, response.finish_reason) == ("", None, finish)
    assert response.usage == {"completion_tokens": 7}


def test_openai_no_content_otherwise_is_an_empty_response_naming_the_finish() -> None:
    response = parse_completion(_openai("tool_calls"))
    assert response.text is None
    assert response.error == "empty_response: no content (finish_reason=tool_calls)"
    assert (response.finish_reason, response.usage) == ("tool_calls", {"completion_tokens": 7})


def _gemini(finish: str) -> object:
    from google.genai import types

    return types.GenerateContentResponse(
        candidates=[types.Candidate(content=None, finish_reason=finish)],
        usage_metadata=types.GenerateContentResponseUsageMetadata(candidates_token_count=5),
    )


@pytest.mark.parametrize("finish", ["STOP", "MAX_TOKENS"])
def test_gemini_no_text_after_a_normal_finish_is_an_empty_answer(finish: str) -> None:
    pytest.importorskip("google.genai")
    from harness.models.backends.gemini.wire import parse_answer

    response = parse_answer(_gemini(finish))  # type: ignore[arg-type]
    assert (response.text, response.error, response.finish_reason) == ("", None, finish)
    assert response.usage == {"candidates_token_count": 5}


def test_gemini_no_text_otherwise_is_an_empty_response_naming_the_finish() -> None:
    pytest.importorskip("google.genai")
    from harness.models.backends.gemini.wire import parse_answer

    response = parse_answer(_gemini("MALFORMED_FUNCTION_CALL"))  # type: ignore[arg-type]
    assert response.text is None
    assert response.error == "empty_response: no text (finish_reason=MALFORMED_FUNCTION_CALL)"
    assert (response.finish_reason, response.usage) == ("MALFORMED_FUNCTION_CALL", {"candidates_token_count": 5})
