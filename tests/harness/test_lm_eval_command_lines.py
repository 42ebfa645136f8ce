"""lm-eval's and lmms-eval's command lines, as docs/lm-eval.md prints them (issue 54 item 3): each runs here, its
`--model` read as the backend that does the same and its `--model_args` as that backend takes them, each said in one
line. The checkpoint is the tiny LLaVA built for the tests (the docs' names are not on this machine), a server is the
local chat-completions server, and vLLM's engine is `tests/support/fake_vllm.FakeLLM` (vLLM needs a GPU; everything
around its engine is the backend's own code). Every name of the docs' table of their model names, with a typical
argument set, is screened (`--screen_only`) on the offline build, most of them run by no command line."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import shlex
from pathlib import Path

import pytest

from harness.models.registry import BACKENDS, backend_spec, other_names
from harness.models.shared.foreign_args import Refused, translate
from tests.harness.test_lm_eval_flags_on_every_benchmark import code_blocks
from tests.support.paths import PROJECT

CHECKPOINTS = ("llava-hf/llava-1.5-7b-hf", "Qwen/Qwen2.5-VL-7B-Instruct")


def documented_lines() -> list[str]:
    """The command lines of docs/lm-eval.md's block of lm-eval's and lmms-eval's model names."""
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    (block,) = [block for language, block in code_blocks(text) if "--model hf-multimodal" in block]
    return [line for line in block.splitlines() if line.startswith("harness ")]


@pytest.fixture(scope="module")
def needle_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's offline build, smaller: `m10_n2_k1` from the synthetic source."""
    from builders.mmneedle import build_mmneedle

    root = tmp_path_factory.mktemp("data")
    build_mmneedle(source="synthetic", out_dir=root, configs=["m10_n2_k1"], limit=1, seed=0, num_proc=1)
    return root


def names_table() -> dict[str, tuple[str, str]]:
    """docs/lm-eval.md's table of their model names: name -> (whose, what it is here: the backend, or '' for an alias
    of ours)."""
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    lines = text.split("### Their models' names and arguments", 1)[1].splitlines()
    start = lines.index("| their `--model` | whose | here |")
    rows = list(itertools.takewhile(lambda row: row.startswith("|"), lines[start + 2 :]))
    table = {}
    for row in rows:
        names, whose, here = (cell.strip() for cell in row.strip("|").split("|"))
        backend = here.split("`")[1] if here.startswith("`") else ""
        table |= {name: (whose, backend) for name in re.findall(r"`([^`]+)`", names)}
    return table


# A --model_args each of their names is commonly run with: the checkpoint or served model, and their own arguments
# beside ours (lmms-eval's Qwen2-VL example: max_pixels, use_flash_attention_2, interleave_visuals). The screen reads
# no weights, so the checkpoints' names need not be on this machine.
TYPICAL_ARGS = {
    "hf-multimodal": "pretrained=llava-hf/llava-1.5-7b-hf,dtype=bfloat16,max_length=4096,max_images=16,interleave=True,"
    "convert_img_format=True",
    "llava_hf": "pretrained=llava-hf/llava-1.5-7b-hf,device_map=auto,use_cache=True",
    "qwen2_vl": "pretrained=Qwen/Qwen2-VL-7B-Instruct,max_pixels=12845056,use_flash_attention_2=True,"
    "interleave_visuals=True",
    "qwen2_5_vl": "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_pixels=12845056,attn_implementation=flash_attention_2",
    "qwen3_vl": "pretrained=Qwen/Qwen3-VL-8B-Instruct,max_pixels=12845056,max_num_frames=32",
    "internvl_hf": "pretrained=OpenGVLab/InternVL3-8B-hf,max_frames_num=32",
    "huggingface": "pretrained=HuggingFaceM4/Idefics3-8B-Llama3,parallelize=True",
    "vllm-vlm": "pretrained=llava-hf/llava-1.5-7b-hf,max_length=4096,max_images=16,batch_size=auto",
    "vllm": "model=llava-hf/llava-1.5-7b-hf,tensor_parallel_size=1,gpu_memory_utilization=0.8",
    "local-chat-completions": "model=llava-hf/llava-1.5-7b-hf,base_url=http://localhost:8000/v1/chat/completions,"
    "num_concurrent=4,tokenized_requests=False",
    "openai-chat-completions": "model=gpt-4o",
    "openai": "model_version=gpt-4o",
    "openai_compatible": "model_version=gpt-4o,num_concurrent=8",
    "openai_compatible_chat": "model_version=gpt-4o,max_length=128000",
    "idefics2": "",
}


@pytest.mark.slow  # a --screen_only run per name (0.3-1 s; the first ones import transformers and vLLM's classes)
@pytest.mark.parametrize("name", sorted(names_table()))
def test_each_documented_model_name_runs_on_its_backend_with_a_typical_argument_set(
    name: str, harness, needle_build: Path
) -> None:
    """Issue 54: the names table listed names (`qwen2_vl`, `huggingface`, `openai_compatible_chat`, ...) that none of
    the documented command lines ran. Each is resolved through the run's own plan and screened on the offline build:
    the backend the table names, the line saying so, one line for each of their arguments, and the checkpoint or
    served model read from their spelling of it (lmms-eval's `model=`, `model_version=`)."""
    from harness.models.aliases import ALIASES
    from harness.models.facts.args import parse_kv

    assert set(TYPICAL_ARGS) == set(names_table())  # a name added to the table needs its arguments here
    whose, backend = names_table()[name]
    if not backend:  # an alias of ours, by the name lmms-eval gives its wrapper
        assert name in ALIASES, f"the table says {name} is an alias"
        backend = ALIASES[name].backend
    if backend == "vllm" and importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM's classes are not installed (make test installs them)")
    given = parse_kv(TYPICAL_ARGS[name])
    run = harness("--model", name, *(["--model_args", TYPICAL_ARGS[name]] if given else []),
                  "--tasks", "mmneedle_m10_n2_k1", "--data_dir", needle_build, "--screen_only")  # fmt: skip
    assert run.code == 0, run.err
    said = [line.removeprefix("harness: ") for line in run.err.splitlines() if line.startswith("harness: --model")]
    named = [f"--model {name}: {whose}'s name, for the {backend} backend here"]
    assert [line for line in said if line.startswith("--model ")] == (named if name in other_names() else [])
    theirs = [key for key in given if key in backend_spec(backend).foreign_args]
    assert [line.split("=", 1)[0] for line in said if line.startswith("--model_args ")] == [
        f"--model_args {key}" for key in theirs
    ]
    (screened,) = [line for line in run.out.splitlines() if line.startswith("Screen only (")]
    served = given.get("pretrained") or given.get("model") or given.get("model_version")
    served = served or ALIASES[name].args["pretrained"]
    assert screened.startswith(f"Screen only ({backend} {served}): "), screened


def test_the_documented_lines_name_every_mapped_name_and_each_name_its_backend() -> None:
    lines = documented_lines()
    assert len(lines) == 8
    names = {shlex.split(line)[shlex.split(line).index("--model") + 1] for line in lines}
    assert {"hf-multimodal", "vllm-vlm", "local-chat-completions", "openai-chat-completions"} <= names  # lm-eval's
    assert {"llava_hf", "qwen2_5_vl", "vllm", "openai_compatible"} <= names  # lmms-eval's
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    for name, (backend, whose) in other_names().items():
        (row,) = [row for row in text.splitlines() if row.startswith("| ") and f"`{name}`" in row.split("|")[1]]
        assert row.split("|")[2].strip() == whose and row.split("|")[3].strip().startswith(f"`{backend}`"), row


def test_each_backends_table_takes_none_of_its_own_arguments_and_the_docs_list_every_one() -> None:
    """An argument of ours always means what it means here: no foreign table holds a backend's own argument."""
    import dataclasses

    from harness.models.backends.hf.settings import HFSettings
    from harness.models.backends.openai_chat.model import OpenAIChatSettings
    from harness.models.backends.replicas.settings import POOL_ARGS
    from harness.models.backends.vllm_engine.settings import ARG_ALIASES, VLLMSettings, engine_args_class

    engine = engine_args_class()  # any field of the installed vLLM's EngineArgs is the vllm backend's too
    own = {
        "hf": {f.name for f in dataclasses.fields(HFSettings)},
        "vllm": {f.name for f in dataclasses.fields(VLLMSettings)}
        | set(ARG_ALIASES)
        | ({f.name for f in dataclasses.fields(engine)} if engine is not None else set()),
        "openai": {f.name for f in dataclasses.fields(OpenAIChatSettings)} | {"pretrained"},
    }
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    for backend in BACKENDS:
        table = backend_spec(backend).foreign_args
        assert not set(table) & (own.get(backend, set()) | POOL_ARGS), backend
        if table:
            (row,) = [r for r in text.splitlines() if r.startswith(f"| `{backend}` | ") and r.count("|") == 5]
            assert all(f"`{key}" in row for key in table), [key for key in table if f"`{key}" not in row]
    from harness.models.aliases import ALIASES

    assert not set(other_names()) & set(ALIASES)  # an alias's name is ours (lmms-eval's `idefics2` is the alias)


@pytest.mark.parametrize(
    ("backend", "given", "read", "said"),
    [
        ("hf", {"max_length": "4096"}, {"context_length": "4096"}, "read as context_length=4096 here"),
        ("hf", {"parallelize": "True"}, {"device_map": "auto"}, "read as device_map=auto here"),
        ("hf", {"parallelize": "False"}, {}, "changes nothing here: the model is loaded on one device"),
        ("hf", {"use_cache": "True"}, {}, "changes nothing here: generation always keeps its KV cache"),
        ("vllm", {"max_length": "8192", "batch_size": "auto"}, {"max_model_len": "8192"}, "vLLM schedules its own"),
        ("openai", {"model_version": "gpt-4o", "num_concurrent": "4"}, {"model": "gpt-4o", "concurrency": "4"}, ""),
        (
            "openai",
            {"auth_token": "sk-secret-1234567"},
            {"api_key": "sk-secret-1234567"},
            "auth_token: read as api_key",
        ),
    ],
)
def test_their_arguments_are_read_as_ours_or_as_nothing_in_one_line_each(
    backend: str, given: dict[str, str], read: dict[str, str], said: str
) -> None:
    args, lines = translate(backend_spec(backend).foreign_args, given)
    assert args == read
    assert len(lines) == len(given) and all(line.startswith("--model_args ") for line in lines)
    assert said in " ".join(lines)
    assert "sk-secret" not in " ".join(lines)  # a key is named, never shown


@pytest.mark.parametrize(
    ("model", "args", "message"),
    [
        ("hf-multimodal", "batch_size=8", "--model_args batch_size=8: the batch size is a flag here, as on lm-eval's "
         "command line: write --batch_size N"),
        ("hf-multimodal", "interleave=False", "--model_args interleave=False: images are sent where the task's prompt "
         "places them (interleaved with the text), as the paper's code did; drop the argument"),
        ("qwen2_5_vl", "pretrained=x,min_pixels=3136", "--model_args min_pixels=3136: the hf backend scales an image "
         "down to max_pixels"),
        ("vllm-vlm", "pretrained=x,max_gen_toks=64", "--model_args max_gen_toks=64: the answer's length is a generation "
         "setting here: write --gen_kwargs max_gen_toks=N"),
        ("vllm", "pretrained=x,max_length=4096,max_model_len=4096", "--model_args max_length=4096 and max_model_len=... "
         "say the same thing here: give max_model_len only"),
        ("local-chat-completions", "model=m,tokenized_requests=True", "--model_args tokenized_requests=True: a "
         "chat-completions server takes messages, not token ids; drop tokenized_requests"),
    ],
)  # fmt: skip
def test_an_argument_that_means_nothing_here_is_refused_in_one_line_saying_what_to_write(
    harness, needle_build: Path, model: str, args: str, message: str
) -> None:
    run = harness("--tasks", "mmneedle_m10_n2_k1", "--model", model, "--model_args", args, "--data_dir", needle_build)
    assert run.code == 2
    (line,) = [line for line in run.err.splitlines() if "error:" in line]
    assert line.startswith(f"harness: error: {message}"), line


def test_a_judges_arguments_are_named_as_the_judges() -> None:
    from harness.run.plan import resolve_model

    with pytest.raises(Exception, match=r"^--judge_args max_gen_toks=9: the answer's length"):
        resolve_model("openai", {"model": "m", "max_gen_toks": "9"}, flag="--judge_args")
    with pytest.raises(Refused):
        translate(backend_spec("openai").foreign_args, {"seed": "1"})


@pytest.mark.slow  # a tiny model loaded (or a server, or vLLM's stand-in) per line: 5-12 s each
@pytest.mark.parametrize("line", documented_lines(), ids=lambda line: shlex.split(line)[2])
def test_each_documented_command_line_runs(
    line: str,
    harness,
    needle_build: Path,
    tiny_llava: Path,
    chat_server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = shlex.split(line)[1:]
    model = argv[argv.index("--model") + 1]
    backend, _ = other_names().get(model, (model, ""))
    for index, word in enumerate(argv):
        for checkpoint in CHECKPOINTS:
            word = word.replace(checkpoint, str(tiny_llava))
        word = word.replace("http://localhost:8000/v1", chat_server.base_url)
        if argv[index - 1] == "--data_dir":
            word = str(needle_build)
        if argv[index - 1] == "--output_path":
            word = str(tmp_path / word)
        argv[index] = word
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)  # openai-chat-completions' default is OpenAI's
    if backend == "vllm":
        if importlib.util.find_spec("vllm") is None:
            pytest.skip("vLLM's classes are not installed (make test installs them)")
        import vllm

        from tests.support.fake_vllm import FakeLLM

        monkeypatch.setattr(vllm, "LLM", FakeLLM)
    run = harness(*argv)
    assert run.code == 0, run.err
    said = [line for line in run.err.splitlines() if line.startswith("harness: --model")]
    if model in other_names():
        assert said[0] == f"harness: --model {model}: {other_names()[model][1]}'s name, for the {backend} backend here"
    (results,) = [path for path in tmp_path.rglob("results_*.json") if "copy_of" not in json.loads(path.read_text())]
    written = json.loads(results.read_text())
    assert written["config"]["model"] == backend
    assert sorted(written["results"]) == ["mmneedle_m10_n2_k1_neg", "mmneedle_m10_n2_k1_pos"]
    if "results.json" in line:  # lm-eval's FILE.json: the results also as FILE_<date>.json beside it
        (copy,) = tmp_path.glob("results_*.json")
        assert json.loads(copy.read_text())["copy_of"] == str(results.relative_to(tmp_path))
