"""`RayPool`: `data_parallel_size` replicas of a backend as Ray actors, one `Model` to the runner.

The driver keeps the backend without its weights (`front`: hf's processor and config, vLLM's settings and prompt
count): the runner screens, counts and orders requests with it as it would with the backend itself, and the batches
are the backend's own (`front.batches`), so a replica answers exactly the batches a single process would have run.
The pool hands those batches to free replicas in the runner's order (longest first), each replica holding at most
`DEPTH`; a backend that schedules its own batches (vLLM: `generates_across_tasks`) has each of its chunks divided
between the replicas instead, the requests sharing a prompt prefix kept on one replica (`shares`). `stream` yields
each batch's answers as they return, so the runner journals them as today. The replicas start with the pool, or, for a
backend whose front holds their identity (vLLM, SGLang: `Replicas.front_identity`), with its first batch: a resumed
run with nothing left to send starts none.

Faults: a replica whose process dies (killed, out of memory, a crash) is restarted by Ray (`replica_restarts`
times); the batches it held run again, on it or another replica, and their answers are yielded once, when a replica
returns them; nothing is yielded twice or lost, and the statistics of each process that died stay in the record
(`before_restart`). A replica that cannot start, or stops answering for `replica_timeout` seconds, or whose backend
stops the run (`BackendFatalError`), stops the run with one line naming it. The driver killed: the run's journal
resumes it as for a single process (the replicas die with the driver's job).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness.api import BackendFatalError, Model, Request, Response, collect
from harness.errors import UserError
from harness.inputs.build_images import BuildFiles
from harness.inputs.integrity import release_mapped_pages
from harness.models.backends.replicas.actor import Build, ReplicaState
from harness.models.backends.replicas.cluster import Cluster, connect
from harness.models.backends.replicas.launch import (
    Slot,
    cause_line,
    check_room,
    launch,
    replica_statistics,
    wait_ready,
)
from harness.models.backends.replicas.settings import PoolSettings, replica_resources
from harness.models.backends.replicas.shares import LargestImage, split_shares
from harness.models.backends.replicas.wire import Wire
from harness.models.registry import backend_spec
from harness.models.shared.front_view import FrontView

DEPTH = 2  # batches a replica holds at once: the next waits on the replica while it answers one, so it never idles
WINDOW_BATCHES = 16  # batches per window (`batches`), per replica
WINDOW_REQUESTS = 2048  # requests per window at most (whole batches): how many a window holds built at once
CLOSE_TIMEOUT = 60.0  # seconds replicas get to shut their engines down at the end
RESTART_POLL = 0.2  # seconds between asking a restarting replica whether it is back


class _Stopped(Exception):
    """A replica's backend stopped the run (`BackendFatalError`); `finished`: the batch's answers it did finish."""

    def __init__(self, message: str, finished: Sequence[Response | None] | None) -> None:
        super().__init__(message)
        self.finished = finished


@dataclass
class _Unit:
    """A batch for one replica: positions into the requests of one `stream` call."""

    positions: list[int]
    tries: int = 0  # replicas that died holding it


class RayPool(FrontView):
    def __init__(
        self,
        front: Model,
        backend: str,
        args: dict[str, str],
        settings: PoolSettings,
        *,
        batch_size: int = 1,
        max_batch_tokens: int | None = None,
        address: str | None = None,
        build: Build | None = None,
    ) -> None:
        self.front = front
        self.name = front.name
        self.backend = backend
        self.settings = settings
        self.size = settings.data_parallel_size
        self._max_images = 0
        self._largest = LargestImage()  # among the images of the requests the backend planned its batches with
        self._fit_start: int | None = None
        self._unit_of: dict[int, tuple[Request, int]] = {}  # the current window's requests -> their batch
        self._readable: dict[BuildFiles, bool] = {}
        self.batches_run = 0
        self.batches_rerun = 0
        self.restarts = 0
        self.slots: list[Slot] = []
        self._closed = False
        self._launch = (args, batch_size, max_batch_tokens, address, build)
        self.cluster: Cluster | None = None
        self.resources: dict[str, float] = {}
        readable = None if settings.replica_data == "ship" else self._reads
        guesses = backend_spec(backend).reads_random_answer  # a request's `random_answer` goes along only for it
        self.wire = Wire(guesses, readable)
        # The front's identity where it holds the replicas' (they start with the first batch), else replica 0's.
        self.driver = front.identity() if backend_spec(backend).replicas.front_identity else None
        if self.driver is None:
            self._started()

    def _started(self) -> Cluster:
        """The cluster, its replicas started and ready (at once, or with the first batch: `driver`)."""
        if self.cluster is not None:
            return self.cluster
        args, batch_size, max_batch_tokens, address, build = self._launch
        wanted = replica_resources(self.backend, self.front, 0.0)  # CPUs, where no GPU: what a local cluster offers
        try:
            self.cluster = cluster = connect(address, self.size * wanted["num_cpus"])
            self.resources = replica_resources(self.backend, self.front, cluster.resources().get("GPU", 0.0))
            check_room(cluster, self.resources, self.size, self.backend)
            self.slots = launch(
                cluster, self.backend, args, self.settings, self.resources, batch_size, max_batch_tokens, build
            )
            wait_ready(cluster, self.slots, self.backend, self.driver)
        except BaseException as err:
            if self.driver is None:  # in the constructor: nothing else will close it
                self.close()
            elif isinstance(err, UserError):  # mid-run: the run stops in one line, resumable
                raise BackendFatalError(str(err)) from None
            raise
        return cluster

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        raise TypeError("a pool is built by `harness.models.backends.replicas.build_model`")

    # ------------------------------------------------------------------------- what the runner reads
    # The front's attributes are read through (`FrontView`); preparing and sizing batches are the pool's too.
    def prepare(self, max_images: int, largest_image: tuple[int, int] | None = None) -> None:
        self._max_images = max(self._max_images, max_images)
        self._largest.see(largest_image)
        self.front.prepare(max_images, largest_image)

    def fit_batch_size(self, start: int) -> str | None:
        why = self.front.fit_batch_size(start)
        if why is None:  # each replica searches its own (its own device), from the same start
            self._fit_start = start
        return why

    def identity(self) -> dict[str, Any]:
        return self.driver if self.driver is not None else self.slots[0].info["identity"]

    def statistics(self) -> dict[str, Any]:
        if self.cluster is None:  # nothing was left to send: no replica started
            return {**self.front.statistics(), "replicas": {"data_parallel_size": self.size, "started": False}}
        record = {
            "data_parallel_size": self.size,
            "ray": self.cluster.describe(),
            "reserved_per_replica": self.resources,
            "placement": [{"rank": s.rank, "node": s.info.get("node"), "gpus": s.info.get("gpus")} for s in self.slots],
            "images": self.wire.counts.describe(),
            "batches": self.batches_run,
            "batches_rerun": self.batches_rerun,
            "replica_restarts": self.restarts,
            "backend_stats": replica_statistics(self.cluster, self.slots),
        }
        return {**self.front.statistics(), "replicas": record}

    # ---------------------------------------------------------------------------------------- batches
    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        """The backend's batches, several at a time (a window): the runner hands a window to `stream` (through the
        response cache, which takes out what it holds), whose replicas answer its batches side by side. A window
        ends after `WINDOW_BATCHES` batches per replica or `WINDOW_REQUESTS` requests, so that only so many requests
        are built at once; its replicas wait on its last batch before the next window starts."""
        window: list[list[Request]] = []
        count = 0
        for batch in self.front.batches(self._largest.seeing(requests)):
            window.append(batch)
            count += len(batch)
            if len(window) >= WINDOW_BATCHES * self.size or count >= WINDOW_REQUESTS:
                yield self._window(window)
                window, count = [], 0
        if window:
            yield self._window(window)
        self._unit_of = {}

    def _window(self, batches: list[list[Request]]) -> list[Request]:
        # By identity: the cache passes on the window's own request objects, less those it answered.
        self._unit_of = {id(r): (r, key) for key, batch in enumerate(batches) for r in batch}
        return [r for batch in batches for r in batch]

    def _units(self, requests: Sequence[Request]) -> list[_Unit]:
        """The batches of `requests` as the backend made them (a window's, less what the cache answered), or made
        now (a `generate` call); an engine's batch divided into shares, one per replica."""
        keys = [self._unit_of.get(id(r)) for r in requests]
        groups: dict[int, list[int]] = {}
        known = [key for key, r in zip(keys, requests, strict=True) if key is not None and key[0] is r]
        if len(known) == len(keys):
            for position, key in enumerate(known):
                groups.setdefault(key[1], []).append(position)
            units = list(groups.values())
        else:
            where = {id(r): i for i, r in enumerate(requests)}
            units = [[where[id(r)] for r in batch] for batch in self.front.batches(list(requests))]
        if not self.front.facts.generates_across_tasks:
            return [_Unit(positions) for positions in units]
        return [
            _Unit([unit[i] for i in share])
            for unit in units
            for share in split_shares([requests[p] for p in unit], self.size)
        ]

    # ------------------------------------------------------------------------------------- generating
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return collect(self.stream(requests), len(requests))

    def stream(self, requests: Sequence[Request]) -> Iterator[list[tuple[int, Response]]]:
        """Each batch's answers as a replica returns them; a batch whose replica died runs again."""
        ray = self._started().ray
        pending = deque(self._units(requests))
        holding: dict[Any, tuple[_Unit, Slot]] = {}
        while pending or holding:
            self._hand_out(requests, pending, holding)
            probes = {slot.probe: slot for slot in self.slots if slot.probe is not None}
            if not holding and not probes:
                raise BackendFatalError(f"no {self.backend} replica is left to answer {len(pending)} batches")
            done, _ = ray.wait([*holding, *probes], num_returns=1, timeout=self._wait_seconds())
            if not done:
                self._check_silence()
                continue
            ref = done[0]
            if ref in probes:
                self._revived(probes[ref])
                continue
            unit, slot = holding.pop(ref)
            slot.busy -= 1
            slot.since = time.monotonic()
            try:
                responses = self._answers(ref, unit, slot, pending)
            except _Stopped as stopped:  # what the failing batch did answer is journalled first
                if stopped.finished:
                    yield [(unit.positions[i], r) for i, r in enumerate(stopped.finished) if r is not None]
                raise BackendFatalError(str(stopped)) from None
            if responses is None:
                continue
            self.batches_run += 1
            yield [(position, response) for position, response in zip(unit.positions, responses, strict=True)]
            release_mapped_pages()  # images the driver read for this batch (shipped, or checked by the cache)

    def _hand_out(
        self, requests: Sequence[Request], pending: deque[_Unit], holding: dict[Any, tuple[_Unit, Slot]]
    ) -> None:
        """Pending batches to replicas with room, the least busy first."""
        while pending:
            free = [s for s in self.slots if s.probe is None and s.busy < DEPTH]
            if not free:
                return
            slot = min(free, key=lambda s: (s.busy, s.rank))
            unit = pending.popleft()
            batch = [requests[p] for p in unit.positions]
            state = ReplicaState(
                max(self._max_images, max((r.num_images for r in batch), default=0)),
                fit_batch_size=self._fit_start,
                largest_image=self._largest.covering(batch),
            )
            ref = slot.actor.run.remote(self.wire.batch(batch), state)
            if not slot.busy:
                slot.since = time.monotonic()
            slot.busy += 1
            holding[ref] = (unit, slot)

    def _answers(self, ref: object, unit: _Unit, slot: Slot, pending: deque[_Unit]) -> list[Response] | None:
        """A batch's responses; None when its replica died holding it (it is queued again, first)."""
        ray = self._started().ray
        try:
            answered = ray.get(ref)
        except ray.exceptions.RayActorError as err:
            if getattr(err, "_actor_init_failed", False):
                raise BackendFatalError(
                    f"{self.backend} {slot.where} could not start again: {cause_line(err)}"
                ) from None
            unit.tries += 1
            if unit.tries > self.settings.replica_restarts:
                raise BackendFatalError(
                    f"{self.backend} replicas died {unit.tries} times running the same batch "
                    f"({len(unit.positions)} requests): {cause_line(err)}"
                ) from None
            self.batches_rerun += 1
            pending.appendleft(unit)
            if slot.probe is None:  # its first lost batch: the process died; wait for Ray to restart it
                self.restarts += 1
                if slot.seen is not None:
                    slot.before_restart.append(slot.seen)
                slot.seen = None
                print(
                    f"harness: {self.backend} {slot.where} died ({cause_line(err)[:160]}); Ray restarts it and its "
                    "batches run again",
                    file=sys.stderr,
                    flush=True,
                )
                slot.probe, slot.probe_since = slot.actor.ready.remote(), time.monotonic()
            return None
        except ray.exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None)
            message = str(cause).strip() if isinstance(cause, BackendFatalError | UserError) else cause_line(err)
            finished = getattr(cause, "responses", None)
            raise _Stopped(
                f"{self.backend} {slot.where}: {message}",
                finished if finished is not None and len(finished) == len(unit.positions) else None,
            ) from None
        slot.seen, responses = answered.statistics, answered.responses
        if len(responses) != len(unit.positions):
            raise BackendFatalError(
                f"{self.backend} {slot.where} returned {len(responses)} responses for {len(unit.positions)} requests"
            )
        return responses

    def _revived(self, slot: Slot) -> None:
        ray = self._started().ray
        try:
            slot.info = {**slot.info, **ray.get(slot.probe)}
        except ray.exceptions.ActorUnavailableError:  # still restarting: ask again in a moment
            time.sleep(RESTART_POLL)
            slot.probe = slot.actor.ready.remote()
            return
        except Exception as err:
            raise BackendFatalError(
                f"{self.backend} {slot.where} died and could not be restarted: {cause_line(err)}"
            ) from None
        slot.probe = None
        slot.since = time.monotonic()

    def _wait_seconds(self) -> float:
        now = time.monotonic()
        deadlines = [s.since + self.settings.replica_timeout for s in self.slots if s.busy]
        deadlines += [s.probe_since + self.settings.replica_timeout for s in self.slots if s.probe is not None]
        return max(0.1, min(deadlines, default=now + 60.0) - now)

    def _check_silence(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.busy and now - slot.since > self.settings.replica_timeout:
                raise BackendFatalError(
                    f"{self.backend} {slot.where} gave no answer within "
                    f"{self.settings.replica_timeout:g} s (replica_timeout); every replica stopped"
                )
            if slot.probe is not None and now - slot.probe_since > self.settings.replica_timeout:
                raise BackendFatalError(
                    f"{self.backend} {slot.where} died and was not back within "
                    f"{self.settings.replica_timeout:g} s (replica_timeout)"
                )

    # ----------------------------------------------------------------------------------------- images
    def _reads(self, files: BuildFiles) -> bool:
        """Whether every replica reads `files` itself (asked once per build); where one cannot, the build's images
        travel through the object store (`replica_data=read` stops the run instead)."""
        if files not in self._readable:
            ray = self._started().ray
            reasons = []
            asked = [(slot, slot.actor.unreadable.remote(files)) for slot in self.slots if slot.probe is None]
            for slot, answer in asked:  # (a replica restarting now is not asked)
                try:
                    reason = ray.get(answer)
                except Exception as err:  # a replica that died meanwhile: this build's images travel as bytes
                    reason = f"no answer: {cause_line(err)}"
                if reason:
                    reasons.append(f"{slot.where}: {reason}")
            if reasons and self.settings.replica_data == "read":
                raise BackendFatalError(f"replica_data=read: {reasons[0]}")
            if reasons:
                self.wire.counts.why_shipped[files.location] = reasons[0]
            self._readable[files] = not reasons
        return self._readable[files]

    # ---------------------------------------------------------------------------------------- closing
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        slots, self.slots = self.slots, []
        self.front.close()
        cluster, self.cluster = self.cluster, None
        if cluster is None:
            return
        ray = cluster.ray
        if slots and ray.is_initialized():
            # Idle replicas shut their engines down; one still holding a batch (the run stopped: a hung or failing
            # replica, an interrupt) would answer it first, so it is killed at once.
            closing = [slot.actor.close.remote() for slot in slots if not slot.busy and slot.probe is None]
            try:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT)
            except Exception:  # a dead replica has nothing to close
                pass
            for slot in slots:
                try:
                    ray.kill(slot.actor, no_restart=True)
                except Exception:
                    pass
        cluster.close()
