"""Model aliases: a short name for a backend, a checkpoint and the settings the papers ran it with.

`--model qwen2.5-vl` resolves here; `--model_args` given on the command line override the alias's arguments
(`--model qwen2.5-vl --model_args max_pixels=401408`), and `backend=vllm` switches the backend while keeping the
checkpoint. Each alias stands for the models of MMLongBench, MileBench and MMNeedle named in its `runs` and carries
the official code's settings for them: per benchmark (`PaperRun.args`, chosen from the run's tasks), per task and
length (`rules`: the run scripts' commands split by `--task_list` and `--length_list`), and the prompt as the
official wrapper built it (`prompt_style`). Where it departs on purpose, its run says so and why; the results record
all of it (`config.alias_info`, `config.input_policies`). Every paper model without an alias is listed in
`WITHOUT_ALIAS` with the reason (`harness models` prints both).

No alias caps a prompt's length where the official code did not: the official wrappers ran every length untruncated
(MMLongBench App. D: inputs past the training window run "as they are"), so every `hf` alias sets
`no_context_limit=true`; `trained_context` records the training window and is never enforced. A vLLM engine needs a
length to allocate for: the `vllm` aliases give it the official `vllm serve` line's 139264. MileBench's own rule
(truncate from the left to the model's context) needs the model's context: its runs restore it.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.errors import UserError
from harness.models.aliases import api, gemma, idefics, internvl, llava, ovis, phi, pixtral, qwen
from harness.models.aliases.alias import BENCHMARKS, PAPER_TITLES, Alias, PaperRun, benchmark_args, benchmarks_of
from harness.models.aliases.without_alias import WITHOUT_ALIAS, NoAlias
from harness.models.registry import backend_spec
from harness.models.remote_code import alias_trust

__all__ = [
    "ALIASES",
    "BENCHMARKS",
    "PAPER_TITLES",
    "WITHOUT_ALIAS",
    "Alias",
    "NoAlias",
    "PaperRun",
    "benchmarks_of",
    "resolve",
]

ALIASES: dict[str, Alias] = {}
for _module in (qwen, internvl, ovis, gemma, idefics, phi, pixtral, llava, api):
    for _name, _alias in _module.ALIASES.items():
        if _name in ALIASES:
            raise ValueError(f"alias {_name} is defined twice")
        ALIASES[_name] = _alias


def resolve(
    name: str, cli_args: dict[str, str], task_names: Iterable[str] = ()
) -> tuple[str, dict[str, str], str | None]:
    """(backend, merged model args, alias name or None) for `--model NAME --model_args ...` on these tasks."""
    if name not in ALIASES:
        return name, dict(cli_args), None
    alias = ALIASES[name]
    merged = {**benchmark_args(name, alias, task_names, given=cli_args), **cli_args}
    merged = alias_trust(name, alias.args.get("pretrained"), cli_args, merged)  # its trust: its checkpoint only
    if "context_length" in cli_args and "no_context_limit" not in cli_args:
        merged.pop("no_context_limit", None)  # a limit the user gives is screened against, whatever the alias says
    backend = merged.pop("backend", alias.backend)
    if not backend:
        raise UserError(f"alias {name!r}: empty backend")
    # An alias switched to another backend: its arguments as that backend takes them (`BackendSpec.adopts_alias`).
    switch = backend_spec(backend).adopts_alias.get(alias.backend) if backend != alias.backend else None
    if switch is not None:
        merged = switch(merged)
    return backend, merged, name
