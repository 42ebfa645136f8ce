"""A checkpoint is known by its config (issue 61, item 1): with no alias, its family is the one whose variant declares
its `config.json`'s `model_type` (or `architectures`), whatever its folder is called; its chat template is its own, and
a template that opens a thinking block makes the run take the thinking out by default, keep the whole output and
record the setting with where it came from. A `model_type` no family (nor transformers) knows is counted by the
checkpoint's own processor where its files are here, else labelled an estimate with why, in one line.

The checkpoints are built here: a tiny GLM-4.1V (`glm4v`) saved under a name that holds no family's fragment, with a
template that opens `<think>` as its generation prompt, and a tiny LLaVA whose config is renamed to a model type
nobody declares."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.models.facts.reasoning import THINK, opens_thinking, template_thinking
from harness.models.families import checkpoint_family, family_of
from tests.support import family_templates as templates
from tests.support import tiny_vlm_configs as configs
from tests.support import tiny_vlm_processors as processors
from tests.support.deadline import within
from tests.support.forward_families import BY_NAME
from tests.support.scripted_checkpoint import scripted_checkpoint
from tests.support.tiny_llava import build_tiny_llava

TASK = "mmneedle_m10_n1_k2_pos"
# GLM-4.1V's published template with its generation prompt opening the thinking, as a thinking fine-tune's would
THINKING_GLM = templates.GLM4_1V.replace(
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}",
    "{% if add_generation_prompt %}<|assistant|>\n<think>{% endif %}",
)


def screen(harness, data_dir: Path, backend: str, args: str):
    return harness(
        *("--tasks", TASK, "--model", backend, "--model_args", args, "--data_dir", data_dir),
        *("--limit", "2", "--screen_only"),
    )


@pytest.fixture(scope="module")
def thinking_glm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GLM-4.1V checkpoint's config and processor (no weights: the screen loads none), in a folder whose name holds
    no family's fragment."""
    folder = tmp_path_factory.mktemp("ckpt") / "my-finetune"
    processor = processors.glm4v(THINKING_GLM)
    processor.save_pretrained(folder)
    config = configs.glm4v(processor.tokenizer)
    config.architectures = ["Glm4vForConditionalGeneration"]  # as a checkpoint saved from its model records it
    config.save_pretrained(folder)
    for name in ("processor_config.json", "tokenizer_config.json"):  # the class a real checkpoint names, not the
        saved = json.loads((folder / name).read_text())  # image-only stand-in's
        (folder / name).write_text(json.dumps({**saved, "processor_class": "Glm4vProcessor"}))
    return folder


def test_the_template_s_thinking_block_is_found() -> None:
    assert THINKING_GLM != templates.GLM4_1V and template_thinking(THINKING_GLM) == (("<think>", "</think>"),)
    assert template_thinking(templates.QWEN3_VL_THINKING) == (("<think>", "</think>"),)
    kimi_thinking = "{% if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|>◁think▷{% endif %}◁/think▷"
    assert template_thinking(kimi_thinking) == (("◁think▷", "◁/think▷"),)
    assert template_thinking(templates.GLM4_5V) == (("<think>", "</think>"),)  # takes enable_thinking
    for plain in (templates.GLM4_1V, templates.QWEN3_VL, templates.QWEN2_VL, None):
        assert template_thinking(plain) is None
    # Gemma 4 thinks in a channel of its own (issue 72, item 4); with thinking off it writes an empty one, closed
    gemma4 = templates.published("gemma4_31b_it")
    assert template_thinking(gemma4) == (("<|channel>", "<channel|>"),)
    assert opens_thinking(gemma4, template_thinking(gemma4)) is None
    # The generation prompt that leaves `<think>` open, so that an output never closing it has no answer
    for opened in (THINKING_GLM, templates.QWEN3_VL_THINKING):
        assert opens_thinking(opened, template_thinking(opened)) == "<think>"
    assert opens_thinking(templates.GLM4_5V, template_thinking(templates.GLM4_5V)) is None  # opens none by default


@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_a_checkpoint_without_an_alias_is_known_by_its_config_and_its_thinking_taken_out(
    backend: str, harness, data_dir: Path, thinking_glm: Path
) -> None:
    """The processor does not load here (GLM-4.1V's needs torchvision unless processor=image_only), so each image is
    counted by the family's rule: GLM-4.1V's, found by the config's model_type, though the name says nothing; and the
    template that opens `<think>` takes the thinking out, said with where that comes from."""
    run = screen(harness, data_dir, backend, f"pretrained={thinking_glm}")
    assert run.code == 0, run.err
    family = family_of("glm4v")
    assert family is not None and family.name == "GLM-4.1V"
    assert f"each image by the GLM-4.1V family's rule: {family.rule}" in run.out
    assert "known by its config.json's model_type glm4v, architectures Glm4vForConditionalGeneration" in run.out
    thinking = [line for line in run.out.splitlines() if line.startswith("Thinking:")]
    assert thinking == [
        "Thinking: <think>...</think> taken out of each answer before scoring (from the chat template, which opens a "
        "thinking block (<think>); the whole output is kept in the journal; --reasoning_tags none scores it whole)."
    ]
    flag = harness(
        *("--tasks", TASK, "--model", backend, "--model_args", f"pretrained={thinking_glm}", "--data_dir", data_dir),
        *("--limit", "2", "--screen_only", "--reasoning_tags", "none"),
    )
    assert flag.code == 0 and "Thinking:" not in flag.out  # the flag's `none` over the template's


def test_the_markers_a_checkpoint_s_response_template_declares_are_taken_out(
    harness, data_dir: Path, thinking_glm: Path, tmp_path: Path
) -> None:
    """A checkpoint that declares its thinking in a `response_template` (transformers' response parsing, in its
    `tokenizer_config.json`) is taken at its word, over what its chat template writes; one declared only as a pattern
    leaves the template's tags."""
    folder = Path(shutil.copytree(thinking_glm, tmp_path / "declared"))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    thinking = {"open": ["<|channel>thought\n", "<reasoning>"], "close": "<channel|>"}
    declared = {"start_anchor": "<|assistant|>\n", "fields": {"thinking": thinking, "content": {}}}
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "response_template": declared}))
    run = screen(harness, data_dir, "hf", f"pretrained={folder}")
    assert run.code == 0, run.err
    assert (
        "Thinking: <|channel>thought\\n...<channel|>, <reasoning>...<channel|> taken out of each answer before scoring "
        "(from the checkpoint's response_template, its thinking field;"
    ) in run.out
    thinking.update(open_pattern=thinking.pop("open"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "response_template": declared}))
    run = screen(harness, data_dir, "hf", f"pretrained={folder}")
    assert "Thinking: <think>...</think> taken out of each answer before scoring (from the chat template" in run.out


def test_a_checkpoint_whose_config_is_absent_is_not_guessed_by_its_name(tmp_path: Path) -> None:
    """A folder named like a family's checkpoint, with no config.json: no family, said so; an alias's checkpoint not
    on this machine is the alias's family, as its family module declares it."""
    named = tmp_path / "Qwen2.5-VL-7B-Instruct"
    named.mkdir()
    found, why = checkpoint_family(str(named))
    assert found is None and "no config.json" in why and "no alias names it" in why
    found, why = checkpoint_family("Qwen/Qwen2.5-VL-7B-Instruct")
    assert found is not None and found.name == "Qwen2-VL" and "the alias that names it" in why


@pytest.fixture(scope="module")
def unknown_type(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny LLaVA whose config.json names a model type neither transformers nor any family here knows."""
    folder = build_tiny_llava(tmp_path_factory.mktemp("unknown"))
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="brandnew_vlm", architectures=["BrandNewForConditionalGeneration"])
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def counted(out: str) -> str:
    """The screen table's `counted` column for the task."""
    (line,) = [line for line in out.splitlines() if line.startswith(f"| {TASK} |")]
    return line.split("|")[10].strip()


def test_an_unknown_model_type_is_counted_by_its_own_processor(harness, data_dir: Path, unknown_type: Path) -> None:
    run = screen(harness, data_dir, "hf", f"pretrained={unknown_type}")
    assert run.code == 0, run.err
    assert counted(run.out) == "exact" and "hf processor LlavaProcessor" in run.out


def test_an_unknown_model_type_without_its_processor_is_a_labelled_estimate(
    harness, data_dir: Path, unknown_type: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "config-only"
    bare.mkdir()
    shutil.copy(unknown_type / "config.json", bare / "config.json")
    run = screen(harness, data_dir, "hf", f"pretrained={bare}")
    assert run.code == 0, run.err
    assert counted(run.out) == "estimate"
    (rule,) = [line for line in run.out.splitlines() if line.startswith("Counted as ")]
    assert "no family rule is known for" in rule
    assert (
        "its config.json's model_type brandnew_vlm, architectures BrandNewForConditionalGeneration is no family's"
        in rule
    )


@pytest.mark.slow  # a tiny GLM-4.1V through the CLI
@pytest.mark.parametrize(
    ("script", "answer", "status"),
    [("Blue? No: red.</think>red", "red", "ok"), ("Blue? No: so red, I", "", "empty")],  # closed; never closed
)
def test_a_thinking_checkpoint_s_run_takes_its_thinking_out_and_records_it(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, script: str, answer: str, status: str
) -> None:
    """The run, not only the screen: the bare checkpoint (no alias, no flag) answers after the `<think>` its template
    opened; the scorer reads the answer, the journal keeps the whole output, the results say where the tags came from.
    An output that never closes the `<think>` its prompt opened is all thinking: no answer (issue 72, item 4)."""
    made = scripted_checkpoint(BY_NAME["glm-4.1v"], script, processors.glm4v(THINKING_GLM))
    checkpoint = shutil.move(made, tmp_path / "user-checkpoint")
    run = harness(
        *("--tasks", "toy_colors", "--model", "hf", "--include_path", toy_tasks, "--data_dir", toy_dir),
        *("--model_args", f"pretrained={checkpoint},processor=image_only,device=cpu,dtype=float32,image_threads=1"),
        *("--output_path", tmp_path / "out", "--log_samples", "--gen_kwargs", "max_gen_toks=32"),
    )
    assert run.code == 0, run.err
    (folder,) = [p.name for p in (tmp_path / "out").iterdir() if p.is_dir()]
    samples = run.samples(folder, "toy_colors")
    assert {s["response"] for s in samples} == {answer} and {s["raw_response"] for s in samples} == {script}
    assert {s["status"] for s in samples} == {status}
    config = run.results(folder)["config"]
    assert config["reasoning_tags"] == [["<think>", "</think>"]]
    assert config["reasoning_tags_from"] == "the chat template, which opens a thinking block (<think>)"


@pytest.mark.slow  # a tiny GLM-4.1V's processor, behind the vllm backend's stand-in engine
def test_a_thinking_checkpoint_s_unclosed_thinking_is_no_answer_on_vllm_too(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM renders with the checkpoint's own template, so its backend names none (`ModelFacts.chat_template`): the
    `<think>` that template's prompt leaves open is the checkpoint's, and an output that never closes it is all
    thinking, no answer, as on hf (the Qwen3.5 sweep: hf `empty`, vLLM `ok` on the same output)."""
    from harness.models.backends.vllm_engine import backend
    from tests.support import fake_vllm

    real = backend.VLLMModel.__init__

    def with_stand_in(self, settings, **kw):  # answers `pid|last word|...`: never a `</think>`
        real(self, settings, **{**kw, "llm_factory": fake_vllm.FAKE_LLM, "sampling_factory": fake_vllm.FAKE_SAMPLING})

    monkeypatch.setattr(backend.VLLMModel, "__init__", with_stand_in)
    checkpoint = processors.glm4v(THINKING_GLM)
    checkpoint.save_pretrained(tmp_path / "user-checkpoint")
    configs.glm4v(checkpoint.tokenizer).save_pretrained(tmp_path / "user-checkpoint")
    run = harness(
        *("--tasks", "toy_colors", "--model", "vllm", "--include_path", toy_tasks, "--data_dir", toy_dir),
        *("--model_args", f"pretrained={tmp_path / 'user-checkpoint'},max_model_len=4096,use_tqdm=false"),
        *("--output_path", tmp_path / "out", "--log_samples", "--gen_kwargs", "max_gen_toks=8"),
    )
    assert run.code == 0, run.err
    (folder,) = [p.name for p in (tmp_path / "out").iterdir() if p.is_dir()]
    samples = run.samples(folder, "toy_colors")
    assert samples and {s["response"] for s in samples} == {""} and {s["status"] for s in samples} == {"empty"}
    assert all(s["raw_response"].count("|") >= 2 for s in samples)  # the stand-in's whole output, kept


def test_a_checkpoint_without_a_template_is_refused_by_the_hf_screen_as_by_its_run(
    harness, data_dir: Path, tmp_path: Path
) -> None:
    """PaliGemma as published has no chat template, which the hf backend places images with: its run is refused in
    one line, and `--screen_only` says the same, not that every sample would be sent (issue 89)."""
    folder = tmp_path / "paligemma-3b-pt-224"
    processor = processors.paligemma()
    processor.chat_template = processor.tokenizer.chat_template = None
    processor.save_pretrained(folder)
    configs.paligemma(processor.tokenizer).save_pretrained(folder)  # no weights: the run reads the processor first
    refusal = f"{folder} has no chat template; the hf backend needs one to place images"
    screened = screen(harness, data_dir, "hf", f"pretrained={folder}")
    ran = harness(
        *("--tasks", TASK, "--model", "hf", "--model_args", f"pretrained={folder},device=cpu"),
        *("--data_dir", data_dir, "--limit", "2", "--output_path", tmp_path / "out"),
    )
    for run in (screened, ran):
        assert run.code != 0 and refusal in run.err and "Traceback" not in run.err, run.err
        assert "would be sent" not in run.out


def test_a_checkpoint_without_a_template_is_counted_with_the_one_vllm_falls_back_to(tmp_path: Path) -> None:
    """vLLM renders a checkpoint that has no chat template with the one it ships for its model type (MiniCPM-V 4.5's,
    by its name): the vllm backend's count renders with the same."""
    from harness.models.backends.vllm_engine.backend import fallback_template
    from tests.support.family_templates import minicpm_v_4_5

    folder = tmp_path / "MiniCPM-V-4_5"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "minicpmv", "architectures": ["MiniCPMV"]}))
    assert fallback_template(str(folder), None) == minicpm_v_4_5()
    (folder / "chat_template.jinja").write_text("{{ messages }}")  # its own: vLLM renders with it, no fallback
    assert fallback_template(str(folder), None) is None


def test_a_checkpoint_s_own_small_files_cost_no_minutes_nor_gigabytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 87: a `response_template` declaring 3,000 thinking opens and 3,000 closes (9,000,000 tag pairs, 1.5 GB)
    is one line naming the file and the bound; the thinking-tag search over `<` and `think` repeated (quadratic: 40
    KB took 71 s) is linear; a template looping `range(100000)` twice (a hang) is rendered within its time bound."""
    from harness.errors import UserError
    from harness.models.facts import bounded_render
    from harness.models.facts.checkpoint import checkpoint_thinking

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    thinking = {"open": [f"<t{i}>" for i in range(3000)], "close": [f"</t{i}>" for i in range(3000)]}
    declared = {"fields": {"thinking": thinking}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"response_template": declared}))
    with pytest.raises(UserError, match=r"tokenizer_config\.json: .*9,000,000 tag pairs, over the 64 "):
        checkpoint_thinking(str(tmp_path))
    with within(5, "the thinking-tag search over 400 KB"):
        assert template_thinking("<" + "think" * 80_000) is None
        assert template_thinking("<think" * 80_000 + "<think>") == (("<think>", "</think>"),)
    monkeypatch.setattr(bounded_render, "RENDER_SECONDS", 1)
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}<think>"
    with within(20, "rendering a template that loops 10^10 times"):
        assert opens_thinking(looping, THINK) is None
    assert opens_thinking("{% if add_generation_prompt %}<think>\n{% endif %}", THINK) == "<think>"


def test_a_chat_template_writing_thousands_of_thinking_tags_is_one_line(
    harness, data_dir: Path, thinking_glm: Path, tmp_path: Path
) -> None:
    """Issue 87: the tags a chat template yields had no bound (each is a pass over every reply, as a declared
    `response_template`'s are); past 64 the screen stops in one line naming the checkpoint's template."""
    folder = Path(shutil.copytree(thinking_glm, tmp_path / "many-tags"))
    (folder / "chat_template.jinja").write_text("".join(f"<think{i}></think{i}>" for i in range(3000)) + THINKING_GLM)
    run = screen(harness, data_dir, "hf", f"pretrained={folder}")
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert (
        f"harness: error: checkpoint {folder}: its chat template: it writes more than 64 thinking tags, the most a "
        "reply's thinking is taken out with"
    ) in run.err.splitlines()


class Hung(BaseException):
    """A screen still running at its deadline (no `Exception`: the harness reads a sample that fails to render as its
    turns, and goes on to the next)."""


def test_a_chat_template_that_loops_stops_each_samples_count_in_one_line(
    harness, data_dir: Path, tiny_llava: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 87: the processor renders a checkpoint's template once per sample as it counts, with no bound: a template
    looping `range(100000)` twice held the screen forever. Each render is now stopped past its time bound, in one line
    naming the checkpoint, the task and the document."""
    from harness.models.facts import bounded_render

    folder = Path(shutil.copytree(tiny_llava, tmp_path / "looping"))
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    (folder / "chat_template.jinja").write_text(looping + (folder / "chat_template.jinja").read_text())
    monkeypatch.setattr(bounded_render, "RENDER_SECONDS", 1)
    with within(30, "a screen whose chat template loops 10^10 times", Hung):
        run = screen(harness, data_dir, "hf", f"pretrained={folder}")
    assert run.code != 0 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error")]
    assert f"{TASK} doc " in line and "was not rendered within 1 s" in line, line
