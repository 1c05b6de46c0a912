"""The composition root: one ledger, four servicers, health, reflection, the interceptor, the
reservation sweep, a storage probe behind health, and a graceful shutdown.

Health follows storage: a probe reads the head of the log every second in a worker thread;
when storage is unreachable (or the read hangs) every service turns NOT_SERVING, and SERVING
again as soon as a read succeeds. Calls meanwhile answer UNAVAILABLE by themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ledger import Ledger
from ledger.errors import UnavailableError
from services.edge import Edge
from services.events import EventsServicer
from services.interceptors import EdgeInterceptor
from services.registry import RegistryServicer
from services.runs import RunsServicer
from services.spend import SpendServicer
from trainledger.v1 import events_pb2, events_pb2_grpc, registry_pb2, registry_pb2_grpc, runs_pb2, runs_pb2_grpc
from trainledger.v1 import spend_pb2, spend_pb2_grpc

__all__ = ["create_server", "serve", "LedgerServer", "StartupError", "MESSAGE_SIZE_MAX", "SERVICE_NAMES"]

log = logging.getLogger("trainledger.services")

MESSAGE_SIZE_MAX = 16 * 1024 * 1024
SWEEP_INTERVAL_S = 1.0
PROBE_INTERVAL_S = 1.0
# A probe still unanswered after this long counts as storage unavailable (a hung connection).
PROBE_TIMEOUT_S = 3.0
GRACE_S = 5.0
SERVICE_NAMES = tuple(module.DESCRIPTOR.services_by_name[name].full_name for module, name in (
    (runs_pb2, "Runs"), (spend_pb2, "Spend"), (registry_pb2, "Registry"), (events_pb2, "Events")))


class StartupError(Exception):
    """The server cannot start: the database cannot be opened or the address cannot be bound."""


def describe(database: str) -> str:
    """A database for messages, with any password in a URL hidden."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", database)


class LedgerServer(grpc.aio.Server):
    """A grpc.aio.Server that also runs the reservation sweep and shuts down in order: health
    NOT_SERVING, live streams told to end, in-flight calls finished within the grace, then the
    ledger closed (when this server opened it)."""

    def __init__(self, server: grpc.aio.Server, edge: Edge, health_servicer: Any, *, owns_ledger: bool) -> None:
        self.server, self.edge, self.health = server, edge, health_servicer
        self.owns_ledger = owns_ledger
        self.serving = True
        self._sweeper: asyncio.Task[None] | None = None
        self._prober: asyncio.Task[None] | None = None

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Any) -> None:
        self.server.add_generic_rpc_handlers(generic_rpc_handlers)

    def add_insecure_port(self, address: str) -> int:
        return self.server.add_insecure_port(address)

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        return self.server.add_secure_port(address, server_credentials)

    async def start(self) -> None:
        await self.server.start()
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._sweeper = asyncio.create_task(self._sweep(), name="trainledger-sweep")
        self._prober = asyncio.create_task(self._probe(), name="trainledger-probe")

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            try:
                await self.edge.call(self.edge.ledger.expire_reservations)
            except UnavailableError:
                pass  # Storage is down (the probe reports it) or the views lag: next round.
            except Exception:  # The sweep must outlive a storage hiccup.
                log.exception("the reservation sweep failed; retrying")

    async def _probe(self) -> None:
        """Health follows storage: a read of the log's head every PROBE_INTERVAL_S, in a thread
        of its own (not under the limiter, which a storage outage may have filled)."""
        probe: asyncio.Future[int] | None = None
        try:
            while True:
                if probe is None:
                    probe = asyncio.ensure_future(asyncio.to_thread(self.edge.ledger.head))
                done, _ = await asyncio.wait({probe}, timeout=PROBE_TIMEOUT_S)
                if not done:  # Still hanging: unavailable until it answers.
                    await self._set_serving(False, f"storage did not answer within {PROBE_TIMEOUT_S:.0f} s")
                    continue
                error, probe = probe.exception(), None
                if error is None:
                    await self._set_serving(True, "storage answers")
                else:
                    if not isinstance(error, UnavailableError) and self.serving:
                        log.error("the storage probe failed", exc_info=error)
                    await self._set_serving(False, str(error))
                await asyncio.sleep(PROBE_INTERVAL_S)
        finally:
            if probe is not None:
                probe.cancel()  # Its thread finishes on its own; nobody waits for the answer.

    async def _set_serving(self, serving: bool, why: str) -> None:
        if serving == self.serving:
            return
        self.serving = serving
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        if serving:
            log.info("storage is back (%s): health SERVING", why)
        else:
            log.warning("storage is unavailable (%s): health NOT_SERVING", why)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, status)

    async def stop(self, grace: float | None) -> None:
        await self.health.enter_graceful_shutdown()
        self.edge.close()
        for task in (self._sweeper, self._prober):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.server.stop(grace)
        if self.owns_ledger:
            self.owns_ledger = False
            await asyncio.to_thread(self.edge.ledger.close)

    async def wait_for_termination(self, timeout: float | None = None) -> bool:
        return await self.server.wait_for_termination(timeout)


def create_server(address: str = "127.0.0.1:50051", *, ledger: Ledger | None = None,
                  database: str = "trainledger.db", project: bool = True) -> tuple[grpc.aio.Server, int]:
    """Build the server (call it on the event loop that will run it) and bind `address` (port 0
    picks a free port). Opens `database` unless a ledger is given; a given ledger must be
    projecting or following (Ledger.open's default projects) and stays the caller's to close.
    With project=False the server applies no events to the views itself: `trainledger project`
    workers do (PostgreSQL only), and the server follows their progress. Returns the server,
    not yet started, and the bound port. Raises StartupError."""
    owns_ledger = ledger is None
    if ledger is None:
        if not project and not database.startswith(("postgresql://", "postgres://")):
            raise StartupError(f"cannot leave projection to workers on {describe(database)}: only a "
                               "PostgreSQL database is shared with `trainledger project` workers")
        try:
            ledger = Ledger.open(database, project=project)
        except Exception as error:
            raise StartupError(f"cannot open database {describe(database)}: {error}") from error
        if not project:
            ledger.projector.follow()
    edge = Edge(ledger)
    server = grpc.aio.server(interceptors=[EdgeInterceptor()], options=[
        ("grpc.max_receive_message_length", MESSAGE_SIZE_MAX), ("grpc.max_send_message_length", MESSAGE_SIZE_MAX)])
    runs_pb2_grpc.add_RunsServicer_to_server(RunsServicer(edge), server)
    spend_pb2_grpc.add_SpendServicer_to_server(SpendServicer(edge), server)
    registry_pb2_grpc.add_RegistryServicer_to_server(RegistryServicer(edge), server)
    events_pb2_grpc.add_EventsServicer_to_server(EventsServicer(edge), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    try:
        port, problem = server.add_insecure_port(address), "the address is in use or invalid"
    except RuntimeError as error:
        port, problem = 0, str(error)
    if not port:
        edge.close()
        if owns_ledger:
            ledger.close()
        raise StartupError(f"cannot listen on {address}: {problem}")
    return LedgerServer(server, edge, health_servicer, owns_ledger=owns_ledger), port


async def serve(address: str = "127.0.0.1:50051", database: str = "trainledger.db", *,
                grace_s: float = GRACE_S, project: bool = True) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully. Raises StartupError."""
    server, port = create_server(address, database=database, project=project)
    await server.start()
    host = address.rsplit(":", 1)[0]
    workers = "" if project else ", projections left to workers"
    print(f"trainledger: serving on {host}:{port} (database {describe(database)}{workers})", flush=True)
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await stopping.wait()
        log.info("shutting down: finishing in-flight calls (grace %.1f s)", grace_s)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await server.stop(grace_s)
