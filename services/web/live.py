"""Server-sent events for the dashboard: a run's page follows its run (`RunStreams`), the runs page
follows every run (`LiveRuns`). Neither polls per client.

RunStreams (GET /api/runs/{run}/live) works as services.grpc.watch and services.grpc.feed do for WatchRun,
but speaks JSON: one stream per watched run reads the events of the run and of its spend account
once, however many browsers follow it, woken only by projector chunks that touched that run
(Projector.originator_listeners); it encodes each SSE event once and hands the same bytes to every
follower's bounded backlog. A follower first gets `state` (the whole RunState, spec included),
then per event `steps` {attempt, steps, metrics: {name: [value or null per step]}}, `checkpoint`
(the checkpoint saved) followed by `state`, `spend` (the run's spend totals) for its account's
events, and `state` (the RunState without its spec) for the run's other events; each carries
`id: <position>`, and a follower that reconnects with Last-Event-ID first reads the step batches it
missed itself. Followers are bounded per caller and in all (services.grpc.watch's bounds: 429
TOO_MANY_WATCHERS); one whose backlog passes BACKLOG_MESSAGES_MAX or BACKLOG_BYTES_MAX is sent an
`error` event (WATCHER_TOO_SLOW, with the position to resume from) and dropped. A comment line
every PING_S keeps proxies from closing an idle stream. Every stream ends when the server shuts
down (the edge closes), and one opened with a token ends when that token is revoked or expires
(`until_refused`: an `error` event with TOKEN_REVOKED or TOKEN_EXPIRED).

LiveRuns (GET /api/live) sends `run` {the RunSummary} for each run that changed. One shared
reader, woken by the projector's originator notifications, reads the summaries of the runs touched
since its last read once for all followers (a run is known by its id, its spend account by the
uuid of "account:<run id>"), at most once per LIVE_INTERVAL_S.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import UUID

from ledger.domain.base import ledger_id
from ledger.domain.errors import LedgerError, Unauthenticated
from ledger.domain.reasons import Reason
from services.runtime.auth import Gate, Identity
from services.runtime.edge import READ_TIMEOUT_MAX_S, Edge
from services.runtime.followers import BACKLOG_BYTES_MAX, BACKLOG_MESSAGES_MAX, WATCHERS_MAX, WATCHERS_PER_CALLER_MAX
from services.web.access import WebError

__all__ = ["RunStreams", "LiveRuns", "Follower", "sse", "until_refused", "PING_S", "LIVE_INTERVAL_S"]

PING_S = 15.0
LIVE_INTERVAL_S = 0.1
# One read of a run's events: at most this many, and this many stored bytes (as services.grpc.feed).
PAGE = 256
PAGE_BYTES = 1024 * 1024
# The most runs one wake of LiveRuns reads; the rest wait for the next.
LIVE_RUNS_PER_READ = 500
KNOWN_MAX = 100_000


async def until_refused(chunks: AsyncIterator[bytes], gate: Gate, identity: Identity) -> AsyncIterator[bytes]:
    """A feed's chunks while the token that opened it stays valid (checked at least every
    STREAM_RECHECK_S: Gate.guard); once it is revoked or expires, one `error` event with the
    reason (TOKEN_REVOKED, TOKEN_EXPIRED) ends the feed."""
    try:
        async for chunk in gate.guard(identity, chunks):
            yield chunk
    except Unauthenticated as refusal:
        yield sse("error", {"reason": str(refusal.reason), "message": refusal.message})


def sse(kind: str, document: Any, position: int | None = None) -> bytes:
    """One server-sent event: its type, id and JSON data on one line."""
    from services.web.api import encode

    head = f"event: {kind}\n" + (f"id: {position}\n" if position is not None else "")
    return head.encode() + b"data: " + encode(document) + b"\n\n"


class Follower:
    """One SSE connection: its caller, the first position it is handed, and its bounded backlog."""

    def __init__(self, key: str, messages_max: int, bytes_max: int) -> None:
        self.key, self.messages_max, self.bytes_max = key, messages_max, bytes_max
        self.start = 0
        self.backlog: collections.deque[tuple[bytes, int]] = collections.deque()
        self.backlog_bytes = 0
        self.ended = False
        self.ready = asyncio.Event()
        self.allowed: dict[str, bool] = {}  # LiveRuns: runs a scoped follower may read.
        self.scope = ""

    def push(self, chunk: bytes, position: int = 0) -> None:
        if self.ended:
            return
        self.backlog.append((chunk, position))
        self.backlog_bytes += len(chunk)
        if len(self.backlog) > self.messages_max or self.backlog_bytes > self.bytes_max:
            resume = self.backlog[0][1]
            self.backlog.clear()
            self.backlog_bytes = 0
            self.backlog.append(
                (
                    sse(
                        "error",
                        {
                            "reason": Reason.WATCHER_TOO_SLOW,
                            "message": f"this stream fell more than {self.messages_max} events or "
                            f"{self.bytes_max} bytes behind: reconnect",
                            "next_position": resume,
                        },
                    ),
                    resume,
                )
            )
            self.ended = True
        self.ready.set()

    def end(self) -> None:
        self.ended = True
        self.ready.set()

    async def next(self, timeout_s: float) -> bytes | None:
        """The next chunk; b"" when none came within `timeout_s`; None once the stream ended."""
        while True:
            if self.backlog:
                chunk, _ = self.backlog.popleft()
                self.backlog_bytes -= len(chunk)
                return chunk
            if self.ended:
                return None
            self.ready.clear()
            try:
                await asyncio.wait_for(self.ready.wait(), timeout_s)
            except TimeoutError:
                return b""


class _Bounds:
    """Followers per caller and in all."""

    def __init__(self) -> None:
        self.count = 0
        self.per_caller: collections.Counter[str] = collections.Counter()
        self.max, self.per_caller_max = WATCHERS_MAX, WATCHERS_PER_CALLER_MAX
        self.messages_max, self.bytes_max = BACKLOG_MESSAGES_MAX, BACKLOG_BYTES_MAX

    def check(self, key: str) -> None:
        """Raises WebError 429 TOO_MANY_WATCHERS when `key` may not follow one more stream."""
        if self.per_caller[key] >= self.per_caller_max or self.count >= self.max:
            scope, limit = (
                ("caller", self.per_caller_max) if self.per_caller[key] >= self.per_caller_max else ("server", self.max)
            )
            raise WebError(
                429, Reason.TOO_MANY_WATCHERS, f"too many live streams: {limit} per {scope}", scope=scope, limit=limit
            )

    def enter(self, key: str) -> Follower:
        self.check(key)
        self.per_caller[key] += 1
        self.count += 1
        return Follower(key, self.messages_max, self.bytes_max)

    def leave(self, follower: Follower) -> None:
        self.count -= 1
        self.per_caller[follower.key] -= 1
        if not self.per_caller[follower.key]:
            del self.per_caller[follower.key]


# A run's stream.


def _steps_document(data: dict[str, Any]) -> dict[str, Any]:
    steps: list[int] = list(data["steps"])
    metrics: dict[str, list[float | None]] = {}
    for name, column in sorted((data.get("metrics") or {}).items()):
        values = list(column["values"])
        index = column.get("index") or ()
        if index:
            spread: list[float | None] = [None] * len(steps)
            for at, value in zip(index, values, strict=False):
                spread[at] = value
            metrics[name] = spread
        else:
            metrics[name] = values
    return {"attempt": data["attempt"], "steps": steps, "metrics": metrics}


def _checkpoint_document(event: dict[str, Any]) -> dict[str, Any]:
    data = event["data"]
    return {
        "attempt": data["attempt"],
        "step": data["step"],
        "handle": {"backend": data["backend"], "uri": data["uri"], "fidelity": data["fidelity"]},
        "sampler_uri": data.get("sampler_uri", ""),
        "final": data.get("final", False),
        "saved_at": event["timestamp"],
        "expires_at": data.get("expires_at"),
        "digest": data.get("digest", ""),
        "superseded": False,
    }


def _read_page(edge: Edge, originator_ids: list[str], position: int) -> list[dict[str, Any]]:
    return edge.ledger.read_events(
        from_position=position, limit=PAGE, originator_ids=originator_ids, bytes_max=PAGE_BYTES
    )


def _state_without_spec(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "run": {key: value for key, value in document["run"].items() if key != "spec"}}


def _chunks(run_id: str, page: list[dict[str, Any]], state: dict[str, Any] | None) -> list[tuple[int, bytes]]:
    """The SSE events of a page of the run's events, encoded once for every follower."""
    out: list[tuple[int, bytes]] = []
    for event in page:
        position, kind = event["position"], event["type"]
        if kind.endswith("StepsRecorded"):
            out.append((position, sse("steps", _steps_document(event["data"]), position)))
            continue
        assert state is not None  # A page with a change reads the state.
        if event["originator_id"] != run_id:
            out.append((position, sse("spend", state["spend"], position)))
            continue
        if kind.endswith("CheckpointSaved"):
            out.append((position, sse("checkpoint", _checkpoint_document(event), position)))
        out.append((position, sse("state", _state_without_spec(state), position)))
    return out


class RunStream:
    """The events of one run and of its spend account, read once for all of its followers."""

    def __init__(self, owner: RunStreams, run_id: str) -> None:
        self.owner, self.edge, self.run_id = owner, owner.edge, run_id
        self.originator_ids = [run_id, str(ledger_id("account", run_id))]
        self.position = 0  # Every event of the run before it has been handed out.
        self.followers: set[Follower] = set()
        self.joining: list[tuple[Follower, int, asyncio.Future[Any]]] = []
        self.changed = asyncio.Event()
        self.reads = 0
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"web-live-{run_id}", context=contextvars.Context()
        )

    async def join(self, follower: Follower, last_id: int) -> tuple[bytes, tuple[int, int] | None] | None:
        """The follower's first event and the positions [from, to) it reads itself first; None when
        the server is closing."""
        joined: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.joining.append((follower, last_id, joined))
        self.changed.set()
        return await joined  # type: ignore[no-any-return]

    def leave(self, follower: Follower) -> None:
        self.followers.discard(follower)
        self.joining = [entry for entry in self.joining if entry[0] is not follower]
        if not self.followers and not self.joining:
            self.close()

    def close(self) -> None:
        self.owner.forget(self)
        self.task.cancel()
        for follower in self.followers:
            follower.end()
        for _, _, joined in self.joining:
            if not joined.done():
                joined.set_result(None)
        self.followers.clear()
        self.joining.clear()

    async def _run(self) -> None:
        try:
            while self.followers or self.joining:
                self.changed.clear()
                page = await self._read() if self.followers else []
                if page:
                    await self._hand_out(page)
                if self.joining:
                    await self._admit()
                elif not page:
                    await self.changed.wait()
        except asyncio.CancelledError:
            raise
        except Exception:  # Storage, projection: the followers end, and reconnect.
            for follower in self.followers:
                follower.push(sse("error", {"reason": Reason.UNAVAILABLE, "message": "the ledger could not be read"}))
            self.close()
        else:
            self.close()

    async def _read(self) -> list[dict[str, Any]]:
        self.reads += 1
        page: list[dict[str, Any]] = await self.edge.call(_read_page, self.edge, self.originator_ids, self.position)
        return page

    async def _state(self, min_position: int) -> dict[str, Any]:
        from services.web.api import state_document

        timeout_s = await self.edge.caught_up(min_position, READ_TIMEOUT_MAX_S)

        def read() -> dict[str, Any]:
            state = self.edge.ledger.run_state(self.run_id, min_position=min_position, timeout_s=timeout_s)
            return state_document(state)

        return await self.edge.call(read)

    async def _admit(self) -> None:
        present = {id(follower) for follower, _, _ in self.joining}
        try:
            head = await self.edge.call(self.edge.ledger.head)
            state = await self._state(max(head, self.position - 1))
        except LedgerError:
            state = None
        waiting = [entry for entry in self.joining if id(entry[0]) in present and not entry[2].done()]
        self.joining = [entry for entry in self.joining if id(entry[0]) not in present]
        if state is None:
            for follower, _, joined in waiting:
                follower.end()
                joined.set_result(None)
            return
        if not self.followers:
            self.position = max(self.position, state["position"] + 1)
        first = sse("state", state, state["position"])
        for follower, last_id, joined in waiting:
            follower.start = max(self.position, state["position"] + 1)
            behind = (last_id + 1, follower.start) if 0 < last_id and last_id + 1 < follower.start else None
            self.followers.add(follower)
            joined.set_result((first, behind))

    async def _hand_out(self, page: list[dict[str, Any]]) -> None:
        changes = [event["position"] for event in page if not event["type"].endswith("StepsRecorded")]
        state = await self._state(changes[-1]) if changes else None
        # Encoded once for every follower, in a worker thread (a page can hold megabytes of steps).
        chunks = await self.edge.call(_chunks, self.run_id, page, state)
        for position, chunk in chunks:
            for follower in self.followers:
                if position >= follower.start:
                    follower.push(chunk, position)
        self.position = page[-1]["position"] + 1
        for follower in [f for f in self.followers if f.ended]:
            self.followers.discard(follower)


class RunStreams:
    """Every run followed over SSE on one server: the streams, the bounds, the projector's signal."""

    _of: weakref.WeakKeyDictionary[Edge, RunStreams] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, edge: Edge) -> RunStreams:
        streams = cls._of.get(edge)
        if streams is None:
            streams = cls._of[edge] = cls(edge)
        return streams

    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.loop = asyncio.get_running_loop()
        self.bounds = _Bounds()
        edge.followers["sse_run"] = lambda: self.bounds.count
        self.streams: dict[str, RunStream] = {}
        self._by_id: dict[UUID, RunStream] = {}
        self._watched: frozenset[UUID] = frozenset()  # Read by the projector's thread.
        edge.ledger.projector.originator_listeners.append(self._projected)
        self._closer = self.loop.create_task(_close_with(edge, self._close), context=contextvars.Context())

    def reads_of(self, run_id: str) -> int:
        stream = self.streams.get(run_id)
        return stream.reads if stream is not None else 0

    def check(self, key: str) -> None:
        """Raises WebError 429 TOO_MANY_WATCHERS when `key` may not follow one more run."""
        self.bounds.check(key)

    async def follow(self, run_id: str, key: str, last_id: int) -> AsyncIterator[bytes]:
        """The SSE chunks of one follower of `run_id`, until the server closes, the follower falls
        behind, or the caller stops iterating. A follower past the bounds gets one `error` event
        (TOO_MANY_WATCHERS); check() refuses it before the stream starts."""
        if self.edge.closed:
            return
        try:
            follower = self.bounds.enter(key)
        except WebError as refusal:
            yield sse("error", refusal.body()["error"])
            return
        stream = self.streams.get(run_id) or self._stream(run_id)
        try:
            joined = await stream.join(follower, last_id)
            if joined is None:
                return
            first, behind = joined
            yield first
            if behind is not None:
                async for missed in self._catch_up(stream, *behind):
                    yield missed
            while (chunk := await follower.next(PING_S)) is not None:
                yield chunk or b": ping\n\n"
        finally:
            stream.leave(follower)
            self.bounds.leave(follower)

    async def _catch_up(self, stream: RunStream, start: int, stop: int) -> AsyncIterator[bytes]:
        """The step batches in [start, stop), read by the follower itself (the state it was sent
        holds every other change)."""
        while start < stop and not self.edge.closed:
            page = await self.edge.call(_read_page, self.edge, stream.originator_ids, start)
            if not page:
                return
            for event in page:
                if event["position"] >= stop:
                    return
                if event["type"].endswith("StepsRecorded"):
                    yield sse("steps", _steps_document(event["data"]), event["position"])
            start = page[-1]["position"] + 1

    def _stream(self, run_id: str) -> RunStream:
        stream = self.streams[run_id] = RunStream(self, run_id)
        for originator_id in stream.originator_ids:
            with contextlib.suppress(ValueError):
                self._by_id[UUID(originator_id)] = stream
        self._watched = frozenset(self._by_id)
        return stream

    def forget(self, stream: RunStream) -> None:
        if self.streams.get(stream.run_id) is stream:
            del self.streams[stream.run_id]
        for originator_id in [i for i, s in self._by_id.items() if s is stream]:
            del self._by_id[originator_id]
        self._watched = frozenset(self._by_id)

    def _projected(self, originator_ids: frozenset[UUID] | None) -> None:
        # In the projector's thread: only chunks that touched a followed run reach the loop.
        if originator_ids is not None and self._watched.isdisjoint(originator_ids):
            return
        with contextlib.suppress(RuntimeError):  # The loop is closed: nobody follows any more.
            self.loop.call_soon_threadsafe(self._wake, originator_ids)

    def _wake(self, originator_ids: frozenset[UUID] | None) -> None:
        streams = (
            self.streams.values()
            if originator_ids is None
            else {self._by_id[i] for i in originator_ids if i in self._by_id}
        )
        for stream in list(streams):
            stream.changed.set()

    def _close(self) -> None:
        with contextlib.suppress(ValueError):
            self.edge.ledger.projector.originator_listeners.remove(self._projected)
        for stream in list(self.streams.values()):
            stream.close()
        RunStreams._of.pop(self.edge, None)
        self.edge.followers.pop("sse_run", None)


async def _close_with(edge: Edge, close: Callable[[], None]) -> None:
    """Call `close` when the server closes its edge (shutdown)."""
    while not edge.closed:
        await edge.progress().wait()
    close()


# The runs page.


def _summaries(
    edge: Edge, touched: set[UUID] | None, accounts: dict[UUID, str], others: set[UUID], first_page: int
) -> list[Any]:
    """The summaries of the runs among `touched` (a run's id or its account's), or of the newest
    runs when None; learns which ids are runs' accounts and which are no run's."""
    ledger = edge.ledger
    if touched is None:
        page = ledger.list_runs(limit=first_page)
        for run in page.runs:
            accounts[ledger_id("account", run.run_id)] = run.run_id
        return list(page.runs)
    run_ids: set[str] = set()
    for originator in touched:
        if originator in accounts:
            run_ids.add(accounts[originator])
        elif originator not in others:
            run_ids.add(str(originator))
    found = []
    for run_id in sorted(run_ids):
        page = ledger.list_runs(limit=1, run_id_prefix=run_id, include_retracted=True)
        if page.runs and page.runs[0].run_id == run_id:
            found.append(page.runs[0])
            accounts[ledger_id("account", run_id)] = run_id
        else:
            others.add(UUID(run_id))
    if len(accounts) > KNOWN_MAX:
        accounts.clear()
    if len(others) > KNOWN_MAX:
        others.clear()
    return found


class LiveRuns:
    """The runs page's live feed: one reader for every follower (see the module docstring)."""

    _of: weakref.WeakKeyDictionary[Edge, LiveRuns] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, edge: Edge) -> LiveRuns:
        live = cls._of.get(edge)
        if live is None:
            live = cls._of[edge] = cls(edge)
        return live

    def __init__(self, edge: Edge, *, first_page: int = 200) -> None:
        self.edge = edge
        self.loop = asyncio.get_running_loop()
        self.bounds = _Bounds()
        edge.followers["sse_runs"] = lambda: self.bounds.count
        self.followers: set[Follower] = set()
        self.first_page = first_page
        self.touched: set[UUID] | None = set()
        self.accounts: dict[UUID, str] = {}
        self.others: set[UUID] = set()
        self.wake = asyncio.Event()
        self.reads = 0
        self._task: asyncio.Task[None] | None = None
        edge.ledger.projector.originator_listeners.append(self._projected)
        self._closer = self.loop.create_task(_close_with(edge, self._close), context=contextvars.Context())

    def check(self, key: str) -> None:
        self.bounds.check(key)

    async def follow(self, key: str, scope: str = "") -> AsyncIterator[bytes]:
        """The SSE chunks of one follower; one with a `scope` (a scoped token's account) is sent
        only the runs under it."""
        if self.edge.closed:
            return
        try:
            follower = self.bounds.enter(key)
        except WebError as refusal:
            yield sse("error", refusal.body()["error"])
            return
        follower.scope = scope
        self.followers.add(follower)
        if self._task is None or self._task.done():
            self._task = self.loop.create_task(self._run(), name="web-live-runs", context=contextvars.Context())
        try:
            yield b": live\n\n"
            while (chunk := await follower.next(PING_S)) is not None:
                if not chunk:
                    yield b": ping\n\n"
                    continue
                yield chunk
        finally:
            self.followers.discard(follower)
            self.bounds.leave(follower)

    def _projected(self, originator_ids: frozenset[UUID] | None) -> None:
        if not self.followers:
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._touch, originator_ids)

    def _touch(self, originator_ids: frozenset[UUID] | None) -> None:
        if originator_ids is None or self.touched is None:
            self.touched = None
        else:
            self.touched |= originator_ids
        self.wake.set()

    async def _run(self) -> None:
        from services.web.api import summary_document

        if not self.accounts:  # Learn the newest runs' accounts, so that their spend is seen.
            with contextlib.suppress(LedgerError):
                await self.edge.call(_summaries, self.edge, None, self.accounts, self.others, self.first_page)
        while self.followers and not self.edge.closed:
            await self.wake.wait()
            self.wake.clear()
            if self.edge.closed:
                break
            touched, self.touched = self.touched, set()
            if touched is not None and len(touched) > LIVE_RUNS_PER_READ:
                rest = set(list(touched)[LIVE_RUNS_PER_READ:])
                touched -= rest
                self.touched |= rest
                self.wake.set()
            if touched is not None and not touched:
                continue
            self.reads += 1
            try:
                runs = await self.edge.call(_summaries, self.edge, touched, self.accounts, self.others, self.first_page)
            except LedgerError:
                runs = []
            for run in runs:
                chunk = sse("run", summary_document(run))
                for follower in list(self.followers):
                    if await self._may_see(follower, run.run_id):
                        follower.push(chunk)
            await asyncio.sleep(LIVE_INTERVAL_S)  # Bursts of chunks are read together.

    async def _may_see(self, follower: Follower, run_id: str) -> bool:
        if not follower.scope:
            return True
        allowed = follower.allowed.get(run_id)
        if allowed is None:
            try:
                allowed = bool(await self.edge.call(self.edge.ledger.run_within, run_id, follower.scope))
            except LedgerError:
                allowed = False
            if len(follower.allowed) < KNOWN_MAX:
                follower.allowed[run_id] = allowed
        return allowed

    def _close(self) -> None:
        with contextlib.suppress(ValueError):
            self.edge.ledger.projector.originator_listeners.remove(self._projected)
        for follower in list(self.followers):
            follower.end()
        self.wake.set()
        LiveRuns._of.pop(self.edge, None)
        self.edge.followers.pop("sse_runs", None)
