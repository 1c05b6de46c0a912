"""Server-sent events for the dashboard: a run's page follows its run (`RunStreams`, GET
/api/runs/{run}/live); the runs page follows every run (services.web.live_runs). Neither polls per
client.

RunStreams is the SSE encoder of the run feed (services.runtime.feed), which WatchRun shares
(services.grpc.watch): one feed per followed run reads the events of the run and of its spend
account once, however many browsers follow it, woken only by projector chunks that touched that
run; this encoder makes each SSE event once, as JSON, and the feed hands the same bytes to every
follower's bounded backlog. A follower first gets `state` (the whole RunState, spec included),
then per event `steps` {attempt, steps, metrics: {name: [value or null per step]}}, `checkpoint`
(the checkpoint saved) followed by `state`, `spend` (the run's spend totals) for its account's
events, and `state` (the RunState without its spec) for the run's other events; each carries
`id: <position>`, and a follower that reconnects with Last-Event-ID first reads the step batches it
missed itself. Followers are bounded per caller and in all (the feed's bounds: 429
TOO_MANY_WATCHERS); one whose backlog passes BACKLOG_MESSAGES_MAX or BACKLOG_BYTES_MAX is sent an
`error` event (WATCHER_TOO_SLOW, with the position to resume from) and dropped. A comment line
every PING_S keeps proxies from closing an idle stream. Every stream ends when the server shuts
down (the edge closes), and one opened with a token ends when that token is revoked or expires
(`until_refused`: an `error` event with TOKEN_REVOKED or TOKEN_EXPIRED).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

from ledger.domain.errors import LedgerError, Unauthenticated
from ledger.domain.reasons import Reason
from services.runtime import feed
from services.runtime.auth import Gate, Identity
from services.runtime.edge import Edge
from services.runtime.feed import CHILD_OPENED, Bounds, Encoder, Entry, Feeds, RunFeed, is_change, read_events
from services.runtime.scopes import child_count_within
from services.web.access import WebError
from services.web.documents import encode, state_document

__all__ = ["RunStreams", "Follower", "admitted", "sse", "until_refused", "lineage_within_chunks", "too_many", "PING_S"]

PING_S = 15.0


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
    head = f"event: {kind}\n" + (f"id: {position}\n" if position is not None else "")
    return head.encode() + b"data: " + encode(document) + b"\n\n"


def _lineage_chunk_within(ledger: Any, chunk: bytes, scope: str) -> bytes:
    """A `state` event with its source and children kept only where they are runs under `scope`
    (services.runtime.scopes.lineage_within); any other chunk as it is."""
    if not chunk.startswith(b"event: state\n"):
        return chunk
    head, _, data = chunk.partition(b"data: ")
    document = json.loads(data)
    source, children = document.get("source"), document.get("children") or []
    source_outside = source is not None and not ledger.run_within(source["run_id"], scope)
    kept = [child for child in children if ledger.run_within(child["run_id"], scope)]
    count = child_count_within(len(children), len(kept), int(document.get("child_count", 0)))
    if not source_outside and len(kept) == len(children) and count == document.get("child_count", 0):
        return chunk
    document = {**document, "source": None if source_outside else source, "children": kept, "child_count": count}
    return head + b"data: " + encode(document) + b"\n\n"


async def lineage_within_chunks(chunks: AsyncIterator[bytes], edge: Any, scope: str) -> AsyncIterator[bytes]:
    """A run's SSE chunks as a token scoped to `scope` may read them (no other scope's run as
    the run's source or child); every chunk as it is without a scope."""
    async for chunk in chunks:
        if scope and chunk.startswith(b"event: state\n") and (b'"source":{' in chunk or b'"children":[{' in chunk):
            chunk = await edge.call(_lineage_chunk_within, edge.ledger, chunk, scope)
        yield chunk


def too_many(scope: str, limit: int) -> Exception:
    return WebError(
        429, Reason.TOO_MANY_WATCHERS, f"too many live streams: {limit} per {scope}", scope=scope, limit=limit
    )


def admitted(bounds: Bounds[Follower], key: str) -> Follower | bytes:
    """A follower entered in `bounds`, or the `error` event (TOO_MANY_WATCHERS) that refuses it."""
    try:
        return bounds.enter(key)
    except WebError as refusal:
        return sse("error", refusal.body()["error"])


class Follower(feed.Follower[bytes]):
    """One SSE connection; one that falls behind is sent an `error` event (WATCHER_TOO_SLOW)."""

    def __init__(self, key: str, messages_max: int, bytes_max: int) -> None:
        super().__init__(key, messages_max, bytes_max)
        self.allowed: dict[str, bool] = {}  # The runs page: runs a scoped follower may read.
        self.scope = ""

    def push(self, chunk: bytes, position: int = 0) -> None:
        self.put(chunk, len(chunk), position)

    def too_slow(self, resume: int) -> None:
        self.backlog.clear()
        self.backlog_bytes = 0
        document = {
            "reason": Reason.WATCHER_TOO_SLOW,
            "message": f"this stream fell more than {self.messages_max} events or {self.bytes_max} bytes behind: "
            "reconnect",
            "next_position": resume,
        }
        chunk = sse("error", document)
        self.backlog.append((chunk, len(chunk), resume))
        self.backlog_bytes += len(chunk)
        self.ended = True

    async def next(self, timeout_s: float | None = None) -> bytes | None:
        """The next chunk; b"" when none came within `timeout_s`; None once the stream ended."""
        try:
            return await super().next(timeout_s)
        except TimeoutError:
            return b""


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


def _state_without_spec(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "run": {key: value for key, value in document["run"].items() if key != "spec"}}


def _chunks(run_id: str, page: list[Entry], state: dict[str, Any] | None) -> list[tuple[int, bytes]]:
    """The SSE events of a page of the run's events, encoded once for every follower."""
    out: list[tuple[int, bytes]] = []
    for position, kind, event in page:
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


class SseEncoder(Encoder[bytes, dict[str, Any]]):
    """The feed's items as SSE chunks, encoded once (in a worker thread) for every follower."""

    task_prefix = "web-live"

    def read_page(self, edge: Edge, run_id: str, originator_ids: list[str], position: int) -> list[Entry]:
        return [(e["position"], e["type"], e) for e in read_events(edge, originator_ids, position)]

    def state(self, state: Any) -> dict[str, Any]:
        return state_document(state)

    def position_of(self, state: dict[str, Any]) -> int:
        return int(state["position"])

    def first(self, position: int, state: dict[str, Any]) -> bytes:
        return sse("state", state, position)

    def place(self, asked: int, state_position: int, feed_position: int) -> tuple[int, tuple[int, int] | None]:
        start = max(feed_position, state_position + 1)
        return start, (asked + 1, start) if 0 < asked and asked + 1 < start else None

    def child_opened(self, run_id: str, position: int, child_run_id: str) -> Entry:
        """A `state` event (the run's children changed)."""
        return (position, CHILD_OPENED, {"originator_id": run_id})

    def missed(self, entry: Entry) -> bytes | None:
        """The step batches only: the state a follower was sent holds every other change."""
        position, kind, event = entry
        return None if is_change(kind) else sse("steps", _steps_document(event["data"]), position)

    def refuse(self, follower: feed.Follower[bytes], joined: asyncio.Future[Any], error: LedgerError) -> None:
        follower.end()
        joined.set_result(None)

    def failed(self, feed: RunFeed[bytes, dict[str, Any]], error: Exception) -> None:
        """The followers are told, and reconnect."""
        chunk = sse("error", {"reason": Reason.UNAVAILABLE, "message": "the ledger could not be read"})
        for follower in feed.followers:
            follower.put(chunk, len(chunk), 0)
        feed.close()

    async def hand_out(
        self, feed: RunFeed[bytes, dict[str, Any]], page: list[Entry], state: dict[str, Any] | None
    ) -> None:
        # Encoded once for every follower, in a worker thread (a page can hold megabytes of steps).
        for position, chunk in await feed.edge.call(_chunks, feed.run_id, page, state):
            feed.push(position, chunk, len(chunk))


class RunStreams(Feeds[bytes, dict[str, Any]]):
    """Every run followed over SSE on one server (Edge.followers["sse_run"])."""

    _of: weakref.WeakKeyDictionary[Edge, RunStreams] = weakref.WeakKeyDictionary()

    def __init__(self, edge: Edge) -> None:
        super().__init__(edge, SseEncoder(), Bounds(Follower, too_many), metric="sse_run")

    def check(self, key: str) -> None:
        """Raises WebError 429 TOO_MANY_WATCHERS when `key` may not follow one more run."""
        self.bounds.check(key)

    async def follow(self, run_id: str, key: str, last_id: int, scope: str = "") -> AsyncIterator[bytes]:
        """The SSE chunks of one follower of `run_id`, until the server closes, the follower falls
        behind, or the caller stops iterating. A follower past the bounds gets one `error` event
        (TOO_MANY_WATCHERS); check() refuses it before the stream starts. One with a `scope` (a
        scoped token's account) hears of no child opened outside it."""
        if self.edge.closed:
            return
        follower = admitted(self.bounds, key)
        if isinstance(follower, bytes):
            yield follower
            return
        follower.scope = scope
        async with contextlib.aclosing(self.stream(follower, run_id, last_id, PING_S)) as chunks:
            async for chunk in chunks:
                yield chunk or b": ping\n\n"
