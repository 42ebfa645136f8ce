"""`sglang` backend: SGLang's offline `sglang.Engine` (SGLang 0.5.23), all of a run's requests in few large calls.

    harness --model sglang --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct,context_length=32768,tp_size=2

* Every `--model_args` key that is not the backend's own (`settings.SGLangSettings`) is a field of SGLang's own
  `ServerArgs` (`Engine(**kwargs)`: `tp_size`, `mem_fraction_static`, `chunked_prefill_size`, `attention_backend`,
  ...) or `SamplingParams` (`top_k`, `repetition_penalty`, ... given to every request), typed by SGLang's declaration
  and its CLI's choices (`harness.models.shared.engine_args`); an unknown key is refused naming the nearest, and the few the
  backend sets itself are refused saying why (`settings.SERVER_REFUSED`, `SAMPLING_REFUSED`).
* Each prompt is rendered by the checkpoint's own chat template, through its hf processor, as the prompt style says
  (`harness.models.facts.prompt_style`, the same input policies and styles as `vllm`), and sent to `Engine.generate` as
  text with its images, decoded, in the order of their placeholders (`image_data`: one list a prompt); SGLang's
  processor expands each placeholder, and the backend counts it the same way before sending
  (`harness.models.shared.engine_count`): a prompt that does not fit is recorded `over_length` without reaching the engine,
  which would refuse the whole call. A call the engine still rejects for one request is bisected.
* Requests run in the cache order (`request_order=cache`, `harness.models.shared.scheduling.prefix_order`): RadixAttention
  keeps the KV of every prompt prefix, each image entering the ids as pad values from its hash, so the rows that
  share a haystack (an id at several depths and lengths) reuse its prefill when they run one after another.
* SGLang's image-embedding cache (`SGLANG_VLM_CACHE_SIZE_MB`, 100 MB by default: a fraction of one 128K prompt's
  images) is sized from the run's images before the engine starts, and the run says so in one line
  (`requests.ImageCache`); a value the environment gives is kept.
* The image processor's settings are the engine's (`max_pixels`, `min_pixels`, `mm_process_config`): SGLang applies
  one to every request, so a request asking another (an alias's per-task rule) is recorded `invalid_input`, unless
  every request of the run asks the same, which then becomes the engine's.

SGLang is imported only to read its declarations and to build the engine, so this package imports without it. Its
modules: `settings` (the `--model_args` and `Engine`'s arguments), `requests` (sampling, the generate
batch, outputs, the image cache: pure functions), `backend` (the registered `SGLangModel` and its `LocalEngine`, one
`sglang.Engine` in this process); here, its `--screen_only` stand-in and its declaration (`BACKEND`).
"""

from __future__ import annotations

from harness.models.backend_spec import engine_backend
from harness.models.shared.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    """The `--screen_only` stand-in: the backend's own count (`SGLangModel.prompt_tokens`, the same function the run
    screens with): the checkpoint's hf processor as SGLang's processor expands it, loaded offline like `hf`'s (exact);
    where it cannot be loaded offline, the family's rule plus `length_margin` (an estimate). No engine is built."""
    from harness.models.backends.sglang_engine.backend import SGLangModel
    from harness.models.backends.sglang_engine.settings import model_settings

    settings = model_settings(args)
    backend = SGLangModel(settings, count_online=False)  # the run's code path; its engine is built by generate only
    return backend.screen(max_images=backend.facts.max_images)


def _from_hf_alias(args: dict[str, str]) -> dict[str, str]:
    """An `hf` alias run with `backend=sglang`: the engine allocates for a length (the official serve line's where hf
    had none), SGLang's `context_length`."""
    from harness.models.facts.alias import switched_from_hf

    return switched_from_hf(args, "context_length")


BACKEND = engine_backend("sglang", screen_model, _from_hf_alias)
