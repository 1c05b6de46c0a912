"""The runs page's live feed (GET /api/live): `run` {the RunSummary} for each run that changed. One
shared reader, woken by the projector's originator notifications, reads the summaries of the runs
touched since its last read once for all followers (a run is known by its id, its spend account by
the uuid of "account:<run id>"), at most once per LIVE_INTERVAL_S. Followers are bounded as a
run's stream's are (services.web.live)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

from ledger.domain.base import ledger_id
from ledger.domain.errors import LedgerError
from services.runtime.edge import Edge
from services.runtime.feed import Bounds, close_with
from services.web.documents import summary_document
from services.web.live import PING_S, Follower, admitted, sse, too_many

__all__ = ["LiveRuns", "LIVE_INTERVAL_S"]

LIVE_INTERVAL_S = 0.1
# The most runs one wake of LiveRuns reads; the rest wait for the next.
LIVE_RUNS_PER_READ = 500
KNOWN_MAX = 100_000


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
        self.bounds = Bounds(Follower, too_many)
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
        self._closer = self.loop.create_task(close_with(edge, self._close), context=contextvars.Context())

    def check(self, key: str) -> None:
        self.bounds.check(key)

    async def follow(self, key: str, scope: str = "") -> AsyncIterator[bytes]:
        """The SSE chunks of one follower; one with a `scope` (a scoped token's account) is sent
        only the runs under it."""
        if self.edge.closed:
            return
        follower = admitted(self.bounds, key)
        if isinstance(follower, bytes):
            yield follower
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
