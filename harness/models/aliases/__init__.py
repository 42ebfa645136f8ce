"""Model aliases: a short name for a backend, a checkpoint and its settings, the same model whatever the tasks.

`--model qwen2.5-vl` resolves here; `--model_args` given on the command line override the alias's arguments
(`--model qwen2.5-vl --model_args max_pixels=401408`), and `backend=vllm` switches the backend while keeping the
checkpoint. An alias holds what is true of the model whatever the benchmark (`alias.Alias`); what a paper did with it
(its name in the paper, the checkpoint or snapshot it ran, that benchmark's arguments and per-task input rules, each
departure with its reason) is the benchmark's (`BenchmarkDeclaration.paper`, `harness.models.facts.paper_models`), read through the
run's tasks (`task_benchmarks`). The results record all of it (`config.alias_info`, `config.input_policies`).

No alias caps a prompt's length where the official code did not: the official wrappers ran every length untruncated,
so every `hf` alias sets `no_context_limit=true`; `trained_context` records the training window and is never
enforced. A vLLM engine needs a length to allocate for: the `vllm` aliases give it the official `vllm serve` line's
139264. A benchmark whose rule truncates to the model's context (`PaperModels.own_context`) gets each alias's own.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, MutableMapping

from harness.config.benchmark import BenchmarkDeclaration, declared_benchmarks
from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.inputs.input_policy import InputPolicy
from harness.models.facts.alias import Alias, benchmark_args, run_policy
from harness.models.facts.paper_models import paper_of
from harness.models.facts.remote_code import alias_trust
from harness.models.registry import available_models, backend_spec


class FamilyAliases(MutableMapping[str, Alias]):
    """Every family module's aliases, by name, each read from the family that declares it when asked for
    (`harness.models.families.alias_named`): a run of a backend by its own name (`--model random`) imports no family,
    one of an alias only its own; listing them all imports every family (`harness.models.families.aliases`)."""

    def __init__(self) -> None:
        self._added: dict[str, Alias] = {}  # set here (a test's alias), over the families'
        self._removed: set[str] = set()

    @functools.cached_property
    def _declared(self) -> dict[str, Alias]:
        from harness.models.families import aliases

        found = aliases()
        shadowed = sorted(set(found) & set(available_models()))
        if shadowed:  # a backend's own name is looked up without reading the aliases, so none may take it
            raise ValueError(f"aliases named as backends: {', '.join(shadowed)}")
        return found

    def __getitem__(self, name: str) -> Alias:
        if not isinstance(name, str) or name in available_models() or name in self._removed:
            raise KeyError(name)  # no alias has a backend's name (checked as they are listed): nothing to read
        from harness.models.families import alias_named

        found = self._added.get(name) or alias_named(name)
        if found is None:
            raise KeyError(name)
        return found

    def __setitem__(self, name: str, alias: Alias) -> None:
        self._added[name] = alias
        self._removed.discard(name)

    def __delitem__(self, name: str) -> None:
        self[name]  # a KeyError where there is none
        self._added.pop(name, None)
        self._removed.add(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name in {**self._declared, **self._added} if name not in self._removed)

    def __len__(self) -> int:
        return sum(1 for _ in self)


ALIASES = FamilyAliases()


def task_benchmarks(names: Iterable[str], index: TaskIndex | None = None) -> list[BenchmarkDeclaration]:
    """The benchmarks the tasks and groups `names` declare (`benchmark:` in their YAML; a group without one, its
    tasks'), read through the task index (the installed tasks when none is given); a name the index does not know
    declares none."""
    index = index if index is not None else _installed()
    configs: list[object] = []
    for name in names:
        config = index.tasks.get(name) or index.groups.get(name)
        if getattr(config, "benchmark", None) is not None:
            configs.append(config)
        elif name in index.groups or name in index.tags:  # a group that declares none: its tasks'
            configs += [index.tasks[task] for task in index.select([name]).tasks]
    return declared_benchmarks(configs)


def alias_benchmarks(
    model: str | None, names: Iterable[str], index: TaskIndex | None = None
) -> list[BenchmarkDeclaration]:
    """The benchmarks of the tasks `names` (`task_benchmarks`) where `model` is an alias, whose paper runs they
    hold; none otherwise, and nothing of the tasks' declarations is read (their report and viewer code)."""
    return task_benchmarks(names, index) if model in ALIASES else []


def index_benchmarks(index: TaskIndex | None = None) -> list[BenchmarkDeclaration]:
    """Every benchmark the index's tasks and groups declare (the installed tasks when none is given)."""
    index = index if index is not None else _installed()
    return declared_benchmarks([*index.tasks.values(), *index.groups.values()])


@functools.cache
def _installed() -> TaskIndex:
    return TaskIndex()


def alias_policy(
    name: str, task: str, benchmark: BenchmarkDeclaration | None = None, looked_up: bool = False
) -> InputPolicy:
    """The input policy of the alias `name` on `task`, a task of `benchmark` (`looked_up`: the run read it from the
    task's config, None when it declares none; else the benchmark the installed task declares): its own rules, then
    its paper run's there."""
    if benchmark is None and not looked_up:
        found = task_benchmarks([task])
        benchmark = found[0] if found else None
    return run_policy(ALIASES[name], name, task, paper_of(benchmark) if benchmark is not None else None)


def resolve(
    name: str, cli_args: dict[str, str], benchmarks: Iterable[BenchmarkDeclaration] = ()
) -> tuple[str, dict[str, str], str | None]:
    """(backend, merged model args, alias name or None) for `--model NAME --model_args ...` on tasks of these
    benchmarks (`task_benchmarks`)."""
    if name not in ALIASES:  # a backend's own name is none, without reading a family (`FamilyAliases`)
        return name, dict(cli_args), None
    alias = ALIASES[name]
    merged = {**benchmark_args(name, alias, benchmarks, given=cli_args), **cli_args}
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


def alias_info(
    name: str, benchmarks: Iterable[BenchmarkDeclaration] = (), args: Mapping[str, str] | None = None
) -> dict[str, object]:
    """What the results record about the alias `name` on a run of these benchmarks (`Alias.describe`), with the
    prompt its official wrapper built (the template, system message, prefill and BOS) as `args`, the arguments the
    run resolved to, name it (a benchmark's paper run may switch the style: MileBench's LLaVA); the alias's own
    without them."""
    alias = ALIASES[name]
    return {**alias.describe(name, benchmarks), "prompt": prompt_of(alias.args if args is None else args)}


def prompt_of(args: Mapping[str, str]) -> dict[str, object]:
    """The prompt style these model arguments name (`prompt_style`, else the default), described."""
    from harness.models.families import style_named

    return style_named(args.get("prompt_style", "default")).describe()


def left_out(name: str, tasks: Iterable[tuple[str, BenchmarkDeclaration | None]]) -> list[str]:
    """What a run of the alias `name` is told about its tasks that the paper's run of it left out (its paper model's
    `not_run`, per benchmark of each task): one line per reason. The run goes on (which tasks a model runs is the
    command's choice) and departs from the paper there; the report shows the paper's N/A beside ours."""
    left: dict[tuple[str, str, str], list[str]] = {}
    for task, benchmark in tasks:
        table = paper_of(benchmark) if benchmark is not None else None
        run = table.run_by(name) if table is not None else None
        why = run.not_run_why(task) if run is not None else None
        if benchmark is not None and run is not None and why:
            left.setdefault((benchmark.name, run.name, why), []).append(task)
    lines = []
    for (benchmark_name, paper_name, why), names in left.items():
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} tasks)" if len(names) > 3 else "")
        lines.append(
            f"harness: {name} runs {shown}, which {benchmark_name}'s paper did not run for {paper_name} ({why}): "
            "run as asked, departing from the paper there"
        )
    return lines
