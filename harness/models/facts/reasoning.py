"""A reasoning model's thinking, taken out of its answer before any scorer reads it.

Thinking models (Qwen3-VL-Thinking, GLM-4.1V-Thinking, Kimi-VL-Thinking, ...) write their reasoning first, between
tags (`<think>...</think>`; Kimi-VL's `◁think▷...◁/think▷`), and the papers' parsers would read a letter or an
"Answer:" in it as the answer. A run with reasoning tags (`--reasoning_tags`, or a model's own) scores what is left
when the thinking is taken out, and keeps the whole output beside it (the journal's `raw_response`, the sample log's
`resps`, which the viewer shows). A thinking model's alias declares its own (`Alias.reasoning_tags`, as
`harness.models.families` declares them); `--reasoning_tags` overrides it, `none` scoring the whole output.

Some models also wrap their answer (GLM-4.1V-Thinking: `<think>...</think><answer>...</answer>`): an alias's
`answer_tags` keep only what the first such pair holds, as VLMEvalKit's `GLMThinking.extract_answer` does
(`vlmeval/vlm/cogvlm.py`: the thinking removed, then the first `<answer>(.*?)</answer>`, stripped; no pair, the text
as it is). One departure, named: an answer tag opened and never closed (generation stopped at `max_gen_toks`) keeps
the text after it, where VLMEvalKit would score the tag with it.

The rule is lmms-eval's `strip_reasoning_tags` (`lmms_eval/api/reasoning.py`): every block of each (start, end)
pair is removed, and the rest is stripped of surrounding whitespace; whatever follows a block is the answer, a tag it
names included (`<think>r</think>The model writes <think> first` is scored as "The model writes <think> first", as
lmms-eval scores it). Two additions, named: an end tag that comes before any start tag (a template that prefilled the
start) ends the thinking, which began with the output; and a start tag that opens the output and is never closed
(generation stopped at `max_gen_toks` inside the thinking) is thinking to the end and is removed with it, so the
answer is empty (scored as the official scorers score an empty answer), where lmms-eval hands the whole reasoning to
the scorer.

A checkpoint run without an alias or `--reasoning_tags` is known to think by the chat template it is rendered with
(`template_thinking`): a template that writes a thinking tag pair (`<think>`...`</think>`, Kimi-VL's
`◁think▷`...`◁/think▷`, Gemma 4's thought channel `<|channel>thought`...`<channel|>`) or takes `enable_thinking` opens
a thinking block, so the run takes it out by default, with the template's own markers, and records the setting and
where it came from (`in_force`); markers the checkpoint declares in a `response_template` (transformers' response
parsing: `declared_thinking`) are taken over those the template writes. Where the template's generation prompt leaves a block open (`opens_thinking`: Qwen3's
thinking templates end it in `<think>`), an output that never closes it is thinking to its end (cut off at
`max_gen_toks`): no answer, where it would otherwise be scored whole.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from typing import Any

from harness.models.facts import bounded_render

# (start, end) pairs
ReasoningTags = tuple[tuple[str, str], ...]
# (start, end) of the answer a model wraps its answer in, after its thinking
AnswerTags = tuple[str, str]

# lmms-eval's `--reasoning_tags` default (`lmms_eval/__main__.py`)
LMMS_EVAL_DEFAULT: ReasoningTags = (("<think>", "</think>"), ("<analysis>", "</analysis>"))
NONE = "none"


def parse_reasoning_tags(value: object) -> ReasoningTags | None:
    """`--reasoning_tags`: a JSON list of [start, end] pairs (`[["<think>", "</think>"]]`), `default` for lmms-eval's
    pairs, or `none`; a list of pairs in Python. None: not given (an alias's own, if any); `()`: `none`, nothing
    taken out whatever the alias declares. A ValueError in one line for anything else."""
    if value is None:
        return None
    if value is False or value == NONE or value == ():
        return ()
    if value == "default":
        return LMMS_EVAL_DEFAULT
    pairs: object = value
    if isinstance(value, str):
        try:
            pairs = json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(f'--reasoning_tags: not JSON ({err}); expected [["<think>", "</think>"]]') from None
    if not isinstance(pairs, list | tuple) or not pairs:
        raise ValueError("--reasoning_tags: expected a non-empty list of [start, end] pairs, `default` or `none`")
    parsed = []
    for pair in pairs:
        if not (
            isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(t, str) and t.strip() for t in pair)
        ):
            raise ValueError(f"--reasoning_tags: {json.dumps(pair)[:60]} is not a [start, end] pair of tags")
        parsed.append((pair[0], pair[1]))
    return tuple(parsed)


def strip_reasoning(text: str, tags: ReasoningTags, answer: AnswerTags | None = None, opened: str | None = None) -> str:
    """`text` without its reasoning blocks, then, with `answer` tags, what the first answer pair holds (see the
    module docstring). `opened`: the start tag of the thinking block the prompt ends in (`opens_thinking`), so that
    an output that never closes it is thinking to its end (cut off at `max_gen_toks`): no answer."""
    result = text
    for start_tag, end_tag in tags:
        first_start, first_end = result.find(start_tag), result.find(end_tag)
        if first_end != -1 and (first_start == -1 or first_end < first_start):  # the template opened the thinking
            result = result[first_end + len(end_tag) :]
        elif first_end == -1 and start_tag == opened:
            result = ""  # the prompt opened it and the output never closed it: all thinking, no answer
        elif first_start != -1 and first_end == -1 and not result[:first_start].strip():
            result = ""  # opened and never closed: the thinking ran to the end (the second addition)
        while start_tag in result:
            start = result.find(start_tag)
            end = result.find(end_tag, start)
            if end == -1:
                break
            result = result[:start] + result[end + len(end_tag) :]
    if answer is not None and answer[0] in result:
        opened = result[result.find(answer[0]) + len(answer[0]) :]
        result = opened.split(answer[1], 1)[0]  # unclosed: the text after the tag (the departure from VLMEvalKit)
    return result.strip()


# A thinking tag as chat templates write one, opening or closing: `<think>`, `<thinking>`, Kimi-VL's `◁think▷`; its
# end tag is the same with a `/` after the opening bracket.
# Found as any word between the brackets, then kept where it holds "think": linear in the template's length, where a
# pattern around "think" backtracks quadratically over a long word.
_THINKING_TAG = re.compile(r"(<|◁)/?(\w+)(>|▷)")
# A channel a template opens for thinking, named by the word after it: Gemma 4's `<|channel>thought\n...<channel|>`
# (its end tag is the name with the bar after it, and must be written in the template too).
_THINKING_CHANNEL = re.compile(r"<\|(\w+)>(?=(?:\\n|\s)*(?:thought|think|reasoning|analysis))")
_CHANNEL_END = re.compile(r"<(\w+)\|>")
THINK: ReasoningTags = (("<think>", "</think>"),)


def template_thinking(template: str | None) -> ReasoningTags | None:
    """The tags a chat template's thinking is written in, where the template opens a thinking block (its generation
    prompt writes the start tag, the model the end), writes or reads one (a past turn's thinking, dropped at its end
    tag), or takes `enable_thinking` (then `<think>`, `</think>`, the tags such templates write); None for a
    template that does none of these, or none at all. A `ValueError` past `THINKING_PAIRS_MOST` tags."""
    if not template:
        return None
    found = (
        (f"{tag[1]}{tag[2]}{tag[3]}", f"{tag[1]}/{tag[2]}{tag[3]}")
        for tag in _THINKING_TAG.finditer(template)
        if "think" in tag[2]
    )
    closed = set(_CHANNEL_END.findall(template))
    channels = (
        (f"<|{channel[1]}>", f"<{channel[1]}|>")
        for channel in _THINKING_CHANNEL.finditer(template)
        if channel[1] in closed
    )
    pairs: dict[tuple[str, str], None] = {}  # in the order found, each once
    for pair in itertools.chain(found, channels):
        pairs.setdefault(pair)
        if len(pairs) > THINKING_PAIRS_MOST:
            raise ValueError(
                f"it writes more than {THINKING_PAIRS_MOST} thinking tags, the most a reply's thinking is taken out with"
            )
    if pairs:
        return tuple(pairs)
    return THINK if "enable_thinking" in template else None


log = logging.getLogger(__name__)


def generation_prompt(template: str | None) -> str | None:
    """What the template writes after a user turn for the model to answer (`add_generation_prompt`), as transformers
    renders it with the template's own defaults; None where it cannot be rendered here. A checkpoint's template is
    untrusted: it is rendered within the bounds of time, memory and output of every render of it
    (`harness.models.facts.bounded_render`; a loop of `range(100000)` in another hung the run); past a bound, one
    warning line names it and the answer is None."""
    if not template:
        return None
    from transformers.utils.chat_template_utils import render_jinja_template

    chat = [{"role": "user", "content": "Q"}]

    def rendered(prompt: bool) -> str:
        # (the renders, their generation indices), whatever its annotation says
        text: Any = render_jinja_template([chat], chat_template=template, add_generation_prompt=prompt)
        return str(text[0][0])

    bounded = bounded_render.BoundedRender("the chat template")
    try:
        asked = bounded(lambda: rendered(True), chat, "the generation prompt")
        said = bounded(lambda: rendered(False), chat, "the generation prompt")
    except bounded_render.RenderBound as err:
        log.warning(
            "%s; whether it leaves a thinking block open is not known, so an output that never closes one is scored "
            "whole",
            err,
        )
        return None
    except Exception:  # a template that cannot render a bare user turn: nothing known of its thinking
        return None
    return asked[len(said) :] if asked.startswith(said) else None


def opens_thinking(template: str | None, tags: ReasoningTags | None) -> str | None:
    """The start tag of the thinking block the template's generation prompt opens and leaves open (Qwen3's
    `<think>\\n`, so that the model's output begins inside it); None where it opens none, or closes what it opens
    (Gemma 4's empty thought channel with thinking off)."""
    prompt = generation_prompt(template) if tags else None
    if not prompt:
        return None
    return next((start for start, end in tags or () if prompt.rfind(start) > max(prompt.rfind(end), -1)), None)


def describe(tags: ReasoningTags | None) -> list[list[str]] | None:
    """The tags as the results and the journal record them."""
    return [list(pair) for pair in tags] if tags else None


THINKING_PAIRS_MOST = 64  # a model writes its thinking in a pair or two; each pair is a pass over every reply


def declared_thinking(response_template: object) -> ReasoningTags | None:
    """The thinking markers a checkpoint declares in its `response_template` (transformers' response parsing, saved in
    its `tokenizer_config.json`): its `thinking` field's `open` and `close` literals, each opening with each closing;
    None where it declares none, or only as patterns (a regex is no tag to take out); a `ValueError` past
    `THINKING_PAIRS_MOST` pairs."""
    fields = response_template.get("fields") if isinstance(response_template, dict) else None
    field = fields.get("thinking") if isinstance(fields, dict) else None
    if not isinstance(field, dict):
        return None
    opens, closes = (
        [v] if isinstance(v, str) else v if isinstance(v, list) else [] for v in (field.get("open"), field.get("close"))
    )
    opens, closes = (list(dict.fromkeys(t for t in v if isinstance(t, str) and t)) for v in (opens, closes))
    if len(opens) * len(closes) > THINKING_PAIRS_MOST:
        raise ValueError(
            f"response_template's thinking field declares {len(opens):,} opens and {len(closes):,} closes, "
            f"{len(opens) * len(closes):,} tag pairs, over the {THINKING_PAIRS_MOST} a reply's thinking is taken "
            "out with"
        )
    return tuple((o, c) for o in opens for c in closes) or None


def in_force(
    given: ReasoningTags | None,
    declared: ReasoningTags | None,
    answer: AnswerTags | None,
    template: str | None = None,
    checkpoint: ReasoningTags | None = None,
) -> tuple[ReasoningTags | None, AnswerTags | None]:
    """The setting a run takes a model's thinking out with: `--reasoning_tags` where given (`none`: nothing taken
    out, the alias's answer tags with it), else the alias's own, else the markers the checkpoint declares
    (`declared_thinking`), else the tags of the thinking block its chat `template` opens (`template_thinking`); the
    alias's answer tags wherever thinking is."""
    tags = (
        given if given is not None else declared if declared is not None else checkpoint or template_thinking(template)
    )
    return (tags, answer) if tags else (None, None)


def source(
    given: ReasoningTags | None,
    declared: ReasoningTags | None,
    template: str | None = None,
    checkpoint: ReasoningTags | None = None,
) -> str:
    """Where the setting `in_force` gives comes from, in words, as the results record it beside the tags; "" where
    no thinking is taken out."""
    if given is not None:
        return "--reasoning_tags" if given else ""
    if declared:
        return "the alias"
    if checkpoint:
        return "the checkpoint's response_template, its thinking field"
    found = template_thinking(template)
    if not found:
        return ""
    return f"the chat template, which opens a thinking block ({', '.join(start for start, _ in found)})"
