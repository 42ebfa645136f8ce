"""Each family's published chat template, transcribed from public sources (the checkpoints' `tokenizer_config.json`
or `processor_config.json`/`chat_template.json` as transformers' conversion scripts and processor tests, vLLM's and
llama.cpp's template tests, and NVIDIA Cosmos' Pixtral tokenizer quote them), for the offline rendering tests
(`tests/harness/models/test_family_rendering.py`). The long templates of the families the papers never ran are
files of `published_templates/`, each exactly as its source holds it, their sources named below."""

from __future__ import annotations

from pathlib import Path

PUBLISHED = Path(__file__).parent / "published_templates"


def published(name: str) -> str:
    """`published_templates/<name>.jinja`, as the file holds it (no newline added)."""
    return (PUBLISHED / f"{name}.jinja").read_text(encoding="utf-8")


# Qwen2-VL-2B-Instruct and the Qwen2.5-VL checkpoints (tokenizer_config.json).
QWEN2_VL = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in "
    "content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] "
    "== 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content "
    "%}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "<|im_start|>assistant\n{% endif %}"
)

# google/gemma-3-*-it (transformers' tests/models/gemma3/test_processing_gemma3.py quotes it).
GEMMA3 = (
    "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n    {%- set first_user_prefix = "
    "messages[0]['content'][0]['text'] + '\n\n' -%}\n    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n"
    '    {%- set first_user_prefix = "" -%}\n    {%- set loop_messages = messages -%}\n{%- endif -%}\n'
    "{%- for message in loop_messages -%}\n    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    '        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}\n'
    "    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n"
    '        {{ raise_exception("Invalid content type") }}\n    {%- endif -%}\n'
    "    {{ '<end_of_turn>\n' }}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n"
)

# HuggingFaceM4/idefics2-8b, -8b-chatty and Mantis-8B-Idefics2 (processor_config.json, as text-generation-inference's
# template tests quote it); Idefics3-8B-Llama3's is the same after "<|begin_of_text|>".
IDEFICS2 = (
    "{% for message in messages %}{{message['role'].capitalize()}}{% if message['content'][0]['type'] == 'image' %}"
    "{{':'}}{% else %}{{': '}}{% endif %}{% for line in message['content'] %}{% if line['type'] == 'text' %}"
    "{{line['text']}}{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
IDEFICS3 = "<|begin_of_text|>" + IDEFICS2

# microsoft/Phi-3-vision-128k-instruct and Phi-3.5-vision-instruct (tokenizer_config.json; llama.cpp's template tests).
PHI3_VISION = (
    "{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + '<|end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt and messages[-1]['role'] != 'assistant' %}{{- '<|assistant|>\n' -}}"
    "{% endif %}"
)

# mistral-community/pixtral-12b, the revision the paper ran: text chunks under "content" (NVIDIA Cosmos'
# image_text_tokenizer.py quotes it; later revisions read "text" too).
PIXTRAL = (
    '{%- if messages[0]["role"] == "system" %}\n    {%- set system_message = messages[0]["content"] %}\n'
    "    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages %}\n{%- endif %}\n\n"
    "{{- bos_token }}\n{%- for message in loop_messages %}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n"
    "        {{- raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}\n    {%- endif %}\n"
    '    {%- if message["role"] == "user" %}\n        {%- if loop.last and system_message is defined %}\n'
    '            {{- "[INST]" + system_message + "\n\n" }}\n        {%- else %}\n            {{- "[INST]" }}\n'
    '        {%- endif %}\n        {%- if message["content"] is not string %}\n'
    '            {%- for chunk in message["content"] %}\n                {%- if chunk["type"] == "text" %}\n'
    '                    {{- chunk["content"] }}\n                {%- elif chunk["type"] == "image" %}\n'
    '                    {{- "[IMG]" }}\n                {%- else %}\n'
    '                    {{- raise_exception("Unrecognized content type!") }}\n                {%- endif %}\n'
    '            {%- endfor %}\n        {%- else %}\n            {{- message["content"] }}\n        {%- endif %}\n'
    '        {{- "[/INST]" }}\n    {%- elif message["role"] == "assistant" %}\n'
    '        {{- message["content"] + eos_token}}\n    {%- else %}\n'
    '        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial '
    'optional system message!") }}\n    {%- endif %}\n{%- endfor %}'
)

# The transformers-native conversions (transformers' convert_internvl_weights_to_hf.py, convert_ovis2_weights_to_hf.py).
INTERNVL_HF = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n'}}{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}"
    "{{ '<IMG_CONTEXT>\n' }}{% elif content['type'] == 'video' %}{{ '<video>\n' }}{% elif content['type'] == 'text' %}"
    "{{ content['text'] }}{% endif %}{% endfor %}{% endif %}{{'<|im_end|>\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{'<|im_start|>assistant\n' }}{% endif %}"
)
OVIS2_HF = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n'}}{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}{{ '<image>\n' }}"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{'<|im_end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\n' }}{% endif %}"
)

# llava-hf/llava-1.5-7b-hf (chat_template.json).
LLAVA_1_5 = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}{% endif %}"
    "{# Render all images first #}{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' '}}"
    "{% endfor %}{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{% generation %}{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


# llava-hf/llava-v1.6-mistral-7b-hf (chat_template.json), as OpenVINO GenAI's tokenizer quotes it
# (`src/cpp/src/tokenizer.cpp`, `chat_template_fallback_map`: "tiny-random-llava-next, llava-v1.6-mistral"; its `<\s>`
# as written there). The same table gives llava-v1.6-vicuna-*-hf LLaVA-1.5's template (`LLAVA_1_5`).
LLAVA_NEXT_MISTRAL = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{ '<<SYS>>\n' + message['content'][0]['text'] + "
    "'\n<</SYS>>\n\n' }}{% elif message['role'] == 'user' %}{{ '[INST] ' }}{# Render all images first #}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{# Render all text next #}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] }}{% endfor %}{{' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ ' ' + message['content'][0]['text'] + '<\\s> '}}{% else %}"
    "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
)
# llava-hf/llama3-llava-next-8b-hf: Llama 3's headers, every image of a turn before its text, as a public evaluation
# script's table of LLaVA-NeXT templates (`chat_templates["LlavaNextForConditionalGeneration"]["LlamaForCausalLM"]`)
# transcribes it; no stored source holds the checkpoint's own file.
LLAVA_NEXT_LLAMA3 = (
    "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'}}"
    "{# Render all images first #}{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>' }}{% endfor %}{# Render all text next #}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ '\n' + content['text'] + '<|eot_id|>' }}{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)


# --- the families the papers never ran (issue 51, item 6) ---------------------------------------------------------

# xorbitsai/inference's model registry (`xinference/model/llm/llm_family.json` at 7ecec16), "Qwen3-VL-Instruct" and
# "Qwen3-VL-Thinking", and "glm-4.5v": its transcriptions of the checkpoints' templates, which no stored source holds.
QWEN3_VL = published("qwen3_vl_instruct")
QWEN3_VL_THINKING = published("qwen3_vl_thinking")
GLM4_5V = published("glm4_5v")
# zai-org/GLM-4.1V-9B-Thinking's chat_template.jinja at revision 3c1471e5, as a public qualification record in the
# searched index quotes it (`official_chat_template`, model_id and revision named beside it).
GLM4_1V = published("glm4_1v_thinking")
# google/gemma-3n-*-it: transformers' `convert_gemma3n_weights.py` (`_CHAT_TEMPLATE`, at 0d9e0ea), which wrote them.
GEMMA3N = published("gemma3n")
# moonshotai/Kimi-VL-A3B-*: llama-cpp-python's `KimiVLChatHandler.CHAT_FORMAT` (`llama_cpp/llama_chat_format.py`), the
# conversation sglang's `kimi-vl` template describes (`python/sglang/srt/conversation.py`, which cites the checkpoint's
# chat_template.jinja).
KIMI_VL = published("kimi_vl")


def vllm_bundled(name: str) -> str:
    """A chat template the installed vLLM ships (`vllm/transformers_utils/chat_templates/<name>.jinja`), as the file
    holds it, read without importing vLLM (its import needs seconds and a GPU's libraries); the test that needs it is
    skipped where vLLM is not installed."""
    import importlib.util

    import pytest

    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        pytest.skip("vLLM is not installed: its bundled chat templates are not here")
    return (Path(spec.origin).parent / "transformers_utils" / "chat_templates" / f"{name}.jinja").read_text("utf-8")


def minicpm_v_4_5() -> str:
    """MiniCPM-V 4.5's template as vLLM 0.33.0 renders the checkpoint with it (`template_minicpmv45.jinja`, which
    `chat_templates/registry.py` gives `minicpmv` checkpoints whose name says 4.5 or 4_5): ChatML over string content,
    no system turn unless one is sent, and an empty thinking block after the generation prompt unless
    `enable_thinking` is true (then an open one). The checkpoint's own is in no stored public source."""
    return vllm_bundled("template_minicpmv45")
