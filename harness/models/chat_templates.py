"""Chat templates that render a conversation as an official wrapper's own conversation class did, for the families
whose wrapper never used the checkpoint's chat template (InternVL's `model.chat` with its `conversation.py`,
MileBench's LLaVA worker with LLaVA's `conv_templates["llava_llama_2"]`). Each takes string content (images already
placed as markers, `harness.models.prompt_style`) and is a transcription of the class's `get_prompt`: the same text for
the same turns, reimplemented as Jinja.
"""

from __future__ import annotations

# InternVL's SeparatorStyle.MPT: `system_template.format(system) + sep`, then `role + message + sep` per turn and the
# assistant's role alone to generate; `internvl2_5` (InternVL2.5 and 3) separates with "<|im_end|>\n".
INTERNVL2_5 = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# `Hermes-2` (InternVL2-1B) and `internlm2-chat` (InternVL2-2B, -8B): the same turns, "<|im_end|>" with no newline.
INTERNVL2_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# `phi3-chat` (InternVL2-4B): "<|system|>\n", "<|user|>\n", "<|assistant|>\n" roles, "<|end|>" separators.
INTERNVL2_PHI3 = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# LLaVA's SeparatorStyle.LLAMA_2 (`llava_llama_2`): the system wrapped in <<SYS>> into the first [INST] turn, the
# leading "<s>" separator stripped (the tokenizer adds the BOS), nothing after " [/INST]" to generate.
LLAVA_LLAMA_2 = (
    "{% set system = messages[0]['content'] if messages[0]['role'] == 'system' else '' %}"
    "{% for message in messages if message['role'] != 'system' %}"
    "{% if message['role'] == 'user' %}{% if not loop.first %}<s>{% endif %}[INST] "
    "{% if loop.first and system %}<<SYS>>\n{{ system }}\n<</SYS>>\n\n{% endif %}{{ message['content'] }} [/INST]"
    "{% else %} {{ message['content'] }}{% endif %}{% endfor %}"
)

TEMPLATES = {
    "internvl2_5": INTERNVL2_5,
    "internvl2_chatml": INTERNVL2_CHATML,
    "internvl2_phi3": INTERNVL2_PHI3,
    "llava_llama_2": LLAVA_LLAMA_2,
}
