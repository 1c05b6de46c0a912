"""Prometheus metrics of one server (prometheus-client): counters kept on the hot path, gauges
read at scrape time.

Kept as calls happen, each a counter or histogram bump: gRPC requests by service, method and
status code with their latency (`instrument`, wrapped around each handler by the interceptor), HTTP
requests by route template and status with their latency (`HttpMetrics`, an ASGI middleware),
events appended, steps ingested and group-commit sizes (a commit listener of the ledger), auth
refusals by reason (`CountingGate`) and Verify runs by outcome. Read when scraped (`LedgerCollector`,
in a worker thread): the log's head and the sealed head, projector lag per view in events and in
seconds (the age of the oldest event a view has not applied), holds pending and their amount,
open request streams, WatchRun watchers and SSE followers, and the database's size and WAL size
(SQLite) or its pool's connections (PostgreSQL).

Label values are bounded: method and service names of registered handlers, status code names,
route templates, reasons from the catalogue. Never a run id, an account or a principal.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ledger.domain.errors import LedgerError
from ledger.domain.reasons import Reason
from ledger.storage.version import SCHEMA_VERSION, package_version
from services.runtime.auth import Gate, Identity
from services.runtime.edge import Edge
from services.runtime.logs import CALL_ERROR, call_ended

__all__ = ["Metrics", "CountingGate", "HttpMetrics", "CONTENT_TYPE"]

log = logging.getLogger("trainledger.services")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
GROUP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
VERIFY_METHOD = "/trainledger.v1.Events/Verify"
AUTH_REFUSAL_REASONS = tuple(
    str(reason)
    for reason in (
        Reason.TOKEN_MISSING,
        Reason.TOKEN_INVALID,
        Reason.TOKEN_EXPIRED,
        Reason.TOKEN_REVOKED,
        Reason.ROLE_NOT_ALLOWED,
        Reason.OUTSIDE_SCOPE,
    )
)
# The status codes a Verify call ends with, by their gRPC names.
VERIFY_CODES = tuple(
    code.name
    for code in (
        grpc.StatusCode.OK,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
    )
)


class Metrics:
    """The registry of one server and the instruments its parts bump."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.grpc_requests = Counter(
            "trainledger_grpc_requests",
            "gRPC calls ended, by method and status code",
            ["service", "method", "code"],
            registry=r,
        )
        self.grpc_seconds = Histogram(
            "trainledger_grpc_request_duration_seconds",
            "gRPC call latency (a streaming call: its whole length)",
            ["service", "method"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.http_requests = Counter(
            "trainledger_http_requests",
            "dashboard requests answered, by route and status",
            ["route", "code"],
            registry=r,
        )
        self.http_seconds = Histogram(
            "trainledger_http_request_duration_seconds",
            "dashboard latency to the response's start",
            ["route"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.events = Counter("trainledger_events_appended", "events appended to the log by this server", registry=r)
        self.steps = Counter("trainledger_steps_ingested", "training steps appended by this server", registry=r)
        self.group_commands = Histogram(
            "trainledger_group_commit_commands", "commands per group commit", buckets=GROUP_BUCKETS, registry=r
        )
        self.group_events = Histogram(
            "trainledger_group_commit_events", "events per group commit", buckets=GROUP_BUCKETS, registry=r
        )
        self.auth_refusals = Counter(
            "trainledger_auth_refusals", "calls refused by authentication or authorization", ["reason"], registry=r
        )
        self.verify_runs = Counter(
            "trainledger_verify_runs", "Verify calls ended, by status code", ["code"], registry=r
        )
        self._grpc_children: dict[tuple[str, str, str], Any] = {}
        for reason in AUTH_REFUSAL_REASONS:  # Bounded label sets read 0 before their first count.
            self.auth_refusals.labels(reason)
        for code in VERIFY_CODES:
            self.verify_runs.labels(code)
        ProcessCollector(registry=r)
        build = Gauge(
            "trainledger_build_info", "this server's release and schema version", ["version", "schema"], registry=r
        )
        build.labels(package_version(), str(SCHEMA_VERSION)).set(1)

    def attach(self, edge: Edge) -> None:
        """Count the ledger's commits and read its gauges when scraped."""
        edge.ledger.commit_listeners.append(self.committed)
        self.registry.register(LedgerCollector(edge))

    def committed(self, commands: int, events: Sequence[Any]) -> None:
        steps = 0
        for event in events:
            steps += len(getattr(event, "steps", ()))
        self.events.inc(len(events))
        if steps:
            self.steps.inc(steps)
        self.group_commands.observe(commands)
        self.group_events.observe(len(events))

    def exposition(self) -> bytes:
        """The text format of every metric (reads storage: call it in a worker thread)."""
        return generate_latest(self.registry)

    def _counted(self, service: str, name: str, code: str) -> Any:
        key = (service, name, code)
        counter = self._grpc_children.get(key)
        if counter is None:
            counter = self._grpc_children[key] = self.grpc_requests.labels(service, name, code)
        return counter

    def instrument(self, method: str, handler: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
        """`handler` with each call counted by its status code and timed."""
        service, _, name = method.lstrip("/").rpartition("/")
        verify = method == VERIFY_METHOD
        counted = self._counted
        # Made once per method, so the per-call cost is a clock read and two bumps.
        histogram = self.grpc_seconds.labels(service, name)

        def finish(context: Any, started: float, fallback: str) -> None:
            code = _code_of(context, fallback)
            seconds = time.perf_counter() - started
            counted(service, name, code).inc()
            histogram.observe(seconds)
            if verify:
                self.verify_runs.labels(code).inc()
            if code != "OK":
                call_ended(method, code, seconds)

        shape = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        for kind, make in (
            ("unary_unary", grpc.unary_unary_rpc_method_handler),
            ("unary_stream", grpc.unary_stream_rpc_method_handler),
            ("stream_unary", grpc.stream_unary_rpc_method_handler),
            ("stream_stream", grpc.stream_stream_rpc_method_handler),
        ):
            behavior = getattr(handler, kind)
            if behavior is not None:
                return make(_timed(behavior, finish), **shape)
        return handler


def _code_of(context: Any, fallback: str) -> str:
    try:
        code = context.code()
    except Exception:  # An older grpc without ServicerContext.code().
        code = None
    if code is None:
        return fallback
    if isinstance(code, grpc.StatusCode):
        return code.name
    return next((status.name for status in grpc.StatusCode if status.value[0] == code), fallback)


def _timed(behavior: Callable[..., Any], finish: Callable[[Any, float, str], None]) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(behavior):

        async def stream(request: Any, context: Any) -> Any:
            started, fallback = time.perf_counter(), "UNKNOWN"
            CALL_ERROR.set(None)
            try:
                async for response in behavior(request, context):
                    yield response
                fallback = "OK"
            except BaseException as error:
                fallback = "CANCELLED" if isinstance(error, (GeneratorExit, asyncio.CancelledError)) else "UNKNOWN"
                raise
            finally:
                finish(context, started, fallback)

        return stream

    async def call(request: Any, context: Any) -> Any:
        started, fallback = time.perf_counter(), "UNKNOWN"
        CALL_ERROR.set(None)
        try:
            result = behavior(request, context)
            answer = await result if inspect.isawaitable(result) else result
            fallback = "OK"
            return answer
        except BaseException as error:
            fallback = "CANCELLED" if isinstance(error, asyncio.CancelledError) else "UNKNOWN"
            raise
        finally:
            finish(context, started, fallback)

    return call


class CountingGate(Gate):
    """The Gate, counting each refusal by its reason (gRPC and the dashboard share it)."""

    metrics: Metrics | None = None

    def _refused(self, error: LedgerError) -> None:
        if self.metrics is not None:
            self.metrics.auth_refusals.labels(str(error.reason)).inc()

    async def authenticate(self, method: str, metadata: Any) -> Identity:
        try:
            return await super().authenticate(method, metadata)
        except LedgerError as error:
            if error.reason and str(error.reason).startswith(("TOKEN_", "ROLE_")):
                self._refused(error)
            raise

    async def authorize(self, method: str, identity: Identity, request: Any) -> None:
        try:
            await super().authorize(method, identity, request)
        except LedgerError as error:
            self._refused(error)
            raise


class HttpMetrics:
    """ASGI middleware: each dashboard response counted by its route template and status."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        metrics = self.metrics

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                route = getattr(scope.get("route"), "path", "") or "other"
                metrics.http_requests.labels(route, str(message["status"])).inc()
                metrics.http_seconds.labels(route).observe(time.perf_counter() - started)
            await send(message)

        await self.app(scope, receive, sending)


class LedgerCollector(Collector):
    """The gauges read from the ledger and the edge when scraped."""

    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.storage_down = False  # Whether the last scrape found storage unavailable (logged once).

    def describe(self) -> list[Metric]:
        return []  # Unchecked: the gauges are read from storage, only when scraped.

    def collect(self) -> Iterator[Metric]:
        try:
            read = list(self._from_storage())
        except Exception as error:  # Storage is down: the edge's gauges still answer, storage's do not.
            if not self.storage_down:
                log.warning("metrics: storage is unavailable (%s); its gauges are left out until it answers", error)
            self.storage_down, read = True, []
        else:
            if self.storage_down:
                log.info("metrics: storage answers again")
            self.storage_down = False
        up = int(bool(read))
        yield _gauge("trainledger_storage_up", "1 when the last scrape read storage, 0 when it could not", up)
        yield from read
        yield from self._streams()

    def _from_storage(self) -> Iterator[Metric]:
        ledger = self.edge.ledger
        storage = ledger.storage
        head = storage.head()
        yield _gauge("trainledger_log_head_position", "the position of the newest event in the log", head)
        yield _gauge(
            "trainledger_sealed_head_position", "the position of the newest sealed event", storage.last_seal()[0]
        )
        yield from self._lag(head)
        count, amount = ledger.views.holds_pending()
        yield _gauge("trainledger_holds_pending", "spend holds not yet settled", count)
        yield _gauge("trainledger_holds_pending_usd_micro", "the amount held by pending holds (micro-dollars)", amount)
        yield from _storage_gauges(storage)

    def _lag(self, head: int) -> Iterator[Metric]:
        positions = self.edge.ledger.storage.tracking_positions()
        events = GaugeMetricFamily("trainledger_projector_lag_events", "events a view has not applied", labels=["view"])
        seconds = GaugeMetricFamily(
            "trainledger_projector_lag_seconds", "age of the oldest event a view has not applied", labels=["view"]
        )
        ages: dict[int, float] = {}
        for view, position in sorted(positions.items()):
            behind = max(0, head - position)
            events.add_metric([view], behind)
            if behind and position not in ages:
                ages[position] = self._age_after(position)
            seconds.add_metric([view], ages.get(position, 0.0) if behind else 0.0)
        yield events
        yield seconds

    def _age_after(self, position: int) -> float:
        from services.runtime.readiness import unapplied_age_s

        return unapplied_age_s(self.edge.ledger, position)

    def _streams(self) -> Iterator[Metric]:
        edge = self.edge
        yield _gauge("trainledger_streams_open", "request streams open (RecordSteps)", edge.streams_open)

        def count(kind: str) -> int:
            counted = edge.followers.get(kind)
            return counted() if counted else 0

        yield _gauge("trainledger_watchers", "WatchRun calls following a run", count("watchers"))
        followers = GaugeMetricFamily("trainledger_sse_followers", "dashboard live streams open", labels=["kind"])
        followers.add_metric(["run"], count("sse_run"))
        followers.add_metric(["runs"], count("sse_runs"))
        yield followers


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _storage_gauges(storage: Any) -> Iterator[Metric]:
    path = getattr(storage, "path", None)
    if isinstance(path, str):
        yield _gauge("trainledger_database_size_bytes", "the SQLite file's size", _size(path))
        yield _gauge("trainledger_database_wal_size_bytes", "the SQLite write-ahead log's size", _size(path + "-wal"))
    pool = getattr(storage, "pool", None)
    if pool is not None:
        stats = pool.get_stats()
        size, available = stats.get("pool_size", 0), stats.get("pool_available", 0)
        connections = GaugeMetricFamily(
            "trainledger_database_pool_connections", "the views' PostgreSQL pool", labels=["state"]
        )
        connections.add_metric(["in_use"], max(0, size - available))
        connections.add_metric(["idle"], available)
        yield connections
        yield _gauge("trainledger_database_pool_max", "the views' pool's most connections", pool.max_size)
        yield _gauge(
            "trainledger_database_pool_waiting", "requests waiting for a connection", stats.get("requests_waiting", 0)
        )


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
