"""The answer a backend records from the ids its model generated, one rule for every backend that has the ids (`hf`,
`vllm`), so that the same ids give the same answer, and so the same status, whichever engine generated them: the text
the checkpoint's tokenizer decodes from them without special tokens, as the official HF wrappers decode (`decode` /
`batch_decode` with `skip_special_tokens=True`), cut before the first stop string it holds. Bytes that end the ids
without forming a character (an answer cut at `max_gen_toks` inside a UTF-8 character, a tiny model's byte-fallback
tokens) decode to U+FFFD there, as the official wrappers recorded them; vLLM's own incremental text holds them back,
and is not what a backend records (docs/backends.md, "Answers")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Decoder(Protocol):
    """What is read of a tokenizer (transformers' `PreTrainedTokenizerBase`, the one vLLM's `LLM.get_tokenizer` gives)."""

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool) -> object: ...


def first_stop(text: str, until: Sequence[str]) -> tuple[int, str] | None:
    """Where the stop string that completes first in `text` starts, and which it is (of two that complete at the same
    character, the one that starts first); None where `text` holds none. The one that completes first, not the one that
    starts first: an engine that stops generating at a stop string (vLLM) has the ids up to the first that completes,
    and a backend that generates past it (`hf`) must cut where that engine stopped."""
    found = [(start + len(stop), start, stop) for stop in until if stop and (start := text.find(stop)) >= 0]
    if not found:
        return None
    _, start, stop = min(found)
    return start, stop


def answer_text(tokenizer: Decoder, ids: Sequence[int], until: Sequence[str] = ()) -> tuple[str, str | None]:
    """The answer `ids` (generated, without the end-of-sequence token that stopped them) decode to, cut before the
    first stop string of `until` (`first_stop`), and that stop string (None where none cut it)."""
    text = str(tokenizer.decode(list(ids), skip_special_tokens=True))
    stop = first_stop(text, until)
    if stop is None:
        return text, None
    return text[: stop[0]], stop[1]


def generated_tokens(tokenizer: Decoder, ids: Sequence[int], until: Sequence[str] = (), ended: bool = False) -> int:
    """The tokens an engine that stops where the answer ends generates of `ids` (the ids without the end-of-sequence
    token, `ended` where one followed them), as vLLM counts them (`len(token_ids)`, its usage and its server's): up to
    the token that completes the first stop string (`first_stop`), else every id and the end-of-sequence token that
    stopped them. A backend that generates past a stop string, or leaves the end-of-sequence token out of its ids
    (`hf`), counts what that engine would have generated."""
    if first_stop(str(tokenizer.decode(list(ids), skip_special_tokens=True)), until) is None:
        return len(ids) + ended
    low, high = 1, len(ids)  # the fewest ids whose text holds a stop string: a longer text holds it too
    while low < high:
        middle = (low + high) // 2
        if first_stop(str(tokenizer.decode(list(ids[:middle]), skip_special_tokens=True)), until) is None:
            low = middle + 1
        else:
            high = middle
    return low
