"""How the vllm backend starts an engine, the same way on every machine. vLLM forks its engine core on CUDA (unless
CUDA is initialised) and always spawns it on its CPU build, so the forked start was a path CI never took, and on an
H200 the harness's forked core hung at its first step: every engine here starts its core by spawn unless the user's
environment names a method (`start_method`). The start is bounded (`EngineStart`): past `start_timeout` seconds the
engine's processes are stopped, each dumping its Python stack first (faulthandler, on SIGABRT), and the run stops in
one line naming the engine's last log line and where its core waited. The processes' output goes to a log file, not
the console, and when the engine cannot start or dies the one line carries vLLM's own reason (`engine_reason`)."""

from __future__ import annotations

import ast
import collections
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

from harness.api import BackendFatalError
from harness.redact import scrub

METHOD_VARIABLE = "VLLM_WORKER_MULTIPROC_METHOD"  # vLLM's switch for how its engine core and workers start
KEPT_LINES = 400  # the engine log's last lines held for the one line and backend_error.log
INTERRUPT_AFTER_S = 30  # after the engine's processes are stopped, how long vLLM's own wait has to notice
E = TypeVar("E")


def start_method() -> dict[str, str]:
    """The method the engine's processes start by, and who chose it: the user's environment where it names one, else
    spawn, set here for vLLM to read (the results record it with the engine's arguments)."""
    given = os.environ.get(METHOD_VARIABLE)
    if given:
        return {"method": given, "set_by": "environment"}
    os.environ[METHOD_VARIABLE] = "spawn"
    return {"method": "spawn", "set_by": "harness"}


def _is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
    return sides == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}


def check_main_guard() -> None:
    """A spawned process runs the parent's main script again before its own work (multiprocessing's spawn, as the
    `__mp_main__` module): a script that starts the engine from its top level, outside `if __name__ == "__main__":`,
    would start the run again in the engine's process, and that a cascade of processes. Refused in one line (a
    `BackendFatalError`) before the engine starts. `python -m harness`, a notebook, `python -c` are not run again, so not checked."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec_name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if main is None or path is None or spec_name == "__main__" or spec_name.endswith(".__main__"):
        return
    frame = sys._getframe()
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back  # type: ignore[assignment]  # the main script's own top level, where the run started
    if frame is None:
        return
    line = frame.f_lineno
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):  # not Python source here: multiprocessing cannot run it again either
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test):
            if any(stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) for stmt in node.body):
                return
    raise BackendFatalError(
        f"the vllm engine could not start: {path}, line {line}: the engine starts its processes by spawn, which runs "
        f'this script again in each of them: put the code that starts the run under `if __name__ == "__main__":`'
    )


class EngineOutput:
    """What the engine's processes print (their stdout and stderr are this process's while they start, and keep
    them): read on a thread, scrubbed of secrets, written to a log file, its last lines kept."""

    def __init__(self) -> None:
        handle, name = tempfile.mkstemp(prefix="mmlongeval-vllm-engine-", suffix=".log")
        self.path = Path(name)
        self._file = os.fdopen(handle, "w", encoding="utf-8")
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self._read, self._write = os.pipe()
        self._reader = threading.Thread(target=self._pump, name="vllm-engine-output", daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        with os.fdopen(self._read, "rb") as pipe:
            for raw in pipe:  # until every process holding the pipe has ended
                line = scrub(raw.decode("utf-8", "replace").rstrip("\n"))
                self.lines.append(line)
                with suppress(ValueError, OSError):  # closed: the engine outlived its backend
                    self._file.write(line + "\n")
                    self._file.flush()

    @contextmanager
    def captured(self) -> Iterator[None]:
        """This process's stdout and stderr into the pipe while inside: the processes started meanwhile inherit it."""
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):
                stream.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(self._write, 1)
        os.dup2(self._write, 2)
        try:
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])

    def settle(self, seconds: float = 2.0) -> None:
        """Give the reader a moment to take in what was just written (a dump, a last traceback)."""
        deadline = time.monotonic() + seconds
        count = -1
        while time.monotonic() < deadline and count != len(self.lines):
            count = len(self.lines)
            time.sleep(0.2)

    def close(self) -> None:
        """Stop writing to the pipe from here; the reader ends once the engine's processes have."""
        with suppress(OSError):
            os.close(self._write)
        self._reader.join(timeout=5)
        with suppress(Exception):
            self._file.close()

    def tail(self, count: int = 120) -> str:
        return "\n".join(list(self.lines)[-count:])


PREFIX = re.compile(r"^\((?:[\w.-]+ )?pid=\d+\)\s*")  # vLLM's "(EngineCore_DP0 pid=123) " before a process's lines
EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)): (.+)$")
# vLLM's own words for a failure that is the engine's wrapping, not its cause
WRAPPERS = ("Engine core initialization failed", "Worker failed with error", "EngineCore encountered")


def _bare(line: str) -> str:
    return PREFIX.sub("", line).strip()


def engine_reason(lines: list[str]) -> str | None:
    """vLLM's own reason in the engine's log: the exception that started the last traceback (its root cause, Python
    printing a chained cause first), as "Type: message", or None where the log holds no exception line."""
    bare = [_bare(line) for line in lines]
    starts = [i for i, line in enumerate(bare) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return None
    group = starts[-1]  # the last traceback, and the ones chained before it ("... direct cause ..." between them)
    for i in reversed(starts[:-1]):
        between = " ".join(bare[i:group])
        if "direct cause of the following exception" not in between and "During handling of" not in between:
            break
        group = i
    for line in bare[group:]:
        found = EXCEPTION.match(line)
        if found and not any(wrapper in found[2] for wrapper in WRAPPERS):
            return f"{found[1]}: {found[2]}"
    return None


def last_log_line(lines: list[str]) -> str:
    """The engine's last log line before it was stopped (vLLM's own log lines, not a traceback's)."""
    for line in reversed(lines):
        bare = _bare(line)
        if re.match(r"^(INFO|WARNING|DEBUG|ERROR)\b", bare):
            return bare
    return next((_bare(line) for line in reversed(lines) if _bare(line)), "(nothing)")


def waited_in(stack: list[str], innermost_first: bool = True) -> str:
    """Where a stack (a faulthandler dump, innermost frame first, or `traceback`'s lines, outermost first) says its
    thread was: "file:line in name" of its innermost two frames of vLLM's (or any, where none is vLLM's)."""
    frames = [m for line in stack if (m := re.match(r'\s*File "(.+)", line (\d+),? in (\S+)', line))]
    frames = frames if innermost_first else frames[::-1]
    ours = [m for m in frames if "/vllm/" in m[1]] or frames
    return "; ".join(f"{Path(m[1]).name}:{m[2]} in {m[3]}" for m in ours[:2]) or "(no Python frame)"


class EngineStart:
    """One engine start, bounded by `timeout` seconds: past it every process started since (the engine core and its
    workers) dumps its stack and is stopped, vLLM's own wait then fails, and `run` raises a `TimeoutError` naming the
    engine's last log line and where its core waited."""

    def __init__(self, timeout: float | None, output: EngineOutput) -> None:
        self.timeout = timeout
        self.output = output
        self.began = time.time()
        self.expired = threading.Event()
        self.dumped = threading.Event()  # every process of the engine has dumped its stack and been stopped
        self.stacks: list[list[str]] = []  # each stopped process's faulthandler dump
        self.last_line = ""
        self.here = ""  # where this process's start waited

    def frozen(self) -> list[object]:
        """Every process this start made (this process's descendants created since it began), each stopped
        (SIGSTOP) as found, so none starts another meanwhile, or is lost to init when its parent goes first."""
        import psutil

        found: dict[int, psutil.Process] = {}
        while True:
            fresh = [
                p
                for p in psutil.Process().children(recursive=True)
                if p.pid not in found and p.create_time() >= self.began - 1
            ]
            if not fresh:
                return list(found.values())
            for process in fresh:
                with suppress(psutil.Error):
                    process.suspend()
                    found[process.pid] = process

    def stop_processes(self, dump: bool) -> None:
        """The engine's processes, frozen, then one at a time: where `dump`, SIGABRT and on (faulthandler, which the
        spawned processes enable from PYTHONFAULTHANDLER, writes its stack to the log), then SIGKILL."""
        import psutil

        for process in self.frozen():
            assert isinstance(process, psutil.Process)
            with suppress(psutil.Error):
                before = len(self.output.lines)
                if dump:
                    process.send_signal(signal.SIGABRT)
                    process.resume()
                    with suppress(psutil.TimeoutExpired):
                        process.wait(5)
                    self.output.settle()
                    self.stacks.append(list(self.output.lines)[before:])
                process.kill()
                process.resume()

    def _watch(self, builder: int, main: bool) -> None:
        if self.timeout is None or self.done.wait(self.timeout):
            return
        self.last_line = last_log_line(list(self.output.lines))  # before the stop's own lines
        frame = sys._current_frames().get(builder)
        self.here = waited_in(traceback.format_stack(frame), innermost_first=False) if frame else "(unknown)"
        self.expired.set()
        try:
            self.stop_processes(dump=True)
        finally:
            self.dumped.set()
        deadline = time.monotonic() + INTERRUPT_AFTER_S
        while not self.done.wait(1):  # until vLLM's own wait notices: a process this one starts meanwhile goes too
            self.stop_processes(dump=False)
            if main and time.monotonic() > deadline:  # stuck in this process, not waiting on the engine's
                import _thread

                _thread.interrupt_main()
                return

    def run(self, build: Callable[[], E]) -> E:
        self.done = threading.Event()
        main = threading.current_thread() is threading.main_thread()
        builder = threading.get_ident()
        watcher = threading.Thread(target=self._watch, args=(builder, main), name="vllm-engine-start", daemon=True)
        saved = os.environ.get("PYTHONFAULTHANDLER")
        os.environ["PYTHONFAULTHANDLER"] = "1"  # read by each spawned process as it starts
        watcher.start()
        try:
            with self.output.captured():
                return build()
        except BaseException as err:
            if not self.expired.is_set():
                raise
            self.dumped.wait(120)  # vLLM's wait fails at the first process stopped: every stack first
            raise TimeoutError(self.timeout_line()) from err
        finally:
            self.done.set()
            if saved is None:
                os.environ.pop("PYTHONFAULTHANDLER", None)
            else:
                os.environ["PYTHONFAULTHANDLER"] = saved

    def timeout_line(self) -> str:
        def of(part: str) -> list[str] | None:
            return next((stack for stack in self.stacks if any(part in line for line in stack)), None)

        core, worker = of("/v1/engine/core.py"), of("/v1/worker/")
        where = (
            f"its core waited in {waited_in(core)}"
            if core is not None
            else f"no engine core had started; this process waited in {self.here}"
        )
        if worker is not None:
            where += f", its worker in {waited_in(worker)}"
        return (
            f"it did not start within start_timeout={self.timeout:g} s; its last log line: {self.last_line!r}; "
            f"{where} (every stack in {self.output.path}); raise start_timeout=S in --model_args if the model "
            "only loads slowly"
        )


# What to change, by what vLLM's reason says (the reason itself is always in the line).
ADVICE = (
    (r"cache blocks|KV cache is needed|kv_cache_memory", "give the engine more KV cache (kv_cache_memory_bytes=N, or "
     "gpu_memory_utilization on a GPU) or a smaller max_model_len"),
    (r"MetadataIncompleteBuffer|incomplete metadata|safetensor|HeaderTooLarge|InvalidHeader",
     "the checkpoint's weights are not whole: download them again"),
    (r"has no attribute|KeyError|not found in|no module or parameter named",
     "the checkpoint's config or weights are not what vLLM's model for its architecture expects"),
    (r"[Oo]ut of memory|OutOfMemory", "the model does not fit: a smaller dtype, max_model_len or max_num_seqs"),
)  # fmt: skip


def failure_line(err: BaseException, output: EngineOutput) -> str:
    """Why the engine could not start, in one line: vLLM's own reason from its processes' log (else the exception
    this process got), what to change where that is known, and where the whole log is."""
    reason = engine_reason(list(output.lines)) or f"{type(err).__name__}: {err}".split("\n")[0]
    advice = next((text for pattern, text in ADVICE if re.search(pattern, reason)), None)
    return f"{reason}{f'; {advice}' if advice else ''} (the engine's log: {output.path})"


def started(build: Callable[[], E], timeout: float | None, output: EngineOutput) -> E:
    """The engine `build` makes, its processes' output in `output`; where it cannot start (or not within `timeout`),
    a `BackendFatalError` whose first line says why and whose rest (backend_error.log) is the log's last lines, once
    every process the start made is gone."""
    start = EngineStart(timeout, output)
    try:
        return start.run(build)
    except Exception as err:
        start.stop_processes(dump=False)  # whatever of the engine is left
        output.settle()
        line = str(err) if start.expired.is_set() else failure_line(err, output)
        raise BackendFatalError(f"the vllm engine could not start: {line}\n{output.tail()}") from err


def engine_died(err: BaseException, output: EngineOutput) -> BackendFatalError | None:
    """A run's engine that died mid-run (vLLM's `EngineDeadError`), as the one line that stops the run with vLLM's
    reason; None for any other failure (a request's, retried on its own)."""
    if "EngineDeadError" not in {c.__name__ for c in type(err).__mro__}:
        return None
    output.settle()
    return BackendFatalError(f"the vllm engine died: {failure_line(err, output)}\n{output.tail()}")
