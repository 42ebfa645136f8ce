"""The vllm engine's processes' output, read as the run's one line needs it: kept out of the console and written to a
log file (scrubbed of secrets), its last lines held; vLLM's own reason for a failure (`engine_reason`), its last log
line, where a process's stack says it waited (`waited_in`), and what to change (`failure_line`)."""

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
    this process got), what to change where that is known, and where the whole log is."""
    reason = engine_reason(list(output.lines)) or f"{type(err).__name__}: {_first_reason(err)}"
    advice = next((text for pattern, text in ADVICE if re.search(pattern, reason)), None)
    return f"{reason}{f'; {advice}' if advice else ''} (the engine's log: {output.path})"
