"""Fuzz: a checkpoint's own small files (issue 87). A checkpoint folder from elsewhere is untrusted: its
`tokenizer_config.json` (a `response_template` declaring any number of thinking tags), its `chat_template.jinja` (any
text: loops, thinking tags by the thousand, `<` and `think` repeated, Jinja that does not parse) and its
`processor_config.json`, each holding any text, are read by `--screen_only` within a bound: the screen ends in its
table or in one line, never a traceback, never a hang, never past 1 GiB more memory."""

from __future__ import annotations

import json
import resource
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.models.facts import bounded_render
from harness.run.cli import main
from tests.support.deadline import within
from tests.support.tiny_llava import CHAT_TEMPLATE

from .conftest import JSON, LONG_INTEGERS, budget, counted, deep

TASK = "mmneedle_m1_n2_k1_pos"
TEMPLATE = "chat_template.jinja"
TOKENIZER = "tokenizer_config.json"
PROCESSOR = "processor_config.json"


class Hung(BaseException):
    """A screen still running at its deadline (no `Exception`: the harness reads a sample that fails to render as its
    turns, and goes on to the next)."""


def thinking(opens: int, closes: int) -> dict[str, object]:
    """A `response_template` whose thinking field declares `opens` start tags and `closes` end tags."""
    tags = {"open": [f"<t{i}>" for i in range(opens)], "close": [f"</t{i}>" for i in range(closes)]}
    return {"response_template": {"fields": {"thinking": tags}}}


LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
TEXTS = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda raw: raw.decode("latin-1")),
    st.sampled_from(["", "{", "null", "[]", '""', deep(3000), deep(3000, "{"), "\x00", "\udcff"]),
    LONG_INTEGERS,
)
TEMPLATE_PARTS = st.one_of(
    TEXTS,
    st.sampled_from(
        [
            LOOPS,
            "{% if add_generation_prompt %}<think>\n{% endif %}",
            "{{ raise_exception('refused') }}",
            "{{ messages[9]['content'] }}",
            "{% for",
            "{{ ",
            "{% endfor %}",
            "◁think▷",
            "<|channel>thought<channel|>",
            "{{ enable_thinking }}",
        ]
    ),
    st.integers(0, 200_000).map(lambda n: "<" + "think" * n),  # quadratic once: 40 KB took 71 s
    st.integers(0, 100).map(lambda n: "".join(f"<think{i}></think{i}>" for i in range(n))),  # 64 tags the most
)
COUNTS = st.integers(0, 12) | st.sampled_from([8, 9, 64, 65, 3000])
JSON_VALUES = st.one_of(JSON, st.just(json.loads(deep(500))))
TOKENIZER_KEYS = st.sampled_from(
    ["response_template", "chat_template", "model_max_length", "bos_token", "eos_token", "extra_special_tokens"]
    + ["processor_class", "tokenizer_class", "backend", "pad_token", "padding_side", "add_bos_token"]
)
PROCESSOR_KEYS = st.sampled_from(
    ["image_processor", "image_token", "num_additional_image_tokens", "patch_size", "processor_class"]
    + ["vision_feature_select_strategy", "chat_template"]
)
IMAGE_KEYS = st.sampled_from(["crop_size", "size", "image_mean", "image_std", "resample", "do_resize"])
# How each file is damaged: (how, what) with `how` one of merge (a JSON object laid over the file's), whole (the
# file's text), before or after (text around the template's).
EDITS = st.fixed_dictionaries(
    {},
    optional={
        TEMPLATE: st.tuples(st.sampled_from(["before", "after", "whole"]), st.lists(TEMPLATE_PARTS, max_size=3)),
        TOKENIZER: st.one_of(
            st.tuples(st.just("merge"), st.builds(thinking, COUNTS, COUNTS)),
            st.tuples(st.just("merge"), st.dictionaries(TOKENIZER_KEYS, JSON_VALUES | TEXTS, min_size=1, max_size=3)),
            st.tuples(st.just("whole"), TEXTS),
        ),
        PROCESSOR: st.one_of(
            st.tuples(st.just("merge"), st.dictionaries(PROCESSOR_KEYS, JSON_VALUES | TEXTS, min_size=1, max_size=3)),
            st.tuples(
                st.just("merge"),
                st.dictionaries(IMAGE_KEYS, JSON_VALUES, min_size=1, max_size=3).map(lambda d: {"image_processor": d}),
            ),
            st.tuples(st.just("whole"), TEXTS),
        ),
    },
)


def laid_over(original: Any, overlay: Any) -> Any:
    """`overlay` laid over `original`: objects merged key by key, anything else replaced."""
    if not (isinstance(original, dict) and isinstance(overlay, dict)):
        return overlay
    return {**original, **{key: laid_over(original.get(key), value) for key, value in overlay.items()}}


def damage(folder: Path, edits: dict[str, tuple[str, Any]]) -> None:
    for name, (how, what) in edits.items():
        path = folder / name
        if how == "merge":
            text = json.dumps(laid_over(json.loads(path.read_text()), what))
        elif how == "whole":
            text = what if isinstance(what, str) else "".join(what)
        else:
            parts = "".join(what)
            text = parts + CHAT_TEMPLATE if how == "before" else CHAT_TEMPLATE + parts
        path.write_text(text, encoding="utf-8", errors="surrogateescape")


@pytest.fixture(scope="module")
def fast_renders() -> Any:
    """A render's bound at 0.5 s, not 10 (a looping template is stopped sooner; the bound itself is what is tested)."""
    kept, bounded_render.RENDER_SECONDS = bounded_render.RENDER_SECONDS, 0.5
    yield
    bounded_render.RENDER_SECONDS = kept


@budget(fuzz=1500, ci=4)
@given(edits=EDITS)
@example(edits={TOKENIZER: ("merge", thinking(3000, 3000))})  # issue 87: 9,000,000 tag pairs, 1.5 GB, 32.6 s a reply
@example(edits={TEMPLATE: ("after", ["<" + "think" * 40_000])})  # issue 87: 40 KB took 71 s, 200 KB ~30 minutes
@example(edits={TEMPLATE: ("before", [LOOPS, LOOPS])})  # issue 87: range(100000) twice hung the screen
@example(edits={TEMPLATE: ("before", ["".join(f"<think{i}></think{i}>" for i in range(3000))])})  # 3,000 tag pairs
@example(edits={PROCESSOR: ("whole", "{"), TOKENIZER: ("whole", deep(3000))})  # make fuzz: a RecursionError
@example(edits={TEMPLATE: ("before", ["{"])})  # make fuzz: Jinja's TemplateSyntaxError out of the screen
@example(edits={TEMPLATE: ("after", ["{{ raise_exception('refused') }}", "{{ messages[9]['content'] }}"])})
def test_a_checkpoint_s_small_files_holding_anything_end_the_screen_in_its_table_or_one_line(
    tiny_llava: Path, data_dir: Path, fast_renders: None, edits: dict[str, tuple[str, Any]], capsys
) -> None:
    counted()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(shutil.copytree(tiny_llava, Path(scratch) / "ckpt"))
        damage(folder, edits)
        argv = ["--tasks", TASK, "--model", "hf", "--model_args", f"pretrained={folder}", "--data_dir", str(data_dir)]
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as statm:  # the bound: no more than 1 GiB on top of what is held
            held = int(statm.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (held + (1 << 30), hard))
        try:
            with within(60, f"a screen of a checkpoint whose {sorted(edits)} were replaced", Hung):
                code = main([*argv, "--limit", "1", "--screen_only", "--no_progress"])
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err[-3000:]
    if code == 0:
        assert "samples would be sent to the model" in out, out[-2000:]
    else:
        errors = [line for line in err.splitlines() if line.startswith("harness: error")]
        assert code == 2 and len(errors) == 1, (code, err[-3000:])
