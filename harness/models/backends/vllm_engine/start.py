"""How the vllm backend starts an engine, the same way on every machine. vLLM forks its engine core on CUDA (unless
CUDA is initialised) and always spawns it on its CPU build, so the forked start was a path CI never took, and on an
H200 the harness's forked core hung at its first step: every engine here starts its core by spawn unless the user's
environment names a method (`start_method`). The start is bounded (`EngineStart`): past `start_timeout` seconds the
engine's processes are stopped, each dumping its Python stack first (faulthandler, on SIGABRT), and the run stops in
one line naming the engine's last log line and where its core waited. The processes' output goes to a log file, not
the console, and when the engine cannot start or dies the one line carries vLLM's own reason (`engine_reason`)."""

from __future__ import annotations

import ast
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

from harness.api import BackendFatalError
from harness.models.backends.vllm_engine.engine_log import (
    EngineOutput,
    engine_reason,
    failure_line,
    last_log_line,
    waited_in,
)

METHOD_VARIABLE = "VLLM_WORKER_MULTIPROC_METHOD"  # vLLM's switch for how its engine core and workers start
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


def interrupt_main_thread() -> None:
    """A KeyboardInterrupt in the main thread, even where it blocks on a lock (vLLM's client waits on a queue): a real
    SIGINT to that thread, whose wait it ends (`_thread.interrupt_main` only sets a flag the blocked thread never
    reads), inside `interruptible`."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


@contextmanager
def interruptible(ours: Callable[[], bool]) -> Iterator[None]:
    """While inside, in the main thread: the SIGINT `interrupt_main_thread` sends (once `ours()` is true) raises a
    KeyboardInterrupt however this process was started, SIGINT ignored included (`nohup`, a script's background job,
    many launchers: the signal would be dropped and vLLM's wait go on for ever); any other SIGINT does what it did."""
    before = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or before is None:  # None: not set from Python
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if ours() or before is signal.default_int_handler or before == signal.SIG_DFL:
            raise KeyboardInterrupt
        if callable(before):
            before(signum, frame)  # type: ignore[arg-type]  # the handler it replaces, as signal.signal took it

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


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

    def made(self) -> list[object]:
        """The engine's processes this start made and left running (not multiprocessing's resource tracker)."""
        import psutil

        found = []
        for process in psutil.Process().children(recursive=True):
            with suppress(psutil.Error):
                if process.create_time() >= self.began - 1 and "resource_tracker" not in " ".join(process.cmdline()):
                    found.append(process)
        return found

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
                interrupt_main_thread()
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
            with self.output.captured(), interruptible(self.expired.is_set):
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
            f"{where} (every stack in {self.output.named()}); raise start_timeout=S in --model_args if the model "
            "only loads slowly"
        )


def started(build: Callable[[], E], timeout: float | None, output: EngineOutput) -> tuple[E, EngineWatch]:
    """The engine `build` makes, its processes' output in `output`, and the watch on them while it runs; where it
    cannot start (or not within `timeout`),
    a `BackendFatalError` whose first line says why and whose rest (backend_error.log) is the log's last lines, once
    every process the start made is gone."""
    start = EngineStart(timeout, output)
    try:
        engine = start.run(build)
        return engine, EngineWatch(start.made())
    except Exception as err:
        start.stop_processes(dump=False)  # whatever of the engine is left
        output.settle()
        line = str(err) if start.expired.is_set() else failure_line(err, output)
        output.close()  # (a temporary log that no line named goes)
        raise BackendFatalError(f"the vllm engine could not start: {line}\n{output.tail()}") from err


def engine_died(err: BaseException, output: EngineOutput) -> BackendFatalError | None:
    """A run's engine that died mid-run (vLLM's `EngineDeadError`), as the one line that stops the run with vLLM's
    reason; None for any other failure (a request's, retried on its own)."""
    if "EngineDeadError" not in {c.__name__ for c in type(err).__mro__}:
        return None
    output.settle()
    return BackendFatalError(f"the vllm engine died: {failure_line(err, output)}\n{output.tail()}")


class EngineWatch:
    """The engine's processes, watched while it runs: vLLM's offline client can wait on its output queue for ever once
    its core is gone (0.32 does, after its own shutdown), so a process of the engine that ends while a call waits on
    it interrupts the call (`call`), and the run stops in one line (`engine_died`)."""

    def __init__(self, processes: list[object]) -> None:
        import psutil

        self.processes = processes
        self.names: dict[int, str] = {}  # vLLM titles its processes (VLLM::EngineCore, VLLM::Worker)
        for process in processes:
            assert isinstance(process, psutil.Process)
            with suppress(psutil.Error):
                self.names[process.pid] = " ".join(process.cmdline())[:40]
        self.ended: str | None = None  # which process ended, and how
        self._waiting = False
        self._stop = threading.Event()
        self._main = threading.current_thread() is threading.main_thread()
        threading.Thread(target=self._watch, name="vllm-engine-watch", daemon=True).start()

    def _watch(self) -> None:
        import psutil

        while not self._stop.wait(1):
            for process in self.processes:
                assert isinstance(process, psutil.Process)
                try:
                    running = process.is_running() and process.status() != psutil.STATUS_ZOMBIE
                except psutil.Error:
                    running = False
                if running:
                    continue
                code = None
                with suppress(psutil.Error, ChildProcessError):
                    code = process.wait(0)
                how = f" (killed by {signal.Signals(-code).name})" if isinstance(code, int) and code < 0 else ""
                self.ended = f"its process {self.names.get(process.pid, '')} (pid {process.pid}) ended{how}"
                if self._waiting and self._main and not self._stop.is_set():
                    interrupt_main_thread()
                return

    @contextmanager
    def call(self, output: EngineOutput) -> Iterator[None]:
        """One engine call; where a process of the engine has ended, or ends meanwhile, a `BackendFatalError`."""
        if self.ended is not None:
            raise BackendFatalError(f"the vllm engine died: {self.ended}\n{output.tail()}")
        self._waiting = True
        try:
            with interruptible(lambda: self.ended is not None):
                yield
        except KeyboardInterrupt:
            if self.ended is None:
                raise
            output.settle()
            reason = engine_reason(list(output.lines)) or self.ended
            raise BackendFatalError(f"the vllm engine died: {reason}\n{output.tail()}") from None
        finally:
            self._waiting = False

    def close(self) -> None:
        self._stop.set()
