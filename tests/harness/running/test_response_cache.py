"""The response cache: what the key covers, what is stored, and that a rerun makes no model call."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import replace

from harness.api import GenerationSettings, ImagePart, Message, Model, ModelFacts, Request, Response, TextPart
from harness.models.backends.openai_chat.model import OpenAIChatModel
from harness.running.cache import CACHE_FILENAME, CachingModel, ResponseCache, request_key
from tests.support.model_requests import image_ref, make_request

IDENTITY = {"model": "counting", "checkpoint": "tiny"}


class CountingModel(Model):
    """A deterministic backend that counts what reaches it; answers 'ERR' requests with an error
    and 'REFUSE' requests with a refusal."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[str] = []
        self._facts = ModelFacts(batch_size=2)

    @classmethod
    def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
        return cls()

    def identity(self):
        return dict(IDENTITY)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        self.calls += 1
        out = []
        for r in requests:
            self.seen.append(r.sample_id)
            text = " ".join(p.text for m in r.messages for p in m.content if isinstance(p, TextPart))
            if "ERR" in text:
                out.append(Response(text=None, error="error: transient"))
            elif "REFUSE" in text:
                out.append(Response(text=None, error="refused: no", refused=True))
            else:
                out.append(
                    Response(
                        text=f"{r.sample_id}:{len(r.images)}",
                        finish_reason="stop",
                        usage={"prompt_tokens": 5, "completion_tokens": 2},
                        prompt_ids_sha256=hashlib.sha256(r.sample_id.encode()).hexdigest(),
                    )
                )
        return out


def _run(model: Model, requests: Sequence[Request]) -> list[Response]:
    out: list[Response] = []
    for batch in model.batches(requests):
        out.extend(model.generate(batch))
    return out


def test_key_covers_content_not_coordinates(jpeg_red, png_blue):
    base = make_request("a", ["Find it", jpeg_red, png_blue], system="sys", doc_id=3)
    key = request_key(IDENTITY, base)
    # Same content under another task, doc and sample id: same key.
    assert request_key(IDENTITY, replace(base, task="other", doc_id=9, sample_id="zz")) == key
    variants = {
        "image order": make_request("a", ["Find it", png_blue, jpeg_red], system="sys"),
        "image bytes": make_request("a", ["Find it", jpeg_red, jpeg_red], system="sys"),
        "text": make_request("a", ["Find it!", jpeg_red, png_blue], system="sys"),
        "system": make_request("a", ["Find it", jpeg_red, png_blue], system="other sys"),
        "prefix": make_request("a", ["Find it", jpeg_red, png_blue], system="sys", prefix="Answer:"),
        "settings": make_request(
            "a", ["Find it", jpeg_red, png_blue], system="sys", settings=GenerationSettings(max_gen_toks=17)
        ),
        "seed": make_request(
            "a", ["Find it", jpeg_red, png_blue], system="sys", settings=GenerationSettings(max_gen_toks=16, seed=1)
        ),
    }
    role_swap = replace(base, messages=(Message("user", (TextPart("sys"),)), base.messages[1]))
    variants["role"] = role_swap
    keys = {name: request_key(IDENTITY, r) for name, r in variants.items()}
    assert all(k != key for k in keys.values()), keys
    assert len(set(keys.values())) == len(keys)
    assert request_key({**IDENTITY, "checkpoint": "other"}, base) != key
    # The image's content hash is what counts, not the ImageRef object or its loader.
    fresh = Request(
        **{
            **base.__dict__,
            "messages": (
                base.messages[0],
                Message("user", (TextPart("Find it"), ImagePart(image_ref(jpeg_red)), ImagePart(image_ref(png_blue)))),
            ),
        }
    )
    assert request_key(IDENTITY, fresh) == key


def test_rerun_makes_zero_model_calls(tmp_path, jpeg_red):
    requests = [make_request(f"s{i}", [f"q{i}", jpeg_red], doc_id=i) for i in range(5)]
    requests.append(make_request("bad", ["ERR please"], doc_id=5))
    requests.append(make_request("ref", ["REFUSE please"], doc_id=6))

    first = CachingModel(CountingModel(), ResponseCache(tmp_path / CACHE_FILENAME))
    answers = _run(first, requests)
    assert first.model_calls == 4 and first.requests_sent == 7 and first.cache_hits == 0
    first.close()
    assert (tmp_path / CACHE_FILENAME).is_file()

    inner = CountingModel()
    second = CachingModel(inner, ResponseCache(tmp_path / CACHE_FILENAME))
    again = _run(second, [r for r in requests if r.sample_id != "bad"])
    assert inner.calls == 0 and second.model_calls == 0 and second.cache_hits == 6
    assert again == [a for r, a in zip(requests, answers, strict=True) if r.sample_id != "bad"]
    assert again[-1].refused and again[-1].error == "refused: no"  # refusals are cached, flag kept
    # the prompt's ids a replayed answer was given, as the engine reported them (its record says so again)
    kept = [a.prompt_ids_sha256 for r, a in zip(requests, answers, strict=True) if r.sample_id != "bad"]
    assert [a.prompt_ids_sha256 for a in again] == kept
    assert again[0].prompt_ids_sha256 == hashlib.sha256(b"s0").hexdigest()
    # The failed sample was not cached: it goes to the model again, alone.
    assert second.generate([requests[5]])[0].error == "error: transient"
    assert inner.seen == ["bad"] and second.model_calls == 1
    second.close()


def test_sampled_requests_without_seed_are_not_cached(tmp_path):
    sampled = make_request("x", ["hi"], settings=GenerationSettings(do_sample=True, temperature=0.8))
    seeded = make_request("y", ["hi"], settings=GenerationSettings(do_sample=True, temperature=0.8, seed=4))
    inner = CountingModel()
    model = CachingModel(inner, ResponseCache(tmp_path / "c.sqlite3"))
    model.generate([sampled, seeded])
    model.generate([sampled, seeded])
    assert inner.seen == ["x", "y", "x"]
    model.close()


def test_wrapper_passes_the_backend_through(tmp_path):
    inner = CountingModel()
    inner._facts = replace(inner.facts, context_length=4096, max_images=8)
    model = CachingModel(inner, ResponseCache(tmp_path / "c.sqlite3"))
    assert (model.facts, model.identity()) == (ModelFacts(context_length=4096, max_images=8, batch_size=2), IDENTITY)
    inner._facts = replace(inner.facts, max_pixels=256 * 256)  # a backend's facts as they change, read through
    request = make_request("a", ["q"], text_tokens=7)
    assert (model.facts.max_pixels, model.prompt_tokens(request), model.statistics()) == (256 * 256, 7, {})
    model.generate([request])
    assert [r.text for r in model.generate([make_request("b", ["q"]), make_request("c", ["other"])])] == ["a:0", "c:0"]
    assert model.cache_hits == 1 and inner.seen == ["a", "c"]
    model.close()


def test_cache_survives_a_killed_process(tmp_path):
    path = tmp_path / "cache.sqlite3"
    script = textwrap.dedent(f"""
        import os
        from harness.api import Response
        from harness.running.cache import ResponseCache
        cache = ResponseCache({str(path)!r})
        cache.put_many([("k1", Response(text="one", usage={{"prompt_tokens": 3}})), ("k2", Response(text=None, error="boom"))])
        os._exit(9)  # killed: no close, no cleanup
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 9, result.stderr
    cache = ResponseCache(path)
    found = cache.get_many(["k1", "k2"])
    assert list(found) == ["k1"] and found["k1"].text == "one" and found["k1"].usage == {"prompt_tokens": 3}
    assert len(cache) == 1
    cache.close()


def test_corrupt_cache_file_is_a_clear_error(tmp_path):
    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    try:
        ResponseCache(path)
    except ValueError as err:
        assert str(path) in str(err) and "delete it" in str(err)
    else:
        raise AssertionError("a corrupt cache file was accepted")


def test_cached_openai_rerun_sends_nothing(tmp_path, chat_server, jpeg_red):
    requests = [make_request(f"o{i}", [f"#id=o{i} #do=ok", jpeg_red], doc_id=i) for i in range(4)]
    args = {"model": "m", "base_url": chat_server.base_url, "concurrency": "2"}
    first = CachingModel(OpenAIChatModel.from_args(args), ResponseCache(tmp_path / CACHE_FILENAME))
    answers = _run(first, requests)
    first.close()
    assert len(chat_server.received) == 4
    second = CachingModel(OpenAIChatModel.from_args(args), ResponseCache(tmp_path / CACHE_FILENAME))
    assert _run(second, requests) == answers
    second.close()
    assert len(chat_server.received) == 4 and second.model_calls == 0


DAMAGED_ROWS = [
    "5",
    "[1, 2]",
    "not json",
    "null",
    '{"text": 5, "error": null, "refused": false}',
    '{"text": ["a"], "error": null, "refused": false, "finish_reason": null, "usage": {}}',
    '{"text": "t", "error": null, "refused": false, "finish_reason": null, "usage": {"n": "many"}}',
    "[" * 5000 + "]" * 5000,
]


def test_a_damaged_cache_row_is_a_miss_asked_again_and_replaced(tmp_path, capsys):
    """Issue 30, item 9: a row whose text is a number or a list gave a traceback, and a row that is not JSON failed
    every sample on every rerun."""
    import sqlite3

    requests = [make_request(f"s{i}", [f"question {i}"], doc_id=i) for i in range(len(DAMAGED_ROWS) + 1)]
    first = CachingModel(CountingModel(), ResponseCache(tmp_path / CACHE_FILENAME))
    expected = _run(first, requests)
    keys = first.keys(requests)
    first.close()
    with sqlite3.connect(tmp_path / CACHE_FILENAME) as db:
        for key, payload in zip(keys, DAMAGED_ROWS, strict=False):  # the last request's row stays sound
            db.execute("UPDATE responses SET response = ? WHERE key = ?", (payload, key))
    backend = CountingModel()
    again = CachingModel(backend, ResponseCache(tmp_path / CACHE_FILENAME))
    assert _run(again, requests) == expected
    assert backend.seen == [f"s{i}" for i in range(len(DAMAGED_ROWS))] and again.cache_hits == 1
    again.close()
    assert capsys.readouterr().err.count("a damaged response-cache row is a miss") == 1
    third = CachingModel(CountingModel(), ResponseCache(tmp_path / CACHE_FILENAME))  # the rows were replaced
    assert _run(third, requests) == expected and third.cache_hits == len(requests) and third.model.calls == 0
    third.close()
