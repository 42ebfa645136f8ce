"""The `--model_args` every API backend takes for calling its server (`ApiCallSettings`; a backend's settings extend
it): key, address, concurrency, the bound on one attempt's time and bytes, retries, `--batch`'s journal and polling,
the request order and the provider's prompt cache (`prompt_cache`), and what the runner reads of a backend given them
(`ModelFacts`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Self

from harness.api import ModelFacts
from harness.models.facts.args import FALSE, TRUE, at_least, settings_from_args
from harness.models.shared.api_client.prompt_cache import MIN_TOKENS, CacheRule
from harness.models.shared.scheduling.prefix_order import check_order


@dataclass(frozen=True, kw_only=True)
class ApiCallSettings:
    """The `--model_args` every API backend takes for calling its server; a backend's settings extend it."""

    backend: ClassVar[str] = "api"  # the backend's name, in the messages that refuse a setting

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    concurrency: int = 8
    timeout: float = 120.0  # seconds per attempt, the whole of it (connect, send, headers, body), however slow
    # The most an answer's body may hold; default 8 bytes per character of the longest answer the request's
    # max_gen_toks allows (`GenerationSettings.max_response_chars`), plus 64 KiB. Over it: refused unread.
    max_response_bytes: int | None = at_least(1)
    max_retries: int = 6
    backoff: float = 1.0  # first retry delay (seconds); doubles each attempt, with jitter
    max_backoff: float = 60.0  # the longest wait between two attempts, a server's `Retry-After` included
    context_length: int | None = at_least(1)
    max_images: int | None = at_least(1)
    # The server's pixel cap per image, used only to count vision tokens when screening; nothing is resized here.
    max_pixels: int | None = at_least(1)
    chunk_size: int | None = at_least(1)  # requests per runner batch; default max(batch_size, 4 * concurrency)
    # `--batch` fills it: the run's batch journal; the requests then go through the provider's batch interface.
    batch_journal: str | None = None
    batch_poll: float = 30.0  # seconds between two looks at a batch in progress
    batch_wait: float = 90000.0  # the longest wait for one batch (the providers' window is 24 hours) before stopping
    # "cache": requests sharing a prompt prefix run together, across tasks (`prefix_order`); "length": long first
    request_order: str = "length"
    # The provider's prompt cache (`prompt_cache`): "auto" where the provider offers it, "true" on any server, "false"
    prompt_cache: str = "auto"
    # the shortest prefix marked; default: the model's cache minimum (`cache_minimum`)
    prompt_cache_min_tokens: int | None = at_least(1)

    def __post_init__(self) -> None:
        check_order(self.request_order, self.backend)
        said = self.prompt_cache.strip().lower()
        cache = "true" if said in TRUE else "false" if said in FALSE else said
        if cache not in ("auto", "true", "false"):
            raise ValueError(
                f"{self.backend} backend: prompt_cache must be auto, true or false, got {self.prompt_cache!r}"
            )
        object.__setattr__(self, "prompt_cache", cache)
        if not self.timeout > 0:
            raise ValueError(
                f"{self.backend} backend: timeout must be a positive number of seconds, got {self.timeout}"
            )
        for name in ("concurrency", "max_retries", "timeout", "backoff", "max_backoff", "batch_poll", "batch_wait"):
            value = getattr(self, name)
            if value < (1 if name == "concurrency" else 0):
                raise ValueError(
                    f"{self.backend} backend: {name} must be "
                    f"{'at least 1' if name == 'concurrency' else 'non-negative'}, got {value}"
                )

    def check_output_cap(self, name: str) -> None:
        """The output cap setting `name` (`token_cap`, `max_output_tokens`): "task" (the request's max_gen_toks),
        "none" (not sent) or a positive number; else a `ValueError` naming it."""
        cap = getattr(self, name)
        if cap not in ("task", "none") and not (cap.isdecimal() and int(cap) >= 1):
            raise ValueError(f"{self.backend} backend: {name} must be task, none or a positive number, got {cap!r}")

    @classmethod
    def from_args(cls, args: Mapping[str, object]) -> Self:
        """The settings `--model_args` give (`pretrained`: lm-eval's name for `model`)."""
        return settings_from_args(cls, args, cls.backend, aliases={"pretrained": "model"})

    def cache_rule(self, chunk: int) -> CacheRule | None:
        """How the backend asks its provider to cache a prompt, where it does (`prompt_cache`); None: it does not."""
        return None

    def cache_minimum(self) -> int:
        """The shortest prefix marked for the provider's cache: `prompt_cache_min_tokens`, else the model's own minimum
        where the backend knows it per model, else the smallest any of the providers caches."""
        return self.prompt_cache_min_tokens or MIN_TOKENS

    def batch_size(self, runner_batch: int) -> int:
        return self.chunk_size or max(runner_batch, 4 * self.concurrency)

    def facts(self, runner_batch: int) -> ModelFacts:
        """What the runner reads of a backend with these settings: its limits, its chunk, its order (the cache order
        across tasks, as vLLM's, `Runner.run_together`)."""
        return ModelFacts(
            context_length=self.context_length,
            max_images=self.max_images,
            max_pixels=self.max_pixels,
            batch_size=self.batch_size(runner_batch),
            request_order=self.request_order,
            generates_across_tasks=self.request_order == "cache",
        )


def reasoning_record(setting: str, sent: object, default: tuple[str, str] | None) -> dict[str, object]:
    """How much a provider's model was asked to reason, as the results' backend figures record it (`reasoning`): the
    setting's name and the value sent; where none was sent, the provider's documented default and where it says so
    (`default`: value and source), else that it is not known here."""
    if sent is not None:
        return {"setting": setting, "sent": sent}
    if default is None:
        return {"setting": setting, "sent": None, "provider_default": "not documented here"}
    return {"setting": setting, "sent": None, "provider_default": default[0], "source": default[1]}
