"""One output, one answer (issue 96, item 3): the ids a model generated give the same recorded answer on `hf` and on
`vllm` (`harness.models.shared.answer_text`), with a real byte-level tokenizer: ids that end inside a UTF-8 character
decode to U+FFFD on both (vLLM's own incremental text holds those bytes back), the end-of-sequence token vLLM keeps
in its ids is not in the answer, and an answer is cut where the first stop string completes, whether the engine
stopped there (vLLM) or generated past it (`hf`); and its tokens are counted as vLLM counts them on both (issue 104).
The real engines: tests/harness/models/vllm_cpu."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.api import EMPTY, OK
from harness.models.backends.vllm_engine.requests import output_result
from harness.models.shared.answer_text import answer_text, first_stop, generated_tokens
from harness.models.shared.engine_calls import result_response
from tests.support.family_processors import tokenizer

REPLACEMENT = "\N{REPLACEMENT CHARACTER}"


@pytest.fixture(scope="module")
def tok() -> Any:
    return tokenizer(("<|im_start|>", "<|im_end|>"), bos=None)


def vllm_output(text: str, ids: list[int], finish: str, stop_reason: int | str | None = None) -> Any:
    """A vLLM `RequestOutput` of one completion, by the fields `output_result` reads (`text` as vLLM's incremental
    detokenizer made it; vLLM itself, a 30-second import, runs in tests/harness/models/vllm_cpu)."""
    completion = SimpleNamespace(text=text, token_ids=ids, finish_reason=finish, stop_reason=stop_reason)
    return SimpleNamespace(outputs=[completion], prompt_token_ids=[1, 2, 3], num_cached_tokens=None)


def status(text: str) -> str:
    """The status a sample record gets for an answer (`harness.running.sample_records`)."""
    return EMPTY if not text.strip() else OK


def test_ids_that_end_inside_a_character_give_the_same_answer_and_status_on_hf_and_vllm(tok: Any) -> None:
    ids = tok.encode("The answer is café", add_special_tokens=False)
    assert tok.convert_ids_to_tokens(ids[-2:]) == ["Ã", "©"]  # é: two byte tokens
    cut = ids[:-1]  # max_gen_toks reached between é's two bytes
    hf, _ = answer_text(tok, cut, ())
    assert hf == "The answer is caf" + REPLACEMENT
    # vLLM's detokenizer held the lone byte back; the record is decoded from the ids
    vllm = result_response(output_result(vllm_output("The answer is caf", cut, "length"), tok))
    assert vllm.text == hf and vllm.finish_reason == "length"


def test_ids_of_partial_bytes_only_are_an_answer_on_both(tok: Any) -> None:
    """Gemma 3's rows in issue 96: hf recorded 12 x U+FFFD (`ok`), vLLM "" (`empty`), for the same ids."""
    byte = tok.convert_tokens_to_ids("Ã")  # a lead byte without its continuation, twelve times
    hf, _ = answer_text(tok, [byte] * 12, ())
    vllm = result_response(output_result(vllm_output("", [byte] * 12, "length"), tok)).text
    assert hf == vllm == REPLACEMENT * 12
    assert status(hf) == status(vllm) == OK


def test_the_eos_token_vllm_keeps_in_its_ids_is_not_in_the_answer(tok: Any) -> None:
    ids = tok.encode("yes", add_special_tokens=False)
    ended = result_response(output_result(vllm_output("yes", [*ids, tok.eos_token_id], "stop"), tok))
    assert ended.text == answer_text(tok, ids, ())[0] == "yes"
    separator = tok.convert_tokens_to_ids("<|im_end|>")  # a stop token id (`eos_tokens`): its id is the stop reason
    stopped = result_response(output_result(vllm_output("yes", [*ids, separator], "stop", separator), tok))
    assert stopped.text == "yes"


def test_an_answer_is_cut_where_vllm_stopped_at_a_stop_string(tok: Any) -> None:
    whole = tok.encode("The answer is café\nmore", add_special_tokens=False)
    newline = tok.convert_tokens_to_ids("Ċ")
    upto = whole[: whole.index(newline) + 1]  # vLLM keeps the ids up to the one that completes the stop string
    vllm = result_response(output_result(vllm_output("The answer is café", upto, "stop", "\n"), tok)).text
    hf, stop = answer_text(tok, whole, ("\n",))  # hf generated past it
    assert hf == vllm == "The answer is café" and stop == "\n"


def test_the_stop_string_that_completes_first_cuts() -> None:
    """Where an engine stops: "b" completes before "abc" in "xabc", though "abc" starts first; a stop string that
    is not there does not cut."""
    assert first_stop("xabc", ("abc", "b")) == (2, "b")
    assert first_stop("xabc", ("bc", "abc")) == (1, "abc")  # both complete at the same character: the longer
    assert first_stop("xabc", ("z", "")) is None


def test_hf_counts_the_tokens_vllm_generated_where_an_answer_ends_before_max_gen_toks(tok: Any) -> None:
    """vLLM's count is `len(token_ids)`: the end-of-sequence token that stopped it is one of them, and it generates no
    token past the one that completes a stop string. hf's ids leave the first out and run past the second: counted as
    vLLM counts (issue 104's sweep: Qwen2-VL's and Qwen2.5-VL's rows that ended at their end-of-sequence token, 5
    tokens on hf against vLLM's 6, the same answer)."""
    ids = tok.encode("yes", add_special_tokens=False)
    ended = output_result(vllm_output("yes", [*ids, tok.eos_token_id], "stop"), tok)
    assert generated_tokens(tok, ids, (), ended=True) == ended["completion_tokens"] == len(ids) + 1
    whole = tok.encode("The answer is café\nmore", add_special_tokens=False)
    upto = whole[: whole.index(tok.convert_tokens_to_ids("Ċ")) + 1]
    stopped = output_result(vllm_output("The answer is café", upto, "stop", "\n"), tok)
    assert generated_tokens(tok, whole, ("\n",)) == stopped["completion_tokens"] == len(upto) < len(whole)
    cut = output_result(vllm_output("The answer", whole[:3], "length"), tok)
    assert generated_tokens(tok, whole[:3], ("\n",)) == cut["completion_tokens"] == 3  # max_gen_toks: every id
