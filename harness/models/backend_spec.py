"""`BackendSpec`: what the harness knows of a backend outside its own package, declared once, in the package
(`BACKEND`), and found by the backend's name through `harness.models.registry`.

Every place that once kept a table of backends or compared a backend's name reads a field here instead: the
extra a run needs installed (`harness.run.requirements`), whether `--device` and `--trust_remote_code` reach it
(`harness.run.lm_eval_flags`), whether `--max_batch_tokens` sizes its batches (`harness.run.plan`), whether and how it
runs as Ray replicas (`harness.models.backends.replicas`), its `--screen_only` stand-in (`harness.running.screen_only`), the
argument a judged task's own judge model fills (`harness.run.execute`), the arguments `--batch`, the output folder and
`--no_progress` fill (`harness.run.models`), its results folder's name (`harness.outputs.results.results`), its label
in reports (`harness.outputs.results.model_results`), how an alias written for another backend is switched to it
(`harness.models.aliases`), lm-eval's and lmms-eval's names for it and their model arguments it reads
(`harness.models.shared.foreign_args`), and what `--gen_kwargs` keys beyond the generation settings become
(`harness.run.plan`). A spec is import-light: reading it imports none of the backend's code (its `module` is
imported when the backend is built) and nothing its extra brings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.models.shared.foreign_args import ForeignArg
    from harness.models.shared.screen_model import ScreenModel

ArgsSwitch = Callable[[dict[str, str]], dict[str, str]]


@dataclass(frozen=True)
class Extra:
    """An extra of pyproject.toml a backend needs, checked before the run's first sample."""

    name: str  # installed by `pip install -e '.[NAME]'`
    modules: tuple[str, ...]  # the modules it brings that the backend imports


@dataclass(frozen=True)
class Replicas:
    """How the backend runs as `data_parallel_size` Ray replicas (`harness.models.backends.replicas`): what one replica
    reserves, from the backend's settings (the `settings` of the backend built without weights, None for a backend
    that keeps none); or `refused`, why it never runs so."""

    gpus: Callable[[Any], float] = lambda settings: 0.0  # GPUs one replica reserves, where the cluster has GPUs
    cpus: Callable[[Any], float] = lambda settings: 1.0  # CPUs one replica reserves where it reserves no GPU
    refused: str = ""  # why replicas of it make no sense (a client of a server that schedules its own requests)
    # The backend without its weights (the pool's front) holds the identity its replicas will (an engine built on its
    # first batch): the replicas start when a batch goes, and a run with nothing left to send starts none.
    front_identity: bool = False


@dataclass(frozen=True)
class EngineSampling:
    """A backend whose engine takes sampling arguments of its own beyond the generation settings (`GenerationSettings`):
    the run's `--gen_kwargs` keys that are none of those are checked by `check` (a `ValueError` naming one that is
    not the engine's, typed by the engine's own declaration: vLLM's `SamplingParams`) and handed to the backend as
    its model argument `arg`, one JSON object, so that every request of the run gets them."""

    arg: str
    check: Callable[[Mapping[str, object]], None]


@dataclass(frozen=True)
class BackendSpec:
    """One backend, as the harness outside its package knows it. The defaults are a backend that needs nothing
    installed, takes no device, runs no checkpoint code and replicates on one CPU each."""

    module: str  # the module whose `@register_model` makes the backend's `Model`, imported when it is built
    extra: Extra | None = None
    takes_device: bool = False  # `--device D` becomes its `device=D` model argument
    runs_remote_code: bool = False  # `--trust_remote_code` becomes its `trust_remote_code=true`
    token_budget: bool = False  # `--max_batch_tokens` sizes its batches
    replicas: Replicas = Replicas()
    # `--screen_only`'s stand-in from the backend's `--model_args`: its limits and its count of a prompt, without the
    # model loaded. None: the backend itself stands in (it loads nothing to count).
    screen: Callable[[dict[str, str]], ScreenModel] | None = None
    # The results folder holds its name before the checkpoint's (`vllm__ORG__NAME`): the same checkpoint through
    # another backend is another run. False: the checkpoint's name alone, as lm-eval names it.
    folder_label: bool = True
    plain: bool = False  # reports label its results with the model's name alone, not "name (backend)"
    # The argument that names the model a server answers with: a judged task's own judge model (the paper's GPT-4o)
    # goes there unless the run names one. None: its judge is what the run gives.
    served_model_arg: str | None = None
    reads_random_answer: bool = False  # draws from a request's `random_answer` (sent along to its replicas)
    # The argument `--batch` fills with the run's batch journal (a path): its requests then go through the provider's
    # batch interface. None: it has none (`--batch` refused, named).
    batch_arg: str | None = None
    # The argument the run fills with a file in its output folder for its engine's processes' log (a replica's named
    # by its rank), and the one `--no_progress` sets false: its engine's own progress bars. None: it has none.
    engine_log_arg: str | None = None
    progress_arg: str | None = None
    # Its requests are billed by a provider: `--screen_only` prices them (a model without a price says so). False: a
    # local model, priced only where the price table names it.
    priced: bool = False
    # An alias written for another backend (by that backend's name), switched to this one with `backend=`: its
    # arguments as this backend takes them.
    adopts_alias: Mapping[str, ArgsSwitch] = field(default_factory=dict)
    # lm-eval's and lmms-eval's names for this backend (`--model hf-multimodal`), each with whose it is ("lm-eval"),
    # and what their model arguments that it does not take become here (`harness.models.shared.foreign_args`).
    known_as: Mapping[str, str] = field(default_factory=dict)
    foreign_args: Mapping[str, ForeignArg] = field(default_factory=dict)
    # Its engine's own sampling arguments, from `--gen_kwargs` (`harness.run.plan`). None: a key that is no generation
    # setting is refused.
    engine_sampling: EngineSampling | None = None


ScreenOf = Callable[[dict[str, str]], "ScreenModel"]


def api_backend(name: str, package: str, modules: tuple[str, ...], servers: str, screen: ScreenOf) -> BackendSpec:
    """An API backend (`openai`, `gemini`, `anthropic`; its `Model` in `package`'s `model`): its requests priced,
    `--batch` through the provider's batch interface, and no replicas: `servers` schedule the requests, and replicas
    of a client would only multiply the load on them."""
    return BackendSpec(
        module=f"{package}.model",
        extra=Extra(name, modules),
        replicas=Replicas(refused=f"the {name} backend sends requests to {servers}"),
        screen=screen,
        batch_arg="batch_journal",
        priced=True,
    )


def engine_gpus(settings: Any) -> float:
    return float(settings.gpus)  # one engine's (`engine_args.EngineSettings.gpus`)


def engine_backend(name: str, screen: ScreenOf, from_hf: ArgsSwitch) -> BackendSpec:
    """An offline engine backend (`vllm`, `sglang`, in `harness.models.backends.NAME_engine`): it runs the checkpoint's remote
    code, a replica reserves one engine's GPUs, and an `hf` alias runs on it as `from_hf` switches it."""
    return BackendSpec(
        module=f"harness.models.backends.{name}_engine.backend",
        extra=Extra(name, (name,)),
        runs_remote_code=True,
        replicas=Replicas(gpus=engine_gpus, front_identity=True),
        screen=screen,
        adopts_alias={"hf": from_hf},
    )
