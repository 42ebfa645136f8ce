"""The `harness view` command: serve a results folder on a local port until interrupted."""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from builders.core.contract import REQUIRED, option
from harness.errors import RECORDED_NOT_READ, CommandOptions, CommandParser, UserError, include_path_option

DEFAULT_PORT = 8765
SHUTDOWN_GRACE_S = 2
BACKLOG = 2048  # uvicorn's
INTERRUPTED = 130  # as an interrupted run (`harness.run.execute`): 128 + SIGINT


@dataclass(frozen=True, kw_only=True)
class ViewOptions(CommandOptions):
    results_dir: Path = option(
        REQUIRED, "an --output_path folder (searched recursively for results_*.json)", positional=True, parse=Path
    )
    host: str = option(
        "127.0.0.1",
        "address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 shares the page on a trusted network)",
    )
    port: int = option(DEFAULT_PORT, f"port (default {DEFAULT_PORT}; 0: any free one)", parse=int)
    data_dir: str | None = option(
        None,
        "look the builds up in this folder (or hf://ORG/NAME@REVISION) instead of "
        "where the results files say the runs read them",
    )
    include_path: tuple[Path, ...] = include_path_option(
        f"a folder of tasks (and their hooks) to read besides the installed ones; {RECORDED_NOT_READ}"
    )


def main(argv: list[str]) -> int:
    parser = CommandParser(
        prog="harness view",
        description="Serve a local web page over a results folder: runs and their metrics, each task's samples "
        "(filtered and sorted by status, metric and the benchmark's axes), and every sample's prompt "
        "with its images, read from the verified builds the runs recorded.",
        epilog="Example: harness view results/  (then open the printed URL)",
    )
    args = ViewOptions.parse_command(parser, argv)
    # A build on the Hub is read from the local Hub cache, where the run put it: the viewer downloads (writes) nothing,
    # unless HF_HUB_OFFLINE=0 says otherwise. Set before huggingface_hub is imported, which reads it once.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.results_dir.is_dir():
        from harness.outputs.results.model_results import not_a_results_folder

        raise UserError(not_a_results_folder(args.results_dir))
    try:
        import uvicorn

        from harness.view.app import create_app, served_hosts
    except ImportError as err:
        raise UserError(
            f"harness view needs the `view` extra ({err.name} is missing): pip install -e '.[view]'"
        ) from None
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(BACKLOG)  # a request sent as soon as the address is printed waits for the server, not refused
    except OSError as err:
        sock.close()
        raise UserError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None
    port = sock.getsockname()[1]
    try:
        app = create_app(
            args.results_dir.resolve(),
            args.data_dir,
            hosts=served_hosts(args.host, port),
            include_paths=list(args.include_path),
        )
    except BaseException:
        sock.close()
        raise
    # Every journal indexed once, from now on, off the pages' threads: a page waits only for its own journal's build.
    threading.Thread(target=app.state.viewer.index_all, name="harness-view-index", daemon=True).start()
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"harness view: serving {args.results_dir} at http://{shown}:{port}/ (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    # A page still running at shutdown is given up after a moment (`harness.view.app`): SIGTERM and Ctrl-C stop
    # the server promptly whatever a request waits on.
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it caught once it has shut down
        print("harness view: stopped", file=sys.stderr)
        return INTERRUPTED
    return 0
