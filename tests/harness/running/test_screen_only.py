"""`--screen_only` tells the truth for every model: an `hf` checkpoint available offline (a local folder or the local
Hub cache) is counted by its own processor, without its weights, exactly as the run counts it, so the screen and the
run decide every sample alike; anything else (a checkpoint not available offline, an API model) is counted by its
family's rule and every such count is labelled an estimate."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.api import ImagePart
from harness.run.arguments import parse_options
from harness.run.models import run_policies
from harness.run.plan import plan_run
from harness.running.screen_only import SENT, Verdict, screen_model, screen_task
from tests.support.hub_cache import use_offline_hub_cache
from tests.support.run_setups import checkpoint_folder, run_args

RUN_STATUSES = {"ok": SENT, "empty": SENT}  # what the run records for a sample it sent
SCREEN_THREE = ("--limit", "3", "--gen_kwargs", "max_gen_toks=8", "--screen_only")  # three rows, eight tokens answered


@pytest.fixture(scope="module")
def needle_dir(fixture_builds) -> Path:
    """MileBench's needle fixture: three rows, the last with 32 images (the README's screening example)."""
    return fixture_builds(milebench=["image_needle"])


def verdicts(*argv: object) -> dict[tuple[str, str], Verdict]:
    """(task, sample id) -> the screen's verdict, for a `harness ... --screen_only` command line."""
    args = [str(a) for a in argv]
    plan = plan_run(parse_options(args), args)
    model = screen_model(plan.model.backend, plan.model.args)
    policies = run_policies(plan)
    chosen = policies if policies.by_task else None
    found = {}
    for task in plan.tasks:
        with task.rows():  # the plan checked every task's rows, then let go of them
            for v in screen_task(
                model, task, plan.options.gen_kwargs, plan.options.sampling_seed, plan.options.shard, chosen
            ):
                found[(task.name, v.sample_id)] = v
    return found


def table_row(out: str, task: str) -> list[str]:
    (line,) = [line for line in out.splitlines() if line.startswith(f"| {task} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.slow  # screens, then runs a tiny LLaVA
def test_the_screen_and_the_run_agree_on_every_sample(
    tmp_path: Path, data_dir: Path, needle_dir: Path, tiny_llava_336: Path, harness
) -> None:
    """576 tokens per image against 2,048: ten-image rows are over length (the issue's case: the old screen said
    "3 of 3 would be sent, longest 1,241"), one-image rows are sent, MileBench's 2-32-image rows are cut from the
    left; the screen and the real run agree on every verdict, count and cut."""
    model = (
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tiny_llava_336},threads=1,context_length=2048",
        "--gen_kwargs",
        "max_gen_toks=4",
    )
    cases = [
        (data_dir, "mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_pos", ("--limit", "3")),
        (needle_dir, "milebench_image_needle", ()),
    ]
    name = checkpoint_folder(tiny_llava_336)
    seen = set()
    for data, tasks, limit in cases:
        argv = ("--tasks", tasks, *model, "--data_dir", data, *limit)
        screened = verdicts(*argv)
        run = harness(*argv, "--output_path", tmp_path / tasks)
        assert run.code in (0, 1), run.err  # 1: a task with every sample over length scores none
        for task in tasks.split(","):
            for sample in run.samples(name, task):
                verdict = screened.pop((task, sample["sample_id"]))
                assert verdict.status == RUN_STATUSES.get(sample["status"], sample["status"]), (verdict, sample)
                assert verdict.prompt_tokens == sample["token_count"] and verdict.exact
                assert verdict.truncation == sample.get("truncation")
                if verdict.status == SENT:  # the processor's real input_ids, as the model got them
                    assert sample["usage"]["prompt_tokens"] == verdict.prompt_tokens
                seen.add((task, verdict.status, verdict.truncation is not None))
        assert not screened  # nothing screened that the run did not record
    assert seen >= {
        ("mmneedle_m10_n1_k2_pos", "over_length", False),
        ("mmneedle_m1_n2_k1_pos", SENT, False),
        ("milebench_image_needle", SENT, True),
    }

    table = harness(
        "--tasks", "mmneedle_m10_n1_k2_pos", *model, "--data_dir", data_dir, "--limit", "3", "--screen_only"
    )
    assert table.code == 0, table.err
    cells = table_row(table.out, "mmneedle_m10_n1_k2_pos")
    assert cells[1:5] == ["3", "0", "3", "0"] and int(cells[6].replace(",", "")) > 10 * 576 and cells[9] == "exact"
    assert "0 of 3 samples would be sent" in table.out and "Counted as hf processor LlavaProcessor" in table.out
    assert "estimate" not in table.out
    (rule,) = [line for line in table.out.splitlines() if line.startswith("Counted as ")]
    assert rule.endswith("(checked again on the real input_ids before generate).")  # issue 89: it ended "on ."


@pytest.mark.slow  # tiny LLaVA processors
def test_counting_needs_no_weights_from_a_folder_or_the_hub_cache(
    tmp_path: Path, tiny_llava_336: Path, needle_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    weightless = tmp_path / "weightless"
    shutil.copytree(tiny_llava_336, weightless, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    snapshot = tmp_path / "hub" / "models--tiny-org--llava-336" / "snapshots" / ("0" * 40)
    shutil.copytree(weightless, snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    use_offline_hub_cache(monkeypatch, tmp_path / "hub")

    def screen(checkpoint: object) -> str:
        settings = f"pretrained={checkpoint},context_length=2048"
        tasks = "mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_pos"
        run = needle_run(tasks, "hf", None, "--limit", "3", "--screen_only", model_args=settings)
        assert run.code == 0, run.err
        return run.out.split("\n", 1)[1]  # the table, after the line naming the checkpoint

    whole = screen(tiny_llava_336)
    assert "| mmneedle_m1_n2_k1_pos | 3 | 3 | 0 |" in whole and "| exact |" in whole
    assert screen(weightless) == whole and screen("tiny-org/llava-336") == whole


@pytest.mark.slow  # screens twice, the second time with a 336 px tiny LLaVA built for it
def test_a_checkpoint_not_available_offline_is_estimated_by_its_family(
    needle_dir: Path, tiny_llava_336: Path, harness, empty_hub_cache: Path
) -> None:
    """The README's example: MileBench's 32-image needle row for llava-1.5-7b at 4,096 tokens. Not in the local
    cache, it is counted by the LLaVA-1.5 rule (576 per image), labelled an estimate naming why; the row is cut to
    fit, as the exact count of a local 576-token checkpoint cuts it (the old screen cut nothing)."""
    needle_rows = ("--tasks", "milebench_image_needle", "--data_dir", needle_dir)
    args = (*needle_rows, "--gen_kwargs", "max_gen_toks=4", "--screen_only")
    estimated = harness(
        *args, "--model", "hf", "--model_args", "pretrained=llava-hf/llava-1.5-7b-hf,context_length=4096"
    )
    assert estimated.code == 0, estimated.err
    assert (
        "because llava-hf/llava-1.5-7b-hf's config and processor are not on this machine (no such folder, nor in the "
        'local Hub cache): `hf download llava-hf/llava-1.5-7b-hf --exclude "*.safetensors" --exclude "*.bin"` fetches '
        "them; the run counts with the model itself"
    ) in estimated.out
    assert "each image by the LLaVA-1.5 family's rule: 576 tokens per image" in estimated.out
    cells = table_row(estimated.out, "milebench_image_needle")
    assert cells[9] == "estimate" and cells[8] == "1" and int(cells[6].replace(",", "")) <= 4096
    exact = harness(*args, "--model", "hf", "--model_args", f"pretrained={tiny_llava_336},context_length=4096")
    assert table_row(exact.out, "milebench_image_needle")[8:10] == ["1", "exact"]

    by_family = verdicts(
        *args[:-1], "--model", "hf", "--model_args", "pretrained=llava-hf/llava-1.5-7b-hf,context_length=4096"
    )
    cut = by_family[("milebench_image_needle", "ImageNeedleInAHaystack/2")]
    assert cut.truncation is not None and cut.truncation["images_kept"] + cut.truncation["images_dropped"] == 32
    assert cut.truncation["prompt_tokens_before"] > 32 * 576 and not cut.exact


def test_an_api_model_is_estimated_by_its_family_and_an_unknown_one_says_so(
    rows, needle_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a screen sends nothing: no key needed

    def screen(model: str, model_args: str):
        return needle_run("mmneedle_m10_n1_k2_pos", model, None, *SCREEN_THREE, model_args=model_args)

    run = screen("gpt-4o-2024-05-13", "context_length=2600")
    assert run.code == 0, run.err
    # MMNeedle's GPT-4o: the May-2024 snapshot the paper ran, its own alias, with the paper's detail high.
    assert "gpt-4o-2024-05-13 is an API model" in run.out and "GPT-4o family's rule" in run.out
    # `--model gpt-4o` is the same model whatever the tasks: the November snapshot, here too.
    other = screen("gpt-4o", "context_length=2600")
    assert other.code == 0 and "gpt-4o-2024-11-20 is an API model" in other.out, other.err
    docs = rows("m10_n1_k2").filter(lambda r: r["is_positive"]).select(range(3))
    # 256-px images at detail high: one 512-px tile each, 85 + 170 tokens.
    needed = [d["text_tokens"] + 10 * 255 + 8 for d in docs]
    cells = table_row(run.out, "mmneedle_m10_n1_k2_pos")
    assert int(cells[6].replace(",", "")) == max(needed) and cells[9] == "estimate"
    assert cells[3] == str(sum(n > 2600 for n in needed))
    prompts = [n - 8 for n in needed]  # each task's token range: its prompts, max_gen_toks left out
    assert cells[10] == f"{min(prompts):,}-{max(prompts):,}" and min(prompts) < max(prompts)

    unknown = screen("openai", "model=mystery-vlm")
    assert unknown.code == 0, unknown.err
    assert "no family rule is known for mystery-vlm" in unknown.out and "mystery-vlm is an API model" in unknown.out
    rows_rule = [d["text_tokens"] + sum(d["image_tokens"]) + 8 for d in docs]
    assert table_row(unknown.out, "mmneedle_m10_n1_k2_pos")[6] == f"{max(rows_rule):,}"


@pytest.mark.slow  # tiny LLaVA processors
def test_vllm_counts_as_the_hf_processor_and_the_screen_says_exact(
    data_dir: Path, needle_dir: Path, tiny_llava_336: Path, needle_run
) -> None:
    """The vllm backend counts each prompt with the checkpoint's processor, as vLLM does: its count is the processor's
    real input_ids (the chat template rendered by the processor itself, 576 tokens per image), and `--screen_only
    --model vllm` says exact and decides every sample as the hf screen does, MileBench's re-decoded, cut rows too."""
    from transformers import AutoProcessor

    from harness.config.task_index import TaskIndex
    from harness.models.backends.vllm_engine.backend import VLLMModel
    from harness.models.backends.vllm_engine.settings import VLLMSettings
    from harness.running.task.task import Task

    model = VLLMModel(VLLMSettings(pretrained=str(tiny_llava_336), engine={"max_model_len": 2048}), count_online=False)
    processor = AutoProcessor.from_pretrained(tiny_llava_336)
    task = Task(TaskIndex().tasks["mmneedle_m10_n1_k2_pos"])
    task.load(data_dir, 3)
    for doc_id, doc in task.iter_docs():
        request = task.build_request(doc_id, doc, task.generation_settings({}))
        (message,) = request.messages
        chat = [
            {
                "role": "user",
                "content": [
                    {"type": "image"} if isinstance(p, ImagePart) else {"type": "text", "text": p.text}
                    for p in message.content
                ],
            }
        ]
        text = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        inputs = processor(text=[text], images=[i.pil() for i in request.images])
        assert model.prompt_tokens(request) == len(inputs["input_ids"][0]) > 10 * 576 and model.exact(request)
    assert model.token_rule.startswith("hf processor LlavaProcessor") and "as vLLM counts it" in model.token_rule

    for data, tasks in (
        (data_dir, "mmneedle_m10_n1_k2_pos,mmneedle_m1_n2_k1_pos"),
        (needle_dir, "milebench_image_needle"),
    ):
        args = ("--tasks", tasks, "--data_dir", data, "--limit", "3", "--gen_kwargs", "max_gen_toks=4")
        by_hf = verdicts(*args, "--model", "hf", "--model_args", f"pretrained={tiny_llava_336},context_length=2048")
        by_vllm = verdicts(*args, "--model", "vllm", "--model_args", f"pretrained={tiny_llava_336},max_model_len=2048")
        assert by_vllm.keys() == by_hf.keys()
        for key, verdict in by_vllm.items():
            hf = by_hf[key]
            assert (verdict.status, verdict.prompt_tokens, verdict.truncation) == (
                hf.status,
                hf.prompt_tokens,
                hf.truncation,
            ), key
            assert verdict.exact and hf.exact
    engine = f"pretrained={tiny_llava_336},max_model_len=2048"
    table = needle_run("mmneedle_m10_n1_k2_pos", "vllm", None, "--limit", "3", "--screen_only", model_args=engine)
    assert table.code == 0, table.err
    assert table_row(table.out, "mmneedle_m10_n1_k2_pos")[9] == "exact" and "estimate" not in table.out


def test_vllm_with_a_checkpoint_not_available_offline_is_estimated_by_its_family(
    rows, needle_run, empty_hub_cache: Path
) -> None:
    engine = "pretrained=llava-hf/llava-1.5-7b-hf,max_model_len=8192"
    run = needle_run("mmneedle_m10_n1_k2_pos", "vllm", None, *SCREEN_THREE, model_args=engine)
    assert run.code == 0, run.err
    docs = rows("m10_n1_k2").filter(lambda r: r["is_positive"]).select(range(3))
    # The LLaVA-1.5 rule, 576 per image, + VLLMSettings' default length_margin of 64 template tokens.
    needed = max(d["text_tokens"] + 10 * 576 + 64 + 8 for d in docs)
    cells = table_row(run.out, "mmneedle_m10_n1_k2_pos")
    assert cells[6] == f"{needed:,}" and cells[9] == "estimate"
    assert "each image by the LLaVA-1.5 family's rule: 576 tokens per image" in run.out
    assert "llava-hf/llava-1.5-7b-hf's config and processor are not on this machine" in run.out


def test_a_processor_that_cannot_count_from_sizes_is_measured_with_a_blank_image_and_probed(
    tmp_path: Path, data_dir: Path, needle_run, rows
) -> None:
    """Idefics2's processor has no size-only count (issue 72): each image is what the processor makes of a blank
    image of its size, within a token of the input_ids it really builds (a space it adds after an image merges with
    the text), which the count's probe finds: the table says `estimate`."""
    from transformers import Idefics2Config, Idefics2ImageProcessorPil, Idefics2Processor

    from harness.config.task_index import TaskIndex
    from harness.models.shared.hf_counting import ProcessorCount
    from harness.running.task.task import Task
    from tests.support.tiny_llava import CHAT_TEMPLATE, tiny_tokenizer

    checkpoint = tmp_path / "idefics2"
    tokenizer = tiny_tokenizer(("<image>", "<fake_token_around_image>", "<end_of_utterance>"))
    processor = Idefics2Processor(
        image_processor=Idefics2ImageProcessorPil(do_image_splitting=True),
        tokenizer=tokenizer,
        image_seq_len=64,
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(checkpoint)
    Idefics2Config().save_pretrained(checkpoint)  # the config alone: no weights

    weightless = f"pretrained={checkpoint}"
    run = needle_run("mmneedle_m1_n2_k1_pos", "hf", None, "--limit", "2", "--screen_only", model_args=weightless)
    assert run.code == 0, run.err
    assert table_row(run.out, "mmneedle_m1_n2_k1_pos")[9] == "estimate"
    assert "each image as the processor expands a blank image of its size (an estimate" in run.out

    count = ProcessorCount.load(str(checkpoint), offline=True)
    task = Task(TaskIndex().tasks["mmneedle_m1_n2_k1_pos"])
    task.load(data_dir, 2)
    for doc_id, doc in task.iter_docs():
        request = task.build_request(doc_id, doc, task.generation_settings({}))
        inputs = count.processor(text=[count.render(request)], images=[[i.pil() for i in request.images]])
        actual = len(inputs["input_ids"][0])
        assert actual - len(request.images) <= count.prompt_tokens(request) <= actual and not count.exact(request)


def test_every_alias_has_its_family_rule() -> None:
    from harness.models.aliases import ALIASES
    from harness.models.families import alias_family, family_of_api_name

    expected = {
        "qwen": "Qwen2-VL",
        "internvl": "InternVL",
        "ovis": "Ovis2",
        "gemma": "Gemma 3",
        "idefics2": "Idefics2",
        "mantis": "Mantis-Idefics2",
        "idefics3": "Idefics3",
        "phi3": "Phi-3.5-vision",
        "phi4": "Phi-4-multimodal",
        "pixtral": "Pixtral",
        "llava-1.5": "LLaVA-1.5",
        "llava-1.6": "LLaVA-NeXT",
        "llava-next": "LLaVA-NeXT",
        "llava-onevision": "LLaVA-OneVision",
        "gpt": "GPT-4o",
        "gpt-5": "GPT-5",
        "gpt-5.2": "GPT-5.2",
        "gpt-5.5": "GPT-5.5",
        "claude": "Claude",
        "gemini": "Gemini",
        "gemini-3": "Gemini 3",
        "qwen3-vl": "Qwen3-VL",
        "gemma3n": "Gemma 3n",
        "glm": "GLM-4.1V",
        "kimi-vl": "Kimi-VL",
        "minicpm-v-4.5": "MiniCPM-V 4.5",
        "mimo-vl": "Qwen2-VL",  # a Qwen2.5-VL checkpoint
        "qwen3.5": "Qwen3.5",
        "qwen3.6": "Qwen3.5",
        "gemma4": "Gemma 4",
        "llava-onevision-2": "LLaVA-OneVision-2",
    }
    for name, alias in ALIASES.items():
        pretrained = alias.args.get("pretrained")  # a checkpoint's alias: its family's; an API model's: its name's
        family = alias_family(pretrained) if pretrained else family_of_api_name(alias.args.get("model"))
        if alias.args.get("text_only") == "true":  # a text LLM (Qwen2.5 Instruct): it takes no image, has no rule
            assert family is None, name
            continue
        assert family is not None, f"{name}: no family's rule estimates it"
        # the longest prefix named: qwen3-vl over qwen (an alias added by a new family module: any rule, its own)
        prefix = max((p for p in expected if name.startswith(p)), key=len, default=None)
        assert prefix is None or family.name == expected[prefix], name


def test_family_rules_agree_with_the_processors_and_openai_s_published_figures(tiny_llava_336: Path) -> None:
    from transformers import AutoProcessor, LlavaNextImageProcessorPil, LlavaNextProcessor

    from harness.models.families import family_of, family_of_api_name
    from tests.support.tiny_llava import tiny_tokenizer

    sizes = [(256, 256), (1000, 1000), (640, 480), (480, 640), (1920, 300), (300, 1920), (50, 800), (1008, 336)]
    next_processor = LlavaNextProcessor(
        image_processor=LlavaNextImageProcessorPil(
            size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}
        ),
        tokenizer=tiny_tokenizer(),
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        image_token="<image>",
    )
    llava_processor = AutoProcessor.from_pretrained(tiny_llava_336)
    for processor, family in (
        (next_processor, family_of("llava_next")),
        (llava_processor, family_of("llava")),
    ):
        counted = processor._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in sizes]).num_image_tokens
        assert [family.image_tokens(w, h, {}) for w, h in sizes] == counted
    assert len(set(counted)) == 1 and counted[0] == 576  # LLaVA-1.5: whatever the image

    gpt4o = family_of_api_name("gpt-4o-2024-11-20")  # OpenAI's examples: 1024 x 1024 high is 765, 2048 x 4096 is 1105
    assert [gpt4o.image_tokens(w, h, {}) for w, h in ((1024, 1024), (2048, 4096), (128, 128))] == [765, 1105, 255]
    assert gpt4o.image_tokens(2048, 4096, {"image_detail": "low"}) == 85


# Issue 51, item 6: the aliases of the families the papers never ran, each screened offline with its family's rule.
CURRENT = ("Qwen3-VL", "Gemma 3n", "GLM-4.1V", "Kimi-VL", "MiniCPM-V 4.5", "Qwen3.5", "Gemma 4", "LLaVA-OneVision-2")


def current_aliases() -> list[str]:
    from harness.models.aliases import ALIASES
    from harness.models.families import alias_family

    def family(name: str) -> str | None:
        pretrained = ALIASES[name].args.get("pretrained")
        found = alias_family(pretrained) if pretrained else None
        return found.name if found else None

    return [n for n in ALIASES if family(n) in CURRENT or n.startswith("internvl3.5")]


@pytest.mark.parametrize("alias", current_aliases())
def test_each_current_alias_screens_offline_with_its_family_s_labelled_estimate(
    alias: str, data_dir: Path, rows, empty_hub_cache: Path
) -> None:
    """`--model ALIAS --screen_only` with its checkpoint nowhere on this machine: each sample counted by the family's
    rule (the rows' text + each image by the rule, + the vLLM backend's template margin), labelled an estimate with
    the family's name and rule, never the rows' own rule for want of one."""
    from harness.models.aliases import ALIASES
    from harness.models.families import alias_family

    task = "mmneedle_m10_n1_k2_pos"
    args = [*run_args(task, alias, data_dir=data_dir), "--limit", "2", "--screen_only"]
    plan = plan_run(parse_options(args), args)
    model = screen_model(plan.model.backend, plan.model.args)
    family = alias_family(ALIASES[alias].args["pretrained"])
    assert family is not None
    assert f"by the {family.name} family's rule: {family.rule}" in model.rule and "no family rule" not in model.rule
    assert "not on this machine" in model.estimate
    margin = 64 if plan.model.backend == "vllm" else 0  # VLLMSettings.length_margin: the template it cannot see
    found = verdicts(*args)
    docs = rows("m10_n1_k2").filter(lambda r: r["is_positive"]).select(range(2))
    for doc in docs:
        verdict = found[(task, doc["id"])]
        sizes = [(256, 256)] * len(doc["image_tokens"])  # the synthetic build's images
        expected = doc["text_tokens"] + sum(family.image_tokens(w, h, {}) for w, h in sizes) + margin
        assert verdict.prompt_tokens == expected and not verdict.exact


def test_a_thinking_alias_screens_from_the_command_line(needle_run, empty_hub_cache: Path) -> None:
    for alias, family in (("qwen3-vl-thinking", "Qwen3-VL"), ("kimi-vl-a3b-thinking", "Kimi-VL")):
        run = needle_run("mmneedle_m10_n1_k2_pos", alias, None, "--screen_only")
        assert run.code == 0, run.err
        assert f"each image by the {family} family's rule" in run.out and "no family rule is known" not in run.out
        assert table_row(run.out, "mmneedle_m10_n1_k2_pos")[9] == "estimate"
