"""`harness models`: every alias line reads as name, backend, settings, each separated by spaces, followed by the paper
models it stands for ("as the paper" or "departs: why", per benchmark); every model of the three papers' result tables
has an alias or is listed with the reason it has none, in the one table each benchmark declares (issue 50 item 1)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from harness.models.aliases import ALIASES, index_benchmarks, resolve, task_benchmarks
from harness.models.facts.paper_models import PaperModels, papers

ROOT = Path(__file__).resolve().parents[3]
RESULT_TABLES = {
    "mmlongbench": "tasks/mmlongbench/paper_results.csv",
    "milebench": "tasks/milebench/paper_results.csv",
    "mmneedle": "tasks/mmneedle/paper_results.csv",
}


def paper_models(benchmark: str) -> set[str]:
    """The models of a paper's result tables, as the repository transcribed them (the Random row is no model)."""
    with (ROOT / RESULT_TABLES[benchmark]).open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {row["model"] for row in rows} - {"Random"}


def tables() -> dict[str, tuple[str, PaperModels]]:
    """Each installed benchmark's declared paper models: its key -> (its title, its table)."""
    return {benchmark.name.lower(): (benchmark.name, table) for benchmark, table in papers(index_benchmarks())}


def test_every_paper_model_has_an_alias_or_a_reason() -> None:
    sizes = {benchmark: len(paper_models(benchmark)) for benchmark in RESULT_TABLES}
    assert sizes == {"mmlongbench": 46, "milebench": 22, "mmneedle": 13}
    declared = tables()
    assert {*RESULT_TABLES, "locovqa"} <= set(declared)  # LoCoVQA's Table 1 lists models, no result table
    for benchmark in RESULT_TABLES:
        _, table = declared[benchmark]
        covered = Counter(model.name for model in table.models)
        assert set(covered) == paper_models(benchmark), benchmark
        assert max(covered.values()) == 1, benchmark  # one alias or one reason each, never both
        assert all(model.reason if model.alias is None else model.alias in ALIASES for model in table.models)
        aliases = Counter(model.alias for model in table.models if model.alias)
        assert max(aliases.values()) == 1, benchmark  # an alias runs one of a paper's models


def test_a_report_knows_a_run_by_one_paper_model_at_most() -> None:
    """The fragments by which a report knows a paper model's runs never hold another model's: which model a name
    matches cannot depend on the table's order."""
    for benchmark, (_, table) in tables().items():
        keys = [(model.name, key) for model in table.models for key in model.known_as]
        for name, key in keys:
            clash = [other for other, theirs in keys if other != name and (key in theirs or theirs in key)]
            assert not clash, (benchmark, name, key, clash)


def test_every_alias_line_separates_its_backend_from_its_settings(harness) -> None:
    run = harness("models")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    start = lines.index("Aliases (--model NAME; --model_args override; backend=... switches backend):") + 1
    end = lines.index("Paper models without an alias:")
    listed = {}
    for line in lines[start:end]:
        if not line.startswith("   "):  # an alias line, not its notes
            name, backend, settings = line.split()
            listed[name] = (backend, settings)
    assert set(listed) == set(ALIASES)
    for name, alias in ALIASES.items():
        assert listed[name] == (alias.backend, ",".join(f"{k}={v}" for k, v in alias.args.items()))
    assert listed["gpt-4o"][0] == "openai"  # the longest backend name, once run into "model=..."
    text = "\n".join(lines[start:end])
    for title, table in tables().values():
        for paper_run in table.models:
            if paper_run.alias is not None:
                assert f'{title} "{paper_run.name}" ({paper_run.ran})' in text
    assert 'MMNeedle "GPT-4o"' in text and "image_detail=high" in text
    families = next(i for i, line in enumerate(lines) if line.startswith("Model families"))  # listed last
    without = [line for line in lines[end + 1 : families] if not line.startswith("    its official call")]
    assert len(without) == sum(len(table.without_alias) for _, table in tables().values())
    assert 'MileBench "Qwen-VL-Chat" (Qwen/Qwen-VL-Chat): its own model code' in run.out


def test_each_benchmark_picks_its_own_official_run() -> None:
    """MMNeedle's GPT-4o is the May-2024 snapshot at detail high with no temperature sent, MileBench's the same snapshot
    at detail auto: a run of both at once is refused (it cannot be both), unless the command line settles the
    argument. A snapshot has its own alias, so `--model gpt-4o` is the same model whatever the tasks."""
    import pytest

    from harness.errors import UserError

    def on(name: str, given: dict[str, str], *tasks: str) -> dict[str, str]:
        return resolve(name, given, task_benchmarks(tasks))[1]

    seedless = {"send_seed": "false"}  # no official call sent a seed
    # openai_model.py:138-146, and format_chat's empty text parts (:81-101)
    mmlongbench = {"send_temperature": "true", "top_p": "1.0", "token_param": "max_tokens", "empty_text_parts": "true"}
    assert on("gpt-4o", {}, "mmlongbench_128k") == {"model": "gpt-4o-2024-11-20", **seedless, **mmlongbench}
    november = {"model": "gpt-4o-2024-11-20", **seedless}
    assert on("gpt-4o", {}, "mmneedle_m10_n2_k1_pos") == on("gpt-4o", {}, "milebench") == november
    needle = on("gpt-4o-2024-05-13", {}, "mmneedle_m10_n2_k1_pos")
    high = {"image_detail": "high", "send_temperature": "false", "token_param": "max_tokens"}  # needle.py:105-147
    assert needle == {"model": "gpt-4o-2024-05-13", **seedless, **high}
    assert on("gpt-4o-2024-05-13", {}, "milebench")["image_detail"] == "auto"
    with pytest.raises(UserError, match="MileBench runs it with image_detail=auto and MMNeedle with image_detail=high"):
        on("gpt-4o-2024-05-13", {}, "milebench", "mmneedle")
    given = {"send_temperature": "true", "image_detail": "auto"}
    both = on("gpt-4o-2024-05-13", given, "milebench", "mmneedle")
    assert both == {"model": "gpt-4o-2024-05-13", **seedless, **given, "token_param": "max_tokens"}
    # MileBench truncates to the model's context: its hf runs screen against the checkpoint's own.
    assert on("idefics2", {}, "milebench_docvqa")["no_context_limit"] == "false"
    assert on("idefics2", {}, "mmlongbench_128k")["no_context_limit"] == "true"
    assert on("internvl2-8b", {}, "milebench_docvqa")["max_model_len"] == "none"


def test_models_filters_by_name_and_by_benchmark(harness) -> None:
    """`harness models NAME` keeps the aliases and backends whose name holds NAME (an alias's own name: that alias
    alone), `--benchmark B` one benchmark's paper models; a filter that keeps nothing is one line with suggestions
    (issue 54)."""
    one = harness("models", "internvl")
    assert one.code == 0, one.err
    listed = [line.split()[0] for line in one.out.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert listed == ["internvl"] and "Paper models without an alias" not in one.out
    several = harness("models", "qwen")
    names = {
        line.split()[0] for line in several.out.splitlines() if line.startswith("  ") and not line.startswith("   ")
    }
    assert names == {n for n in ALIASES if "qwen" in n.lower()} and len(names) > 1
    needle = harness("models", "--benchmark", "mmneedle")
    assert needle.code == 0 and "Backends:" not in needle.out
    _, table = tables()["mmneedle"]
    for paper_run in table.models:
        if paper_run.alias is not None:
            assert f'MMNeedle "{paper_run.name}"' in needle.out
    assert "MMLongBench" not in needle.out and "MileBench" not in needle.out
    without = needle.out.split("Paper models without an alias:\n")[1].splitlines()
    calls = [line for line in without if line.startswith("    its official call")]
    assert len(without) - len(calls) == len(table.without_alias) and len(calls) == 2
    # The retired Gemini Pro 1.0 and 1.5: the reason, then needle.py:54-62's call on the gemini backend (issue 53).
    gemini = without.index(
        '  MMNeedle "Gemini Pro 1.0" (gemini-1.0-pro-vision-latest): the provider has retired the snapshot the paper ran'
    )
    assert without[gemini + 1].startswith(
        "    its official call, to a server that still serves it: --model gemini --model_args "
        "model=gemini-1.0-pro-vision-latest,images=inline,image_format=original,candidate_count=1,stop_sequences=x,"
        "send_temperature=false (departs: needle.py streamed the answer"
    )
    typo = harness("models", "qwenn")
    assert typo.code == 2 and typo.err.strip().count("\n") == 0 and "did you mean: qwen3-vl, qwen2-vl" in typo.err
    unknown = harness("models", "--benchmark", "mmnedle")
    assert unknown.code == 2 and "did you mean: MMNeedle" in unknown.err
    locovqa = harness("models", "--benchmark", "LoCoVQA")  # issue 51 phase 2 item 3: its nine, Table 1
    assert locovqa.code == 0
    _, loco = tables()["locovqa"]
    assert len(loco.models) == 9
    for paper_run in loco.models:
        if paper_run.alias is not None:
            assert f'LoCoVQA "{paper_run.name}"' in locovqa.out
    listed = locovqa.out.split("Paper models without an alias:\n")[1].splitlines()
    assert len(listed) == len(loco.without_alias) == 6


def test_the_ablation_models_have_a_place_of_their_own(harness) -> None:
    """MMLongBench's models that only its ablations ran (the text-only LLMs of Figures 9-10, V2PE of Figure 16; issue
    51 item 4) are its table's `ablations`, apart from the 46 of its result tables, and `harness models` lists them so,
    with the alias that runs each or the exact reason none can; NVILA-Lite's reason names the official code."""
    _, table = tables()["mmlongbench"]
    ablations = {model.name: model for model in table.ablations}
    assert set(ablations) == {"Qwen2.5-7B-Instruct", "Qwen2.5-32B-Instruct", "V2PE (16)", "V2PE (64)", "V2PE (256)"}
    assert not set(ablations) & paper_models("mmlongbench")
    for name in ("Qwen2.5-7B-Instruct", "Qwen2.5-32B-Instruct"):
        run = ablations[name]
        assert run.alias is not None and ALIASES[run.alias].args["text_only"] == "true"
        assert dict(run.args) == {"yarn_factor": "4"}  # the figures' `_yarn` result folders
        assert table.run_by(run.alias) is run and table.is_ablation(run)
        assert run.not_run_why("mmlongbench_vrag_viquae_8k") and run.not_run_why(
            "mmlongbench_ablation_occ_vrag_viquae_8k"
        )
        assert run.not_run_why("mmlongbench_ablation_triviaqa_128k") is None
        assert run.not_run_why("mmlongbench_ablation_text_doc_8k") is None
    for listed in (harness("models"), harness("models", "--benchmark", "mmlongbench")):
        assert listed.code == 0, listed.err
        out = listed.out
        assert (
            'MMLongBench ablation "Qwen2.5-7B-Instruct" (Qwen/Qwen2.5-7B-Instruct) with yarn_factor=4: as the paper'
        ) in out
        for step in (16, 64, 256):
            assert f'  MMLongBench ablation "V2PE ({step})" (/workspace/zw/V2PE-256K' in out
        assert "rope_pos_id_stride=N" in out and "no maintained path gives V2PE's positions" in out
        for size in ("2B", "8B"):
            assert f'  MMLongBench "NVILA-Lite-{size}" (Efficient-Large-Model/NVILA-Lite-{size}-hf-preview): ' in out
        assert "hand-patched copies of the checkpoint's remote code" in out and "modeling_vila.py:425" in out


def test_models_with_tasks_says_what_the_alias_sends_there(harness) -> None:
    """`harness models NAME --tasks ...` prints the arguments, snapshot, prompt style and input policies a run of
    those tasks resolves the alias to; the results record the same prompt style (issue 62 item 7)."""
    from harness.run.results_config import alias_info

    milebench = harness("models", "llava-1.5-7b", "--tasks", "milebench_few")
    assert milebench.code == 0, milebench.err
    assert "  model args: pretrained=llava-hf/llava-1.5-7b-hf,no_context_limit=false,prompt_style=llava_llama_2" in (
        milebench.out
    )
    assert "  prompt style: name=llava_llama_2, content=string" in milebench.out
    assert "  snapshot: llava-hf/llava-1.5-7b-hf (no revision pinned: the latest)" in milebench.out
    needle = harness("models", "llava-1.5-7b", "--tasks", "mmneedle_m1_n2_k1_pos")
    assert "no_context_limit=true\n" in needle.out and "  prompt style: name=default, content=parts" in needle.out
    pixtral = harness("models", "pixtral", "--tasks", "mmlongbench_vrag_infoseek_8k,mmlongbench_vrag_infoseek_128k")
    assert "  input policy: image_scale=0.5 on mmlongbench_vrag_infoseek_128k" in pixtral.out
    assert "  input policy: none (the task's inputs) on mmlongbench_vrag_infoseek_8k" in pixtral.out
    api = harness("models", "gpt-4o-2024-05-13", "--tasks", "mmneedle_m1_n2_k1_pos")
    assert (
        "snapshot: gpt-4o-2024-05-13 (the provider's model of that name)" in api.out and "prompt style" not in api.out
    )
    both = harness("models", "llava-1.6-7b", "--tasks", "milebench_few,mmneedle_m1_n2_k1_pos")
    assert both.code == 2 and "MileBench runs it with no_context_limit=false and MMNeedle" in both.err
    benchmarks = task_benchmarks(["milebench_few"])
    _, args, _ = resolve("llava-1.5-7b", {}, benchmarks)
    assert alias_info("llava-1.5-7b", benchmarks, args)["prompt"]["name"] == "llava_llama_2"  # as the run sent it


def test_by_config_lists_every_image_text_type_of_the_installed_transformers(harness) -> None:
    """Issue 72, item 1: each type once, read from transformers' own mapping; a family module's type named with its
    family, every other `-`; a processor that tells an image's tokens from its size counted exactly, one that cannot
    measured, else estimated by the family's rule or, without one, the rows' own."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES as MAPPED

    from harness.models.families import family_of

    run = harness("models", "--by_config")
    assert run.code == 0, run.err
    rows = {line.split()[0]: line for line in run.out.splitlines()[1:] if line and not line[0].isdigit()}
    assert set(rows) == set(MAPPED)
    assert f"{len(MAPPED)} image-text-to-text model types" in run.out
    for model_type, line in rows.items():
        variant = family_of(model_type, (MAPPED[model_type],))
        assert (line.split()[2] == "-") is (variant is None), line
    assert rows["qwen3_vl"].endswith(" exact")
    assert rows["gemma3n"].endswith("measured (a blank image of each size), else estimate: the Gemma 3n family's rule")
    assert rows["smolvlm"].endswith("else estimate: the rows' own rule (no family module)")
    only = harness("models", "gemma", "--by_config")
    assert only.code == 0 and {line.split()[0] for line in only.out.splitlines()[1:-2] if line} == {
        t for t in MAPPED if "gemma" in t
    }
    assert harness("models", "--by_config", "--tasks", "x").code == 2
