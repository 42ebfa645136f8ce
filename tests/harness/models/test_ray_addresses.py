"""Issue 41, item 9: `--ray ADDRESS` that names no Ray cluster ends in one line, in seconds: an address of the wrong
form (port 99999, no port, another scheme) before any data is read; a refused port, a host that does not resolve, a
listener that is not Ray within `CONNECT_TIMEOUT` (Ray's own join retried each for minutes, printing its warnings and
no line of ours). A cluster the run did not start (`--ray auto` joins whatever Ray runs here) is named in one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from harness.models.backends.replicas.cluster import CONNECT_TIMEOUT, FORMS, address_problem
from tests.support.paths import PROJECT


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1:99999", f"the port must be a number from 1 to 65535 ({FORMS})"),
        ("127.0.0.1:0", f"the port must be a number from 1 to 65535 ({FORMS})"),
        ("ray://head:-1", f"the port must be a number from 1 to 65535 ({FORMS})"),
        ("head", f"no port ({FORMS})"),
        (":6379", f"no host ({FORMS})"),
        ("http://head:6379", FORMS),
        ("head:6379/x", FORMS),
        ("", FORMS),
        ("a..b:6379", f"'a..b' is not a host name or an IP address ({FORMS})"),  # the IDNA codec's UnicodeError
        ("a b:6379", f"'a b' is not a host name or an IP address ({FORMS})"),
        ("bad!host:6379", f"'bad!host' is not a host name or an IP address ({FORMS})"),
        ("head:６３７９", f"the port must be a number from 1 to 65535 ({FORMS})"),
    ],
)
def test_an_address_of_the_wrong_form_is_one_line_before_anything_is_read(
    harness, toy_dir: Path, toy_tasks: Path, address: str, problem: str
) -> None:
    assert address_problem(address) == problem
    started = time.monotonic()
    run = harness(
        "--tasks", "toy_colors", "--include_path", toy_tasks, "--data_dir", toy_dir, "--model", "random",
        "--model_args", "data_parallel_size=2", "--ray", address,
    )  # fmt: skip
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert run.err.strip().splitlines() == [f"harness: error: --ray {address}: {problem}"]
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "address",
    [
        "auto",
        "local",
        "head:6379",
        "10.0.0.1:1",
        "ray://head",
        "ray://[::1]:10001",
        "node-7.example.org.:1",
        "ray_head:6379",
    ],
)
def test_the_forms_of_a_cluster_address_are_taken(address: str) -> None:
    assert address_problem(address) is None


class _NotRay(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # an HTTP/1 server: gRPC's HTTP/2 preface gets a 400 and a closed connection
        self.send_error(400)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _NotRay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free once closed: nothing listens there


def _run_in_a_child(toy_dir: Path, toy_tasks: Path, script_env: dict[str, str], *ray: str) -> tuple[int, str]:
    """`harness ... --ray ...` in a process of its own (this one may already be connected to the tests' cluster)."""
    argv = [
        "--tasks", "toy_colors", "--include_path", str(toy_tasks), "--data_dir", str(toy_dir), "--model", "random",
        "--model_args", "data_parallel_size=2", "--no_progress", *ray,
    ]  # fmt: skip
    script = f"import sys; from harness.run.cli import main; sys.exit(main({argv!r}))"
    env = {**script_env, "PYTHONPATH": os.pathsep.join([str(PROJECT), script_env.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240)
    return done.returncode, done.stderr


@pytest.mark.slow  # a harness run in a child process that imports Ray
@pytest.mark.parametrize("case", ["refused", "unresolvable", "not ray"])
def test_an_address_where_no_ray_cluster_answers_is_one_line_within_the_bound(
    toy_dir: Path, toy_tasks: Path, script_env: dict[str, str], http_port: int, case: str
) -> None:
    address, problem = {
        "refused": (f"127.0.0.1:{(port := _closed_port())}", f"nothing answers at 127.0.0.1:{port} ("),
        "unresolvable": ("no-such-host.invalid:6379", "the host 'no-such-host.invalid' does not resolve ("),
        "not ray": (f"127.0.0.1:{http_port}", f"127.0.0.1:{http_port} answers, but not as a Ray cluster"),
    }[case]
    started = time.monotonic()
    code, err = _run_in_a_child(toy_dir, toy_tasks, script_env, "--ray", address)
    elapsed = time.monotonic() - started
    assert code == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert errors == [line for line in errors if line.startswith(f"harness: error: --ray {address}: cannot join")]
    assert len(errors) == 1 and problem in errors[0], err
    assert elapsed < 2 * CONNECT_TIMEOUT + 30  # a child's start and Ray's import, then the bound; never minutes


@pytest.mark.slow  # a child process that imports Ray
def test_auto_with_no_cluster_here_says_how_to_start_one(
    toy_dir: Path, toy_tasks: Path, script_env: dict[str, str], tmp_path: Path
) -> None:
    # A Ray temp folder of its own: no `ray start` of this machine's is found through it
    env = {**script_env, "RAY_TMPDIR": str(tmp_path)}
    env.pop("RAY_ADDRESS", None)
    code, err = _run_in_a_child(toy_dir, toy_tasks, env, "--ray", "auto")
    if code == 0:
        pytest.skip("a Ray cluster runs on this machine: auto joined it")
    assert code == 2 and err.strip().splitlines()[-1] == (
        "harness: error: --ray auto: cannot join the Ray cluster: no Ray cluster runs on this machine (`ray start "
        "--head` starts one; --ray without an address starts one for this run)"
    ), err


@pytest.mark.slow  # the tests' Ray cluster, and a run in a child process that joins it
def test_auto_says_which_cluster_it_joined(
    ray_cluster, toy_dir: Path, toy_tasks: Path, script_env: dict[str, str]
) -> None:
    address = ray_cluster.get_runtime_context().gcs_address
    env = {**script_env, "RAY_ADDRESS": address}  # Ray's own choice among clusters, made certain for the test
    code, err = _run_in_a_child(toy_dir, toy_tasks, env, "--ray", "auto")
    assert code == 0, err
    (joined,) = [line for line in err.splitlines() if "joined" in line]
    assert joined.startswith(f"harness: --ray auto: joined the Ray cluster at {address} (1 node: ")
    assert joined.endswith("; 4 CPUs, 0 GPUs), not started by this run")
