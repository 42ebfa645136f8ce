"""Fuzz: `harness --config FILE` (issue 64). Whatever a run file holds (any key, any YAML value for any flag, long
integers, secrets, YAML's own traps), reading it ends in the options it gives or in one `UserError` line naming the
file; never a traceback of another type, never a hang. What it gives is recorded as plain JSON."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from builders.core.contract import MiB
from harness import redact
from harness.errors import UserError
from harness.models.facts.pricing import PriceTable
from harness.run.arguments import EvaluationOptions
from harness.run.declared_options import declared
from harness.run.run_file import RunFile, read_run_file

from .conftest import JSON, LONG_INTEGERS, bounded, budget, counted, deep, mutated, with_long_integers

FLAGS = [item.name for item in declared(EvaluationOptions)]
GOOD = {
    "tasks": ["mmneedle_m1_n2_k1"],
    "model": "random",
    "model_args": {"seed": 7},
    "gen_kwargs": {"max_gen_toks": 32},
    "limit": 3,
    "output_path": "results",
    "log_samples": True,
}
VALUE = st.one_of(
    JSON,
    st.sampled_from(["a,b", "k=v,api_key=sk-secret-0123456789", "0", "-1", "1e999", "nan", "auto", "", "~", "true"]),
    st.lists(st.text(max_size=8), max_size=3),
    st.dictionaries(st.sampled_from(["seed", "api_key", "x", "max_gen_toks"]), JSON, max_size=3),
)
KEYS = st.one_of(
    st.sampled_from(FLAGS), st.sampled_from(["config", "--model", "tasks ", "unknown"]), st.text(max_size=8)
)


def _dump(document: object) -> str:
    return yaml.safe_dump(document, allow_unicode=True)


DOCUMENTS = st.builds(
    lambda extra, drop: {**{k: v for k, v in GOOD.items() if k not in drop}, **extra},
    st.dictionaries(KEYS, VALUE, max_size=4),
    st.sets(st.sampled_from(list(GOOD))),
)
SPECIALS = [
    "",
    "~\n",
    "- tasks: a\n- tasks: b\n",
    "tasks: a\ntasks: b\n",
    "a: &x [*x]\n",
    "limit: *nowhere\n",
    "model: !!python/object/apply:os.system ['true']\n",
    "? [1, 2]\n: 3\n",
    "{" * 3000,
    "- " * 2000 + "x\n",
    "\xff\xfe",
    "tasks: !function utils.x\n",
    "model_args:\n  " + "a: {" * 200 + "\n",
    "limit: 0x1F\nseed: 1_000\n",
    "<<: {model: random}\n",
]
TEXT = st.one_of(
    DOCUMENTS.map(_dump),
    st.sampled_from(SPECIALS),
    st.text(max_size=80),
    st.builds(
        lambda text, at, junk: text[:at] + junk + text[at:],
        DOCUMENTS.map(_dump),
        st.integers(0, 200),
        st.text(alphabet=":-[]{}!&*?|>'\"#%@`,=\n ", max_size=6),
    ),
    st.builds(
        lambda text, key, digits: text + f"{key}: {digits}\n",
        DOCUMENTS.map(_dump),
        st.sampled_from([*FLAGS, "model_args:\n  seed", "gen_kwargs:\n  max_gen_toks"]),
        LONG_INTEGERS,
    ),
)


@budget(fuzz=3000, ci=40)
@given(text=TEXT, raw=st.booleans())
@example(text=_dump({**GOOD, "tasks": "k=v,api_key=sk-secret-0123456789"}), raw=False)  # a key outside a k=v option
def test_any_run_file_is_read_or_refused_in_one_line_naming_it(text: str, raw: bool) -> None:
    counted()
    # a file's secrets are registered as a run's are: put back after, so they are not the rest of the suite's
    secrets = (list(redact._REGISTRY.secrets), redact._REGISTRY.pattern)
    try:
        with tempfile.TemporaryDirectory() as folder, bounded(10, "run file"):
            path = Path(folder) / "run.yaml"
            path.write_bytes(text.encode("utf-8", "surrogateescape") if raw else text.encode("utf-8", "replace"))
            try:
                found = read_run_file(path, EvaluationOptions)
            except UserError as err:
                message = str(err)
                assert "\n" not in message.strip(), message
                assert str(path) in message, message
                return
            assert isinstance(found, RunFile) and set(found.values) <= set(FLAGS)
            json.dumps(found.record)  # plain JSON values
            # as the results write it (`redact.dumps`, scrubbed of every secret registered as the file was read)
            assert "sk-secret-0123456789" not in redact.dumps(found.record)
    finally:
        redact._REGISTRY.secrets, redact._REGISTRY.pattern = secrets


KINDS = ["fifo", "folder", "link_to_fifo", "dev_zero", "dev_null", "sparse", "absent"]


@budget(fuzz=600, ci=14)
@given(kind=st.sampled_from(KINDS), size=st.integers(0, 8 * MiB), prices=st.booleans())
def test_any_kind_of_file_given_as_a_run_or_price_file_is_read_or_refused_in_one_line(
    kind: str, size: int, prices: bool
) -> None:
    """Issue 77, item 3: a FIFO hung `--config` and `--prices`, `/dev/zero` ran out of memory; each of these, and a
    file of any size about the bound, is now read or refused in one line naming it, in bounded time and memory."""
    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(10, f"{kind} as a {'price' if prices else 'run'} file"):
        path = Path(folder) / ("prices.json" if prices else "run.yaml")
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        elif kind == "link_to_fifo":
            os.mkfifo(Path(folder) / "fifo")
            path.symlink_to(Path(folder) / "fifo")
        elif kind.startswith("dev_"):
            path = Path("/dev") / kind.removeprefix("dev_")
        elif kind == "sparse":
            with path.open("wb") as out:  # zeros: past the bound refused unread, under it no run and no JSON
                out.truncate(size)
        with pytest.raises(UserError) as refused:
            PriceTable.load(path) if prices else read_run_file(path, EvaluationOptions)
        assert "\n" not in str(refused.value).strip() and str(path) in str(refused.value), refused.value


PRICED = {"provider": "openai", "as_of": "2026-01-01", "input": 2.5, "cached_input": 1.25, "output": 10.0, "batch": 0.5}
PRICE_FILE = {
    "sources": {"openai": "https://example.invalid/pricing"},
    "unpriced": {"m-free": "no price"},
    "models": {"m-1": PRICED, "m-2": {**PRICED, "long_context": {"over_tokens": 200000, "input": 5.0, "output": 20.0}}},
}


@budget(fuzz=3000, ci=40)
@given(
    raw=st.one_of(
        mutated(PRICE_FILE).map(lambda document: json.dumps(document).encode()),
        with_long_integers(PRICE_FILE).map(str.encode),
        JSON.map(lambda document: json.dumps(document).encode()),
        DOCUMENTS.map(lambda document: _dump(document).encode("utf-8", "replace")),
        st.binary(max_size=200),
        st.sampled_from([deep(5000).encode(), deep(5000, "{").encode(), b"\xff\xfe{}", b'{"models": NaN}', b""]),
        st.builds(
            lambda key, number: json.dumps({"models": {"m": {**PRICED, key: 0}}}).replace('": 0}', f'": {number}}}'),
            st.sampled_from(["input", "output", "cached_input", "cache_write", "batch", "per_image"]),
            st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0.0", "1" + "0" * 400]),
        ).map(str.encode),
    )
)
def test_any_price_file_is_read_or_refused_in_one_line_naming_it(raw: bytes) -> None:
    """Issue 77, item 3: a `--prices` file of any bytes, JSON or YAML, is a table of finite prices >= 0 over the
    built-in one, or one line naming the file; never a traceback (a nesting past the parser's depth, a number past
    a float), never a hang."""
    import math

    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(10, "price file"):
        path = Path(folder) / "prices.json"
        path.write_bytes(raw)
        try:
            table = PriceTable.load(path)
        except UserError as err:
            assert "\n" not in str(err).strip() and str(path) in str(err), err
            return
        for price in table.prices.values():
            rates = [price.rates, *([price.long_context[1]] if price.long_context else [])]
            figures = [price.per_image, price.batch, price.cache_storage_per_hour or 0.0]
            figures += [getattr(r, f) or 0.0 for r in rates for f in ("input", "output", "cached_input", "cache_write")]
            assert all(math.isfinite(figure) and figure >= 0 for figure in figures), price
