"""The `openai` screen counts a prompt's text with tiktoken where it loads (issue 63, item 6), else the rows'
text_tokens, its rule saying which. tiktoken (the openai extra) downloads its encodings, which neither this machine nor CI can reach:
the tiktoken test builds a byte-level encoding in memory."""

from __future__ import annotations

import sys

import pytest

from harness.models.backends.openai_chat import openai_encoding, screen_model, text_counter
from tests.support.model_requests import make_request


def test_without_tiktoken_the_rows_count_stays_and_the_rule_says_why(png_blue, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # as where the openai extra is not installed
    request = make_request("s1", ["Look at the picture, then answer.", png_blue, "Which colour?"], text_tokens=9)
    screen = screen_model({"model": "gpt-4o"})
    assert "text by the rows' text_tokens, approximate (tiktoken is not installed" in screen.token_rule
    assert openai_encoding("gpt-4o") == (
        None,
        "tiktoken is not installed (pip install tiktoken counts OpenAI's text exactly)",
    )
    assert screen.prompt_tokens(request) >= 9  # the rows' 9 text tokens and the image's


def test_a_counter_replaces_the_rows_text_tokens_and_keeps_the_images(png_blue) -> None:
    request = make_request("s1", ["Look at the picture, then answer.", png_blue, "Which colour?"], text_tokens=9)
    screen = screen_model({"model": "gpt-4o"})
    images = screen.prompt_tokens(request) - request.text_tokens
    screen.count_text_by(lambda r: 42, "a counter")
    assert screen.prompt_tokens(request) == 42 + images
    assert screen.token_rule.startswith("text by a counter (not the rows' text_tokens); ")


def test_tiktoken_counts_each_text_part_as_sent(png_blue) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    byte_level = tiktoken.Encoding(
        name="bytes", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}
    )
    request = make_request("s1", ["Look.", png_blue, "Which colour?"], system="Be brief.", prefix="It is")
    assert text_counter(byte_level)(request) == len("Look.") + len("Which colour?") + len("Be brief.") + len("It is")
