"""The fuzz suite (issue 30): property-based tests over every surface a user or a server can feed the project,
each failing on a traceback, on a hang past its bound, or on a key in any output.

Two budgets (`hypothesis` settings chosen here, not per machine): by default, as part of `make test`, a few dozen
examples per surface, drawn deterministically (`derandomize`), so the suite costs seconds and never flakes;
`make fuzz` (MMLONGEVAL_FUZZ=1) draws fresh examples, ten thousand and more in all. Every generated input is
counted, and the total is printed at the end of the session (`fuzz: N generated inputs`).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.support.deadline import Overdue, within

FUZZ = os.environ.get("MMLONGEVAL_FUZZ") == "1"
_COUNT: Counter[str] = Counter()  # generated inputs per test

settings.register_profile(
    "mmlongeval",
    database=None,
    deadline=None,
    derandomize=not FUZZ,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
        HealthCheck.large_base_example,
    ],
)
settings.load_profile("mmlongeval")


def budget(fuzz: int, ci: int) -> Any:
    """`@budget(fuzz=..., ci=...)`: how many examples a surface gets under `make fuzz` and under `make test`."""
    return settings(max_examples=fuzz if FUZZ else ci)


def counted() -> None:
    """Called once per generated input (the session's total, and each test's, are printed at its end)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    _COUNT[test.rsplit("/", 1)[-1]] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _COUNT:
        for test, count in sorted(_COUNT.items()):
            terminalreporter.write_line(f"fuzz: {count:6,} {test}")
        terminalreporter.write_line(
            f"fuzz: {sum(_COUNT.values())} generated inputs ({'make fuzz' if FUZZ else 'the make test budget'})"
        )


class Hang(Overdue):
    """An input that was still being handled past its bound."""


def bounded(seconds: float, what: str) -> AbstractContextManager[None]:
    """Fail with `Hang` if the block runs longer than `seconds` (a timer signal interrupts it)."""
    return within(seconds, what, Hang)


# --- strategies ------------------------------------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.sampled_from([0, -1, 1e308, -1e308, 2**63, "", "N/A", "inf", "\udcff", "\x00", "a" * 300]),
    st.text(max_size=20),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


# Integers past 2**70, written as JSON or YAML text: within Python's `int(str)` limit (4,300 digits) and past it, where
# `json.dumps` cannot write one, so `with_long_integers` splices the digits in as text.
LONG_INTEGERS = st.one_of(
    st.integers(2**70, 10**400).map(str),
    st.integers(-(10**400), -(2**70)).map(str),
    st.integers(300, 9000).map(lambda digits: "9" * digits),
    st.sampled_from(["1" + "0" * 4299, "1" + "0" * 4300, "-" + "7" * 4301, "8" * 20000]),
)
_MARKER = 918_273_645_546_372_819_000  # a number no document holds: where a long integer goes


@st.composite
def with_long_integers(draw: Callable[..., Any], value: Any) -> str:
    """`value` as JSON text, one to three of its places (numbers as often as not) holding a `LONG_INTEGERS`."""
    import copy
    import json

    value = copy.deepcopy(value)
    places = [path for path in _paths(value) if path]
    numbers = [path for path in places if _is_number(_at(value, path))]
    chosen = draw(st.lists(st.sampled_from(numbers or places), min_size=1, max_size=3)) if places else []
    digits: dict[str, str] = {}
    if not chosen:  # a scalar document: the number is the document
        return draw(LONG_INTEGERS)
    for path in sorted(set(chosen), key=len, reverse=True):  # the deepest first: each parent is still a container
        marker = _MARKER + len(digits)
        _at(value, path[:-1])[path[-1]] = marker
        digits[str(marker)] = draw(LONG_INTEGERS)
    text = json.dumps(value)
    for marker, number in digits.items():
        text = text.replace(marker, number)
    return text


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _at(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


# `--ray` addresses (issue 41): of every form, and hosts where no Ray cluster can answer. `{closed}` is a loopback port
# nothing listens on, found when the test runs (a drawn port might be another program's, even a Ray cluster's).
RAY_HOSTS = ["127.0.0.1", "localhost", "[::1]", "no-such-host.invalid", "a..b", "-", "\x00", "x" * 300, "é.invalid", ""]
RAY_PORTS = ["{closed}", "0", "65536", "99999", "-1", "６３７９", "abc", "", "1e3", " 1"]
RAY_ADDRESSES = st.one_of(
    st.sampled_from(["auto", "local", "ray://", "ray://no-such-host.invalid", "http://h:1", "h:1/x", ":", "::1:1"]),
    st.builds(
        lambda scheme, host, port: f"{scheme}{host}:{port}",
        st.sampled_from(["", "", "ray://", "grpc://"]),
        st.sampled_from(RAY_HOSTS),
        st.one_of(st.sampled_from(RAY_PORTS), LONG_INTEGERS),
    ),
    st.text(max_size=30),
)


def closed_port() -> int:
    """A loopback TCP port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def deep(depth: int, opener: str = "[") -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "{":
        return '{"a":' * depth + "1" + "}" * depth
    return opener * depth + closer * depth


@st.composite
def mutated(draw: Callable[..., Any], value: Any) -> Any:
    """`value` (a JSON document) with one to three places replaced by arbitrary JSON, or deleted."""
    import copy

    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(value))
        if not paths:
            return draw(JSON)
        path = draw(st.sampled_from(paths))
        if not path:
            value = draw(JSON)
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(st.one_of(JSON, st.just(_nested(draw(st.integers(50, 400))))))
    return value


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


@functools.cache
def store_bomb() -> str:
    """A prompt store's chunk (`harness.running.journal.prompt_store`) that inflates to 64 MiB: past any written."""
    return base64.b64encode(zlib.compress(b"\x00" * (64 << 20), 9)).decode("ascii")


DOT_DOT = st.sampled_from(["../", "../../", "/", "./", "..\\"])
LINE_DAMAGE = st.sampled_from(["bomb", "drop", "rename", "dot-dot", "garbage", "cut", "not base64"])


@st.composite
def damaged_store(draw: st.DrawFn, lines: list[str]) -> bytes:
    """A run's store as a hostile hand leaves it: lines bombed, dropped, renamed `../`, replaced by bytes, cut; or the
    whole file replaced by bytes."""
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(st.binary(max_size=300))
    lines = list(lines)
    for at in draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=4)):
        value, how = json.loads(lines[at]), draw(LINE_DAMAGE)
        if how == "bomb" and "zlib" in value:
            value["zlib"] = store_bomb()
        elif how == "not base64" and "zlib" in value:
            value["zlib"] = "!!" + value["zlib"]
        elif how == "dot-dot" and "chunks" in value:
            value["chunks"] = [draw(DOT_DOT) + name for name in value["chunks"]]
        elif how == "dot-dot" and "chunk" in value:
            value["chunk"] = draw(DOT_DOT) + value["chunk"]
        elif how == "rename":
            value[next(iter(value))] = draw(st.text(max_size=70))
        elif how in ("drop", "garbage", "cut"):
            kept = {"drop": "", "garbage": draw(st.binary(max_size=80)).decode("latin-1")}
            lines[at] = kept.get(how, lines[at][: draw(st.integers(0, len(lines[at])))])
            continue
        lines[at] = json.dumps(value)
    return "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"


@pytest.fixture(scope="session")
def toy_build(tmp_path_factory: pytest.TempPathFactory):
    """A toy build (the benchmark-neutral dataset of tests/support/toy_benchmark.py) and its task folder."""
    from tests.support.toy_benchmark import build_toy, write_toy_tasks

    root = tmp_path_factory.mktemp("fuzz_toy")
    build_toy(root / "data")
    return root / "data", write_toy_tasks(root / "tasks")
