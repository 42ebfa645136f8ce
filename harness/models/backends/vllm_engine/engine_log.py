"""The vllm engine's processes' output, read as the run's one line needs it: kept out of the console and written to a
log file (scrubbed of secrets, bounded: `LOG_BYTES`, then the file before it is kept as `.1`), in the run's folder
where it has one, else in the temporary folder, removed when the engine closes unless a line named it; its last lines
held; vLLM's own reason for a failure (`engine_reason`: the root cause, in whichever of its processes it was raised),
its last log line, where a process's stack says it waited (`waited_in`), and what to change (`failure_line`)."""

from __future__ import annotations

import collections
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from harness.redact import scrub

KEPT_LINES = 400  # the engine log's last lines held for the one line and backend_error.log
LOG_BYTES = 32 << 20  # the engine log's size, at most: past it the file becomes NAME.1 (one kept) and a new one starts
REASON_CHARS = 400  # vLLM's reason, at most, in the one line (a weight vLLM lacks comes with all those it has)


class EngineOutput:
    """What the engine's processes print (their stdout and stderr are this process's while they start, and keep
    them): read on a thread, scrubbed of secrets, written to a log file, its last lines kept. The file is `path`
    (appended to: the run's folder's, across the runs of a resumed run) where its folder exists, else one in the
    temporary folder, removed on `close` unless a line named it (`named`)."""

    def __init__(self, path: Path | None = None, max_bytes: int = LOG_BYTES) -> None:
        self.temporary = path is None or not path.parent.is_dir()  # (a replica on a node without the run's folder)
        if self.temporary:
            handle, name = tempfile.mkstemp(prefix="mmlongeval-vllm-engine-", suffix=".log")
            os.close(handle)
            path = Path(name)
        assert path is not None
        self.path = path
        self.max_bytes = max_bytes
        self.kept = not self.temporary
        self._file = self.path.open("a", encoding="utf-8")
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
                    if self._file.tell() > self.max_bytes:
                        self._file.close()
                        self.path.replace(self.path.with_name(self.path.name + ".1"))
                        self._file = self.path.open("a", encoding="utf-8")

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

    def named(self) -> Path:
        """The log's path, for a line that names it: kept, then, wherever it is."""
        self.kept = True
        return self.path

    def close(self) -> None:
        """Stop writing to the pipe from here; the reader ends once the engine's processes have. A temporary log no
        line named goes."""
        with suppress(OSError):
            os.close(self._write)
        self._reader.join(timeout=5)
        with suppress(Exception):
            self._file.close()
        if not self.kept:
            for path in (self.path, self.path.with_name(self.path.name + ".1")):
                path.unlink(missing_ok=True)

    def tail(self, count: int = 120) -> str:
        return "\n".join(list(self.lines)[-count:])


PREFIX = re.compile(r"^\((?:[\w.-]+ )?pid=\d+\)\s*")  # vLLM's "(EngineCore_DP0 pid=123) " before a process's lines
# vLLM's log line's level, time and source, before its message (a traceback it logs has them on every line)
HEADER = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]*\] ?")
EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?((?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt)): (.+)$")
# vLLM's own words for a failure that is the engine's wrapping of one raised elsewhere, not its cause
WRAPPERS = (
    "Engine core initialization failed",
    "WorkerProc initialization failed",
    "Worker failed with error",
    "EngineCore encountered",
)


def _bare(line: str) -> str:
    return PREFIX.sub("", line).strip()


def _chained(text: list[str]) -> bool:
    """Whether the lines between two tracebacks say the later was raised from the earlier (Python's own words)."""
    between = " ".join(text)
    return "direct cause of the following exception" in between or "During handling of" in between


def engine_reason(lines: list[str]) -> str | None:
    """vLLM's own reason in the engine's log, as "Type: message" (at most `REASON_CHARS`), or None where the log holds
    no exception line: in its last traceback (with those chained before it, Python printing the cause first) the
    first exception that is not vLLM's wrapping. A traceback of wrapping alone (the engine core's "WorkerProc
    initialization failed ... See stack trace for root cause") points to the one before it, which vLLM logged from the
    process that raised it (a worker's: a weight or config field its model lacks), and so on back."""
    text = [HEADER.sub("", _bare(line), count=1) for line in lines]
    starts = [i for i, line in enumerate(text) if line.startswith("Traceback (most recent call last)")]
    end = len(text)
    while starts:
        group = starts.pop()
        while starts and _chained(text[starts[-1] : group]):
            group = starts.pop()
        found = [match for line in text[group:end] if (match := EXCEPTION.match(line))]
        cause = next((m for m in found if not any(wrapper in m[2] for wrapper in WRAPPERS)), None)
        if cause is not None:
            reason = f"{cause[1]}: {cause[2]}"
            return reason if len(reason) <= REASON_CHARS else f"{reason[:REASON_CHARS]}..."
        if not found:  # a traceback without its exception line: nothing earlier is known to be its cause
            return None
        end = group
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


def _first_reason(err: BaseException) -> str:
    """An exception's first line; pydantic's (vLLM's config checks: `VllmConfig`) says only how many errors there are
    on it, and the first error's own words on the next."""
    errors = getattr(err, "errors", None)
    if type(err).__name__ == "ValidationError" and callable(errors):
        with suppress(Exception):
            return str(errors()[0]["msg"])
    return str(err).split("\n")[0]


def failure_line(err: BaseException, output: EngineOutput) -> str:
    """Why the engine could not start, in one line: vLLM's own reason from its processes' log (else the exception
    this process got), what to change where that is known, and where the whole log is (where the engine wrote one:
    an empty log is not named, and goes)."""
    reason = engine_reason(list(output.lines)) or f"{type(err).__name__}: {_first_reason(err)}"
    advice = next((text for pattern, text in ADVICE if re.search(pattern, reason)), None)
    where = f" (the engine's log: {output.named()})" if output.lines else ""
    return f"{reason}{f'; {advice}' if advice else ''}{where}"
