"""A thinking model's alias takes its thinking out before any scorer reads it, without `--reasoning_tags` (issue 51,
item 6): the alias declares its tags (`Alias.reasoning_tags`, and GLM-4.1V-Thinking's answer tags), the flag
overrides them, the setting in force is recorded in the results as the flag's is, and the whole output stays in the
journal and the sample log. End to end through the `hf` backend, on stand-in checkpoints of the families' real
processor classes and published templates that answer a scripted text (`tests.support.scripted_checkpoint`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.models.aliases import ALIASES, alias_info
from harness.models.facts.reasoning import in_force, parse_reasoning_tags, strip_reasoning
from tests.support import family_templates as templates
from tests.support import tiny_vlm_processors as processors
from tests.support.forward_families import BY_NAME
from tests.support.harness_fixtures import toy_colors_run
from tests.support.scripted_checkpoint import scripted_checkpoint

THINK = (("<think>", "</think>"),)
ANSWER = ("<answer>", "</answer>")
LOCAL = "processor=image_only,device=cpu,dtype=float32,image_threads=1"


def run(harness, toy_dir: Path, toy_tasks: Path, out: Path, model: str, checkpoint: Path, *extra: str):
    args = f"pretrained={checkpoint},{LOCAL}"
    return toy_colors_run(harness, toy_dir, toy_tasks, out, model, args, "--gen_kwargs", "max_gen_toks=64", *extra)


def folder(result) -> str:
    """The run's model folder (named after its checkpoint's path)."""
    (found,) = [p.name for p in result.output_path.iterdir() if p.is_dir()]
    return found


def accuracy(result) -> float:
    return result.results(folder(result))["results"]["toy_colors"]["acc,none"]


def responses(result) -> set[str]:
    return {s["response"] for s in result.samples(folder(result), "toy_colors")}


@pytest.fixture(scope="module")
def qwen3_thinking() -> Path:
    """Qwen3-VL-Thinking's stand-in: its template opens the thinking, so the model writes only the end tag."""
    processor = processors.qwen3_vl(templates.QWEN3_VL_THINKING)
    return scripted_checkpoint(BY_NAME["qwen3-vl"], "Blue? Green? It is red.</think>\n\nred", processor)


@pytest.mark.slow  # three runs of a tiny Qwen3-VL through the CLI
def test_a_thinking_alias_s_thinking_never_reaches_a_scorer(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, qwen3_thinking: Path
) -> None:
    """The toy scorer takes the whole answer: only "red" is right (on a sixth of the rows). Run as the alias, the
    thinking is taken out with no flag; run as the bare checkpoint, too, its template opening the thinking (issue 61,
    item 1); with `--reasoning_tags none`, it reaches the scorer and nothing is right."""
    alias = run(harness, toy_dir, toy_tasks, tmp_path / "alias", "qwen3-vl-thinking", qwen3_thinking)
    bare = run(harness, toy_dir, toy_tasks, tmp_path / "bare", "hf", qwen3_thinking)
    off = run(
        harness, toy_dir, toy_tasks, tmp_path / "off", "qwen3-vl-thinking", qwen3_thinking, "--reasoning_tags", "none"
    )
    for result in (alias, bare, off):
        assert result.code == 0, result.err
    assert accuracy(alias) == accuracy(bare) == pytest.approx(1 / 6) and accuracy(off) == 0.0
    samples = alias.samples(folder(alias), "toy_colors")
    assert {s["response"] for s in samples} == {"red"}  # what the scorer read
    assert {s["raw_response"] for s in samples} == {"Blue? Green? It is red.</think>\n\nred"}  # kept whole
    config = alias.results(folder(alias))["config"]
    assert config["reasoning_tags"] == [["<think>", "</think>"]] and config["reasoning_tags_from"] == "the alias"
    assert bare.results(folder(bare))["config"]["reasoning_tags_from"].startswith("the chat template")
    assert "reasoning_tags" not in off.results(folder(off))["config"]
    assert responses(off) == {"Blue? Green? It is red.</think>\n\nred"} and responses(bare) == {"red"}


@pytest.mark.slow  # two runs of a tiny GLM-4.1V through the CLI
def test_glm_4_1v_thinking_is_scored_on_what_its_answer_tags_hold(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness
) -> None:
    """GLM-4.1V-Thinking answers `<think>...</think><answer>...</answer>`: the alias scores what the answer tags hold,
    as VLMEvalKit's GLMThinking.extract_answer reads it; the thinking tags alone would leave the tags in the answer."""
    script = "<think>Is it blue? No: red.</think><answer>red</answer>"
    checkpoint = scripted_checkpoint(BY_NAME["glm-4.1v"], script)
    alias = run(harness, toy_dir, toy_tasks, tmp_path / "alias", "glm-4.1v-thinking", checkpoint)
    tags_only = run(harness, toy_dir, toy_tasks, tmp_path / "tags", "hf", checkpoint, "--reasoning_tags", "default")
    assert alias.code == 0 and tags_only.code == 0, alias.err + tags_only.err
    assert accuracy(alias) == pytest.approx(1 / 6) and accuracy(tags_only) == 0.0
    assert responses(alias) == {"red"} and responses(tags_only) == {"<answer>red</answer>"}
    config = alias.results(folder(alias))["config"]
    assert config["reasoning_tags"] == [["<think>", "</think>"]] and config["answer_tags"] == list(ANSWER)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<think>B or C? B.</think><answer>B</answer>", "B"),
        ("<think>a</think>\n<answer> B </answer>\nThe answer is B.", "B"),  # the first pair, stripped
        ("<think>a</think>B", "B"),  # no answer tags: the text as it is (VLMEvalKit's)
        ("<think>a</think><answer>B, cut at max_gen_toks", "B, cut at max_gen_toks"),  # unclosed: after the tag
        ("<think>B? <answer>B</answer> no, C</think><answer>C</answer>", "C"),  # tags inside the thinking go with it
    ],
)
def test_the_answer_tags_keep_what_the_first_pair_holds(text: str, answer: str) -> None:
    assert strip_reasoning(text, THINK, ANSWER) == answer


def test_the_flag_overrides_the_alias_s_declaration() -> None:
    glm = ALIASES["glm-4.1v-thinking"]
    assert in_force(None, glm.reasoning_tags, glm.answer_tags) == (THINK, ANSWER)  # no flag: the alias's own
    assert in_force(parse_reasoning_tags("none"), glm.reasoning_tags, glm.answer_tags) == (None, None)
    given = parse_reasoning_tags('[["<reasoning>", "</reasoning>"]]')
    assert in_force(given, glm.reasoning_tags, glm.answer_tags) == (given, ANSWER)
    assert in_force(None, None, None) == (None, None)  # a model that does not think: nothing taken out


def test_every_thinking_alias_declares_its_tags_and_records_them() -> None:
    thinking = {name: alias for name, alias in ALIASES.items() if alias.reasoning_tags}
    assert {n for n in thinking} >= {
        "qwen3-vl-thinking",
        "glm-4.1v-thinking",
        "glm-4.5v",
        "kimi-vl-a3b-thinking",
        "kimi-vl-a3b-thinking-2506",
        "minicpm-v-4.5-thinking",
        "internvl3.5-8b-thinking",
    }
    assert ALIASES["kimi-vl-a3b-thinking"].reasoning_tags == (("◁think▷", "◁/think▷"),)
    for name, alias in thinking.items():  # no answer prefix: it would start the answer where the model thinks
        assert alias.args["prompt_style"] in ("thinking", "minicpm_v_thinking", "internvl3_5_thinking"), name
        assert alias_info(name)["reasoning_tags"] == [list(pair) for pair in alias.reasoning_tags]
        assert alias_info(name)["prompt"]["prefill"] is False
    assert alias_info("minicpm-v-4.5-thinking")["prompt"]["template_kwargs"] == {"enable_thinking": True}
    assert "reasoning_tags" not in alias_info("qwen3-vl")
