"""MMLongBench's 46 models (Figures 22-26), as its official code ran them: each with the alias that runs it, and the
settings of `scripts/run_eval.sh` and `scripts/run_api.sh` (26197d2) as input rules on exactly the tasks and lengths
their commands named (`--task_list` x `--length_list`): Idefics2 splits images at 8K-32K and on VRAG at 64K/128K and
not on VH/NIAH/ICL there, Idefics3 keeps pages whole at 8K-32K and halves them at 64K/128K, Pixtral keeps full-size
images at 8K-32K, GPT-4o sends `detail: auto` except on natural images at 64K/128K (`low`), InternVL/Ovis2/Phi reduce
tiles and keep the last 300-400 images on natural images at 64K/128K (not InternVL3-1B, InternVL2.5-1B/4B and
InternVL2-1B, which the scripts ran with defaults), Claude sends `detail: auto` everywhere and PNGs at 8K/16K, Gemini
keeps the last 400 images at most 384 px a side there, Gemma
3 the last 400 on VH and ICL at 128K. A model's own wrapper settings (InternVL's 4 tiles, ...) are its alias's.
`tests/harness/models/test_official_settings.py` checks every alias against a transcription of the commands.

The models only its ablations ran (`ABLATIONS`, the table's `ablations`: none is in Figures 22-26) are declared apart:
the text-only LLMs of Figures 9-10 ("w/ LLM", run by the `hf` backend's text-only path with YaRN, as the figures'
result folders say) and V2PE (Figure 16, no maintained path loads it). NVILA-Lite, the one open family of the result
tables without an alias, says exactly why.
"""

from __future__ import annotations

from harness.inputs.input_policy import TaskRule
from harness.models.facts.paper_models import NotRun, PaperModel, PaperModels, PaperScore, rule

# The official scripts' task names (configs/<task>_all.yaml) -> the harness's task globs (`vh` and `mm_niah_*` are
# both NIAH here).
SCRIPT_TASKS = {
    "vrag": "mmlongbench_vrag_*",
    "vh": "mmlongbench_niah_vh_*",
    "mm_niah_text": "mmlongbench_niah_mmniah_*_text",
    "mm_niah_image": "mmlongbench_niah_mmniah_*_image",
    "icl": "mmlongbench_icl_*",
    "summ": "mmlongbench_summ_*",
    "docqa": "mmlongbench_docvqa_*",
}
# The natural-image tasks, where the scripts reduce image tokens at 64K/128K, and the text-rich ones.
NATURAL = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl")
DOCUMENTS = ("summ", "docqa")
LENGTHS = ("8k", "16k", "32k", "64k", "128k")
LONG = ("64k", "128k")


def tasks(names: tuple[str, ...] | list[str], lengths: tuple[str, ...] = LENGTHS) -> tuple[str, ...]:
    """The globs of the script tasks `names` at `lengths` (a script's `--task_list` x `--length_list`)."""
    return tuple(f"{SCRIPT_TASKS[name]}_{length}" for name in names for length in lengths)


def _reduced(setting: str, why: str, keep: int = 400) -> tuple[TaskRule, ...]:
    """`--image_resize 0.5 --max_image_num N` on the natural images at 64K/128K, for a wrapper whose only use of the
    resize is its tile count: one tile (`setting` = 1) and the last `keep` images."""
    return (rule(tasks(NATURAL, LONG), why, keep_last_images=keep, processor_kwargs={setting: 1}),)


INTERNVL_HF = _reduced(
    "max_patches",
    "run_eval.sh: --image_resize 0.5 (one tile per image) --max_image_num 400 on natural images at 64K/128K",
)
INTERNVL_VLLM = _reduced(
    "max_dynamic_patch",
    "run_eval.sh: --image_resize 0.5 (one tile per image) --max_image_num 400 on natural images at 64K/128K",
)
OVIS2 = (
    rule(
        tasks(NATURAL, LONG),
        "run_eval.sh: --image_resize 0.5 (a real LANCZOS resize) --max_image_num 400 on natural images at 64K/128K",
        image_scale=0.5,
        keep_last_images=400,
    ),
)
GEMMA3 = (
    rule(
        tasks(("vh", "icl"), ("128k",)), "run_eval.sh: --max_image_num 400 on VH and ICL at 128K", keep_last_images=400
    ),
)
NO_SPLIT = {"do_image_splitting": False}
IDEFICS2 = (
    rule(
        tasks(("vh", "mm_niah_text", "mm_niah_image", "icl"), LONG),
        "run_eval.sh: --do_image_splitting False on vh, mm_niah and icl at 64K/128K (VRAG keeps the default)",
        processor_kwargs=NO_SPLIT,
    ),
)
IDEFICS2_CHATTY = (
    rule(
        tasks(NATURAL, LONG),
        "run_eval.sh: --do_image_splitting False on natural images at 64K/128K",
        processor_kwargs=NO_SPLIT,
    ),
)
IDEFICS3 = (
    *IDEFICS2_CHATTY,
    rule(tasks(DOCUMENTS, LONG), "run_eval.sh: --image_resize 0.5 on summ and docqa at 64K/128K", image_scale=0.5),
)
PHI3 = _reduced(
    "num_crops",
    "run_eval.sh: --image_resize 0.5 (whose only effect is num_crops = 1) --max_image_num 400 on natural images at "
    "64K/128K",
)
PHI4 = _reduced(
    "dynamic_hd",
    "run_eval.sh: --image_resize 0.5 (whose only effect is dynamic_hd = 1) --max_image_num 300 on natural images at "
    "64K/128K",
    keep=300,
)
PIXTRAL = (
    rule(
        tasks(NATURAL + DOCUMENTS, LONG),
        "run_eval.sh: --image_resize 0.5 (LANCZOS) on every task at 64K/128K",
        image_scale=0.5,
    ),
)
GPT4O = (
    # Every MMLongBench task at every length (the ablations and the lengths past 128K, which the official code never
    # ran, included).
    rule(("mmlongbench_*",), "openai_model.py: detail auto on every image", processor_kwargs={"image_detail": "auto"}),
    rule(
        tasks(NATURAL, LONG),
        "run_api.sh: --image_detail low on natural images at 64K/128K",
        processor_kwargs={"image_detail": "low"},
    ),
)
# run_api.sh runs Claude with `--image_file_root` a local folder at 8K/16K (:154-162), whose files openai_model.py
# (:117-124, `encode_image_base64`, model_utils.py:55-59) decodes, makes RGB and sends as PNGs, and the authors' Hub URLs at 32K-128K (:164-193), which the
# provider fetches: the files' own bytes. `--image_detail` is never set for it: the default `auto` (arguments.py:55).
CLAUDE = (
    GPT4O[0],
    rule(
        tasks(NATURAL + DOCUMENTS, ("8k", "16k")),
        "run_api.sh:154-162: local image files, which openai_model.py:117-124 sends as RGB PNGs",
        processor_kwargs={"image_format": "png"},
    ),
)
GEMINI = (
    rule(
        tasks(NATURAL, LONG),
        "run_api.sh: --max_image_num 400 --max_image_size 384 on natural images at 64K/128K (no Gemini tiling)",
        keep_last_images=400,
        max_image_side=384,
    ),
)
# How eval_api.py called the API models: arguments.py:34-35's defaults (temperature 1.0, top_p 1.0), which run_api.sh
# never changes. Gemini's wrapper sends both as they are, do_sample or not, with one candidate (gemini.py:127-136),
# each image decoded, made RGB and saved as PNG (gemini.py:73,80, `image_to_io`, model_utils.py:48-52: the gemini
# backend's default `image_format=png`) and its prompt cut by re.split around each image, empty texts included
# (gemini.py:55-62); max_output_tokens as the alias (none for the thinking and 2.5 series). openai_model.py sends temperature 0.0 (do_sample is False),
# top_p=1.0 and max_tokens (openai_model.py:138-146) on every call, GPT-4o's and Claude's alike, its prompt cut the
# same way, empty texts included (format_chat, :81-101).
GEMINI_ARGS = {"temperature": "1.0", "top_p": "1.0", "candidate_count": "1", "empty_text_parts": "true"}
OPENAI_ARGS = {"send_temperature": "true", "top_p": "1.0", "token_param": "max_tokens", "empty_text_parts": "true"}
# run_api.sh:121-150 (GPT-4o at every length) and :164-193 (Claude at 32K-128K) give `--image_file_root` as the
# authors' Hub image collection: openai_model.py:112-115 names each image by its URL and the provider fetches it.
BY_URL = (
    "each image goes as a data URL of the file's own bytes, where run_api.sh named it by its URL in the authors' Hub "
    "image collection (the provider fetched the same file)"
)
# run_api.sh:153-193 runs Claude 3.7 Sonnet on every task at 8K and 16K, then leaves out ICL at 32K ("cannot test
# ICL at 32K tokens"), VH, MM-NIAH and ICL at 64K and 128K, and DocVQA at 128K: the paper's N/A cells.
CLAUDE_NOT_RUN = (
    NotRun(tasks(("icl",), ("32k",)), "run_api.sh:164-172 leaves ICL out at 32K"),
    NotRun(tasks(("vh", "mm_niah_text", "mm_niah_image", "icl"), LONG), "run_api.sh:175-193 leaves it out at 64K/128K"),
    NotRun(tasks(("docqa",), ("128k",)), "run_api.sh:185-193 leaves DocVQA out at 128K"),
)
# The API models ran through eval_api.py (or eval_api_batch.py: run_api.sh), whose averages leave out each row whose
# parsed answer is empty (an empty answer, a call that failed after its retries, a blocked one); eval.py, which ran
# the open models, counts every row. The results keep both: `score` (an empty answer scored wrong) and this.
EVAL_API = PaperScore(
    "score_nonempty",
    "eval_api.py:97-104 (eval_api_batch.py:115-121) leaves a row whose parsed answer is empty out of the average",
)
# NVILA-Lite: vlm_model/nvila.py:40-45 imports snapshots of each checkpoint's remote code kept in the repository
# (vlm_model/nvila_2b_ef8fa9c8/, nvila_8b_e2481b0c/), patched by hand as its FIXMEs say (nvila.py:7-9).
NVILA = (
    "the official wrapper ran hand-patched copies of the checkpoint's remote code kept in its repository "
    "(vlm_model/nvila.py:40-45 imports vlm_model/nvila_{2b_ef8fa9c8,8b_e2481b0c}/modeling_vila.py; its FIXMEs, "
    "nvila.py:7-9, patch VILAPretrainedModel.from_pretrained, modeling_vila.py:425, and build_llm_and_tokenizer's "
    "attention setting, builder.py:191), written for transformers 4.49; the checkpoint's config is model_type "
    "`vila`, VILAForCausalLM mapped to AutoModel and AutoModelForCausalLM only (modeling_vila.py:273-280): "
    "transformers 5.20.2 has no `vila` model, none image-text-to-text, and vLLM 0.33 registers no VILA architecture"
)


def _same(name: str, alias: str, ran: str, rules: tuple[TaskRule, ...] = (), **args: str) -> PaperModel:
    return PaperModel(name, ran, alias, args=args, rules=rules)


MODELS = (
    _same("Qwen2-VL-2B", "qwen2-vl-2b", "Qwen/Qwen2-VL-2B-Instruct"),
    _same("Qwen2-VL-7B", "qwen2-vl", "Qwen/Qwen2-VL-7B-Instruct"),
    _same("Qwen2-VL-72B", "qwen2-vl-72b-awq", "Qwen/Qwen2-VL-72B-Instruct-AWQ"),
    _same("Qwen2.5-VL-3B", "qwen2.5-vl-3b", "Qwen/Qwen2.5-VL-3B-Instruct"),
    _same("Qwen2.5-VL-7B", "qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct"),
    _same("Qwen2.5-VL-32B", "qwen2.5-vl-32b", "Qwen/Qwen2.5-VL-32B-Instruct"),
    _same("Qwen2.5-VL-72B", "qwen2.5-vl-72b-awq", "Qwen/Qwen2.5-VL-72B-Instruct-AWQ"),
    # run_eval.sh: InternVL3-1B, InternVL2.5-1B/4B and InternVL2-1B with defaults at every length.
    _same("InternVL3-1B", "internvl3-1b", "OpenGVLab/InternVL3-1B", ()),
    _same("InternVL3-2B", "internvl3-2b", "OpenGVLab/InternVL3-2B", INTERNVL_HF),
    _same("InternVL3-8B", "internvl", "OpenGVLab/InternVL3-8B", INTERNVL_HF),
    _same("InternVL3-14B", "internvl3-14b", "OpenGVLab/InternVL3-14B", INTERNVL_HF),
    _same("InternVL3-38B", "internvl3-38b", "OpenGVLab/InternVL3-38B", INTERNVL_HF),
    _same("InternVL2.5-1B", "internvl2.5-1b", "OpenGVLab/InternVL2_5-1B", ()),
    _same("InternVL2.5-2B", "internvl2.5-2b", "OpenGVLab/InternVL2_5-2B", INTERNVL_VLLM),
    _same("InternVL2.5-4B", "internvl2.5-4b", "OpenGVLab/InternVL2_5-4B", ()),
    _same("InternVL2.5-8B", "internvl2.5-8b", "OpenGVLab/InternVL2_5-8B", INTERNVL_VLLM),
    _same("InternVL2.5-26B", "internvl2.5-26b", "OpenGVLab/InternVL2_5-26B", INTERNVL_VLLM),
    _same("InternVL2-1B", "internvl2-1b", "OpenGVLab/InternVL2-1B", ()),
    _same("InternVL2-2B", "internvl2-2b", "OpenGVLab/InternVL2-2B", INTERNVL_VLLM),
    _same("InternVL2-4B", "internvl2-4b", "OpenGVLab/InternVL2-4B", INTERNVL_VLLM),
    _same("InternVL2-8B", "internvl2-8b", "OpenGVLab/InternVL2-8B", INTERNVL_VLLM),
    *(
        _same(f"Ovis2-{size}", alias, f"AIDC-AI/Ovis2-{size}", OVIS2)
        for size, alias in (
            ("1B", "ovis2-1b"),
            ("2B", "ovis2"),
            ("4B", "ovis2-4b"),
            ("8B", "ovis2-8b"),
            ("16B", "ovis2-16b"),
            ("34B", "ovis2-34b"),
        )
    ),
    *(
        _same(f"Gemma3-{size}", alias, f"google/gemma-3-{size.lower()}-it", GEMMA3)
        for size, alias in (("4B", "gemma3-4b"), ("12B", "gemma3"), ("27B", "gemma3-27b"))
    ),
    _same("Idefics2-8B", "idefics2", "HuggingFaceM4/idefics2-8b", IDEFICS2),
    _same("Idefics2-8B-C", "idefics2-chatty", "HuggingFaceM4/idefics2-8b-chatty", IDEFICS2_CHATTY),
    _same("Mantis-Idefics2", "mantis-idefics2", "TIGER-Lab/Mantis-8B-Idefics2"),
    _same("Idefics3-8B", "idefics3", "HuggingFaceM4/Idefics3-8B-Llama3", IDEFICS3),
    _same("Phi-3-Vision", "phi3-vision", "microsoft/Phi-3-vision-128k-instruct", PHI3),
    _same("Phi-3.5-Vision", "phi3.5-vision", "microsoft/Phi-3.5-vision-instruct", PHI3),
    _same("Phi-4-Multimodal", "phi4-multimodal", "microsoft/Phi-4-multimodal-instruct", PHI4),
    _same("Pixtral-12B", "pixtral", "mistral-community/pixtral-12b", PIXTRAL),
    PaperModel("GPT-4o", "gpt-4o-2024-11-20", "gpt-4o", BY_URL, args=OPENAI_ARGS, rules=GPT4O, paper_score=EVAL_API),
    PaperModel(
        "Claude-3.7-Sonnet",
        "claude-3-7-sonnet-20250219",
        "claude-3.7-sonnet",
        "a row of over 100 images is recorded too_many_images, where the paper left its whole category N/A; at "
        f"32K-128K {BY_URL}",
        args=OPENAI_ARGS,
        rules=CLAUDE,
        not_run=CLAUDE_NOT_RUN,
        paper_score=EVAL_API,
    ),
    *(
        PaperModel(name, model, alias, args=GEMINI_ARGS, rules=GEMINI, paper_score=EVAL_API)
        for name, model, alias in (
            ("Gemini-2.0-Flash", "gemini-2.0-flash-001", "gemini-2.0-flash"),
            ("Gemini-2.0-Flash-T", "gemini-2.0-flash-thinking-exp-01-21", "gemini-2.0-flash-thinking"),
            ("Gemini-2.5-Flash", "gemini-2.5-flash-preview-04-17", "gemini-2.5-flash"),
            ("Gemini-2.5-Pro", "gemini-2.5-pro-preview-03-25", "gemini-2.5-pro"),
        )
    ),
    PaperModel("NVILA-Lite-2B", "Efficient-Large-Model/NVILA-Lite-2B-hf-preview", reason=NVILA),
    PaperModel("NVILA-Lite-8B", "Efficient-Large-Model/NVILA-Lite-8B-hf-preview", reason=NVILA),
)

# The models only the paper's ablations ran (App. E.9, E.11; none is in Figures 22-26).
#
# Its text-only LLMs ("w/ LLM", Figures 9-10, App. E.11): run_analysis.sh:35-63,132-160 runs them on the
# `text_docqa` and `text_rag` configs through vlm_model/text_only_model.py; the figures' rows read the `_yarn` result
# folders (figure_scripts/15_rag_modal_difficulty.py:30-32,94-95, 15_docqa_modal_difficulty.py:31-33,104-105; the
# folder `--use_yarn` names, scripts/eval_task_manager.py:14-15), so they ran with YaRN, factor 4
# (text_only_model.py:116-124), which the run_analysis.sh lines as published do not pass.
LLM_ONLY = (
    NotRun(
        ("mmlongbench_[!a]*", "mmlongbench_ablation_occ_*", "mmlongbench_ablation_text_haystack_*"),
        "the paper ran its text-only LLMs on the two text ablation sets only (run_analysis.sh)",
    ),
)
# V2PE on InternVL2-2B (App. E.9, Figure 16): run_eval.sh:349-375 runs a local folder on every task at 128K with
# `--do_prefill` and `--v2pe_step` 16, 64 (the default, arguments.py:62) and 256 (figure_scripts/18_internvl2_V2PE.py
# names them "V2PE (16)", "V2PE (64)", "V2PE (256)").
V2PE = (
    "the official wrapper (vlm_model/internv2pe.py:278-290,362-374) loads the InternVLChatModel of an InternVL fork it "
    "keeps (vlm_model/internvl_v2pe/) and calls its chat() with rope_pos_id_version='v2pe_fix' and "
    "rope_pos_id_stride=N: each image token's position advances by N/256 of a step (get_rope_pos_id, "
    "modeling_internvl_chat.py:637-700; the fork's InternLM2 rotary embedding takes the fractional positions, "
    "modeling_internlm2.py:508); vLLM 0.33's InternVLChatModel loads InternVL2-2B but places every token at a whole "
    "position (the engine's own), and transformers 5.20.2 has no InternLM2 model (InternVL2-2B's language model) to "
    "give fractional ones to: no maintained path gives V2PE's positions"
)
V2PE_RAN = "/workspace/zw/V2PE-256K (a local folder: V2PE-256K on InternVL2-2B), v2pe_step {step}"
ABLATIONS = (
    *(
        PaperModel(name, f"Qwen/{name}", alias, args={"yarn_factor": "4"}, not_run=LLM_ONLY)
        for name, alias in (
            ("Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct"),
            ("Qwen2.5-32B-Instruct", "qwen2.5-32b-instruct"),
        )
    ),
    *(PaperModel(f"V2PE ({step})", V2PE_RAN.format(step=step), reason=V2PE) for step in (16, 64, 256)),
)

PAPER_MODELS = PaperModels(MODELS, ablations=ABLATIONS)
