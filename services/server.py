"""The composition root: one ledger, four servicers, health, reflection, the interceptor, the
reservation sweep, a storage probe behind health, the web dashboard, and a graceful shutdown.

With `http` (HOST:PORT) create_server also binds the dashboard's socket (services.web: a Starlette
app over the same Edge and Gate) and LedgerServer.start serves it with uvicorn on the same event
loop; an address in use is a StartupError before anything is served, and serving it on a host that
is not loopback without authentication is refused like gRPC's. Shutdown ends the live streams
(the edge closes), stops the HTTP server within the grace, then gRPC.

Health follows storage and projection: a probe reads the head of the log every second in a
worker thread; when storage is unreachable (or the read hangs), or projection stopped on an event
it could not apply, every service turns NOT_SERVING, and SERVING again as soon as a read succeeds.
Calls meanwhile answer UNAVAILABLE by themselves. Health follows readiness too
(services.runtime.readiness): NOT_SERVING until the views are within a bounded lag of the log and the
log's tail is intact, from the start. Calls are counted for Prometheus (services.runtime.metrics) and
/metrics, /healthz and /readyz are served on the dashboard and, with `metrics`, on an address of
their own (services.web.ops).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import re
import signal
import socket
import sys
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ledger import Ledger
from ledger.backend import damage, is_postgres_url
from ledger.domain.errors import Unavailable
from services.grpc.events import EventsServicer
from services.grpc.interceptors import EdgeInterceptor
from services.grpc.registry import RegistryServicer
from services.grpc.runs import RunsServicer
from services.grpc.spend import SpendServicer
from services.runtime.auth import Gate, is_loopback, startup_notes
from services.runtime.describe import describe
from services.runtime.edge import Edge
from services.runtime.holder import Holder, HolderError, acquire
from services.runtime.metrics import CountingGate, Metrics
from services.runtime.readiness import Readiness
from services.runtime.tls import ServerTLS, TLSError
from services.web import create_app
from services.web.access import Access
from services.web.hosts import AllowedHosts, HostsError
from services.web.ops import Ops
from services.web.serving import Dashboard, HttpOptions, HttpOptionsError, Limits
from trainledger.v1 import (
    events_pb2,
    events_pb2_grpc,
    registry_pb2,
    registry_pb2_grpc,
    runs_pb2,
    runs_pb2_grpc,
    spend_pb2,
    spend_pb2_grpc,
)

__all__ = [
    "create_server",
    "serve",
    "parse_listen",
    "LedgerServer",
    "Dashboard",
    "StartupError",
    "MESSAGE_SIZE_MAX",
    "SERVICE_NAMES",
]

log = logging.getLogger("trainledger.services")

MESSAGE_SIZE_MAX = 16 * 1024 * 1024
SWEEP_INTERVAL_S = 1.0
PROBE_INTERVAL_S = 1.0
# A probe still unanswered after this long counts as storage unavailable (a hung connection).
PROBE_TIMEOUT_S = 3.0
GRACE_S = 5.0
SERVICE_NAMES = tuple(
    module.DESCRIPTOR.services_by_name[name].full_name
    for module, name in ((runs_pb2, "Runs"), (spend_pb2, "Spend"), (registry_pb2, "Registry"), (events_pb2, "Events"))
)


class StartupError(Exception):
    """The server cannot start: the database cannot be opened or the address cannot be bound."""


LISTEN_FORMAT = "expected HOST:PORT or [IPv6]:PORT with a port from 0 to 65535, e.g. 127.0.0.1:50051"
BIND_ERRORS = {
    errno.EADDRINUSE: "the address is already in use",
    errno.EADDRNOTAVAIL: "the address is not available on this machine",
    errno.EACCES: "permission denied",
}


def parse_listen(address: str) -> tuple[str, int]:
    """The host (an IPv6 address without its brackets) and port of a listen address, HOST:PORT or
    [IPv6]:PORT with a port from 0 to 65535 (0: any free port). Raises StartupError naming what
    is wrong; grpc itself would serve a bare host on port 443."""

    def refuse(why: str) -> StartupError:
        return StartupError(f"cannot listen on {address}: {why}; {LISTEN_FORMAT}")

    port: str | None
    bracketed = re.fullmatch(r"\[([^\[\]]*)\](?::(.*))?", address)
    if bracketed:
        host, port = bracketed.group(1), bracketed.group(2)
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise refuse(f"{host!r} is not an IPv6 address") from None
    else:
        if address.count(":") > 1:
            raise refuse("an IPv6 address goes in brackets")
        host, colon, port = address.partition(":")
        if not colon:
            port = None
        if not host or re.search(r"[\s\[\]/@]", host):
            raise refuse("no host" if not host else f"{host!r} is not a host name or address")
    if not port:
        raise refuse("no port")
    if not re.fullmatch(r"[0-9]{1,5}", port) or int(port) > 65535:
        raise refuse(f"{port!r} is not a port")
    return host, int(port)


def listen_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_problem(host: str, port: int) -> str | None:
    """Why `host`:`port` cannot be listened on, or None when it can. Binds each address the host
    resolves to as gRPC does (SO_REUSEADDR, no SO_REUSEPORT): an address in use anywhere is a
    refusal; an address of the host this machine lacks (::1 without IPv6) is not, while another
    one binds."""
    try:
        resolved = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as error:
        return f"cannot resolve {host}: {getattr(error, 'strerror', None) or error}"
    problems: list[tuple[int, str]] = []
    for family, kind, proto, _, sockaddr in dict.fromkeys(resolved):  # Each address once.
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(sockaddr)
        except OSError as error:
            reason = BIND_ERRORS.get(error.errno or 0) or error.strerror or str(error)
            if error.errno == errno.EACCES and 0 < port < 1024:
                reason += " (ports below 1024 need privileges)"
            problems.append((error.errno or 0, reason))
        else:
            problems.append((0, ""))
    in_use = [reason for number, reason in problems if number == errno.EADDRINUSE]
    if in_use:
        return in_use[0]
    if problems and all(reason for _, reason in problems):
        return problems[0][1]
    return None


def bind_http(address: str, what: str = "the dashboard") -> list[socket.socket]:
    """Listening sockets for `what` (the dashboard, or /metrics) at `address` (HOST:PORT; port 0:
    one free port for every address of the host). Raises StartupError naming what is wrong."""
    host, wanted_port = parse_listen(address)
    problem = bind_problem(host, wanted_port)
    if problem:
        raise StartupError(f"cannot serve {what} on {address}: {problem}")
    try:
        resolved = socket.getaddrinfo(host, wanted_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as error:
        raise StartupError(f"cannot serve {what} on {address}: cannot resolve {host}") from error
    sockets: list[socket.socket] = []
    port = wanted_port
    try:
        for family, kind, proto, _, sockaddr in dict.fromkeys(resolved):
            listener = socket.socket(family, kind, proto)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                listener.bind((sockaddr[0], port, *sockaddr[2:]))
                listener.listen(1024)
                listener.setblocking(False)
            except OSError as error:
                listener.close()
                if sockets and error.errno == errno.EADDRNOTAVAIL:
                    continue  # An address of the host this machine lacks (::1 without IPv6).
                reason = BIND_ERRORS.get(error.errno or 0) or error.strerror or str(error)
                raise StartupError(f"cannot serve {what} on {address}: {reason}") from None
            sockets.append(listener)
            port = listener.getsockname()[1]
    except BaseException:
        for listener in sockets:
            listener.close()
        raise
    return sockets


class LedgerServer(grpc.aio.Server):
    """A grpc.aio.Server that also runs the reservation sweep and shuts down in order: health
    NOT_SERVING, live streams told to end, in-flight calls finished within the grace, then the
    ledger closed (when this server opened it) and the database's holder lock released."""

    def __init__(
        self,
        server: grpc.aio.Server,
        edge: Edge,
        health_servicer: Any,
        *,
        owns_ledger: bool,
        address: str = "",
        holder: Holder | None = None,
        gate: Gate | None = None,
        dashboard: Dashboard | None = None,
        ops: Ops | None = None,
        ops_dashboard: Dashboard | None = None,
    ) -> None:
        self.server, self.edge, self.health = server, edge, health_servicer
        self.readiness = ops.readiness if ops is not None else Readiness(edge.ledger)
        self.metrics = ops.metrics if ops is not None else None
        self.ops_dashboard = ops_dashboard  # /metrics, /healthz, /readyz on an address of their own.
        self.owns_ledger, self.holder = owns_ledger, holder
        self.gate = gate
        self.dashboard = dashboard
        self.address = address  # HOST:PORT as bound (the port chosen for port 0).
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
        # Health reflects readiness: NOT_SERVING until the views have caught up (services.runtime.readiness).
        try:
            self.serving = await asyncio.wait_for(asyncio.to_thread(self._ready), PROBE_TIMEOUT_S)
        except Exception as error:  # Storage is down or hangs: the probe says so, and says when it is back.
            self.serving = False
            self.readiness.storage_unavailable(str(error) or f"storage did not answer within {PROBE_TIMEOUT_S:.0f} s")
        status = health_pb2.HealthCheckResponse.SERVING if self.serving else health_pb2.HealthCheckResponse.NOT_SERVING
        if not self.serving:
            log.warning("not ready yet: %s", self.readiness.why)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, status)
        if self.ops_dashboard is not None:
            await self.ops_dashboard.start()
        self._sweeper = asyncio.create_task(self._sweep(), name="trainledger-sweep")
        self._prober = asyncio.create_task(self._probe(), name="trainledger-probe")
        if self.dashboard is not None:
            await self.dashboard.start()

    def _ready(self) -> bool:
        """The storage probe and readiness, in one worker thread: raises what the probe raises."""
        self.edge.ledger.check()
        return self.readiness.update()

    @property
    def metrics_address(self) -> str:
        """HOST:PORT of /metrics on an address of its own; empty when none is served."""
        return self.ops_dashboard.address if self.ops_dashboard is not None else ""

    @property
    def http_address(self) -> str:
        """HOST:PORT of the dashboard as bound; empty when none is served."""
        return self.dashboard.address if self.dashboard is not None else ""

    async def _sweep(self) -> None:
        """Every SWEEP_INTERVAL_S: settle the holds past their expiry, and record lost the runs
        whose attempt's lease lapsed (ledger.application.leases: every replica sweeps, one
        records each loss)."""
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            for sweep in (self.edge.ledger.expire_reservations, self.edge.ledger.sweep_leases):
                try:
                    await self.edge.call(sweep)
                except Unavailable:
                    pass  # Storage is down (the probe reports it) or the views lag: next round.
                except Exception:  # The sweep must outlive a storage hiccup.
                    log.exception("the %s sweep failed; retrying", sweep.__name__)

    async def _probe(self) -> None:
        """Health follows storage: a read of the log's head every PROBE_INTERVAL_S, in a thread
        of its own (not in the workers' pool, which a storage outage may have filled)."""
        probe: asyncio.Future[bool] | None = None
        try:
            while True:
                if probe is None:
                    probe = asyncio.ensure_future(asyncio.to_thread(self._ready))
                done, _ = await asyncio.wait({probe}, timeout=PROBE_TIMEOUT_S)
                if not done:  # Still hanging: unavailable until it answers.
                    hung = f"storage did not answer within {PROBE_TIMEOUT_S:.0f} s"
                    self.readiness.storage_unavailable(hung)
                    await self._set_serving(False, hung)
                    continue
                error = probe.exception()
                probe_result, probe = error is None and probe.result(), None
                if error is None and not probe_result:
                    await self._set_serving(False, f"not ready: {self.readiness.why}")
                elif error is None:
                    await self._set_serving(True, "storage answers")
                else:
                    if not isinstance(error, Unavailable) and self.serving:
                        log.error("the storage probe failed", exc_info=error)
                    self.readiness.storage_unavailable(str(error))
                    await self._set_serving(False, str(error))
                await asyncio.sleep(PROBE_INTERVAL_S)
        finally:
            if probe is not None:
                probe.cancel()  # Its thread finishes on its own; nobody waits for the answer.

    async def _set_serving(self, serving: bool, why: str) -> None:
        if not serving and self.readiness.ready:
            self.readiness.lost(why)  # /readyz follows: the probe failed or hangs.
        if serving == self.serving:
            return
        self.serving = serving
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        if serving:
            log.info("storage is back (%s): health SERVING", why)
        elif why.startswith("not ready"):
            log.warning("%s: health NOT_SERVING", why)
        else:
            log.warning("storage is unavailable (%s): health NOT_SERVING", why)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, status)

    async def stop(self, grace: float | None = None) -> None:
        await self.health.enter_graceful_shutdown()
        self.edge.close()
        for task in (self._sweeper, self._prober):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            if self.ops_dashboard is not None:
                await self.ops_dashboard.stop(grace)
            if self.dashboard is not None:
                await self.dashboard.stop(grace)
        finally:
            await self.server.stop(grace)
            self.edge.workers.close()  # The calls in flight have ended (or the grace has).
        try:
            if self.owns_ledger:
                self.owns_ledger = False
                await asyncio.to_thread(self.edge.ledger.close)
        finally:
            if self.holder is not None:
                self.holder.release()

    async def wait_for_termination(self, timeout: float | None = None) -> bool:
        return await self.server.wait_for_termination(timeout)


def create_server(
    address: str = "127.0.0.1:50051",
    *,
    ledger: Ledger | None = None,
    database: str = "trainledger.db",
    project: bool = True,
    auth: bool = False,
    insecure: bool = True,
    tls: ServerTLS | None = None,
    http: str | None = None,
    http_options: HttpOptions | None = None,
    allow_unsealed: bool = False,
    metrics: str | None = None,
    instrument: bool = True,
) -> tuple[LedgerServer, int]:
    """Build the server (call it on the event loop that will run it) and bind `address`, HOST:PORT
    or [IPv6]:PORT (port 0 picks a free port; an address in use is refused, never shared). Opens
    `database` unless a ledger is given; a given ledger must be projecting or following
    (Ledger.open's default projects) and stays the caller's to close. A SQLite database this
    server opens is held for it (services.runtime.holder) until it stops: one SQLite file has one serving
    process. With project=False the server applies no events to the views itself: `trainledger
    project` workers do (PostgreSQL only), and the server follows their progress. With `tls` the port
    speaks TLS only (services.runtime.tls: mutual TLS when it names a client CA). With `http` (HOST:PORT) the
    web dashboard's socket is bound too (LedgerServer.http_address; served from start()), over TLS
    with the same files whenever gRPC is, answering the hosts and under the caps of `http_options`
    (services.web.serving). A database it opens whose log has no seals, or whose chain breaks in its
    last events, is refused unless `allow_unsealed` (see `unsealed`). With `instrument` (the
    default) calls are counted for Prometheus (services.runtime.metrics: /metrics on the dashboard, and on
    `metrics`, HOST:PORT, an address of its own with /healthz and /readyz, services.web.ops). Returns
    the server, not yet started, and the bound port. Raises StartupError."""
    host, wanted_port = parse_listen(address)
    http_host = parse_listen(http)[0] if http is not None else ""
    http_options = http_options or HttpOptions()
    try:
        credentials = tls.credentials() if tls is not None else None
        http_tls = tls.ssl_context() if tls is not None and http is not None else None
        hosts = AllowedHosts(http_options.allowed_hosts, bound=http_host)
        Limits.of(http_options)
    except (TLSError, HostsError, HttpOptionsError) as error:
        raise StartupError(str(error)) from None
    owns_ledger = ledger is None
    holder: Holder | None = None
    if ledger is None:
        if not project and not is_postgres_url(database):
            raise StartupError(
                f"cannot leave projection to workers on {describe(database)}: only a "
                "PostgreSQL database is shared with `trainledger project` workers"
            )
        try:
            holder = acquire(database, "serve")
        except HolderError as error:
            raise StartupError(str(error)) from None
    opened: Ledger | None = None
    edge: Edge | None = None
    sockets: list[socket.socket] = []
    try:
        problem = bind_problem(host, wanted_port)
        if problem:
            raise StartupError(f"cannot listen on {address}: {problem}")
        if ledger is None:
            damaged = damage(database)  # Checked before anything could write to the file.
            if damaged:
                raise StartupError(f"cannot open database {describe(database)}: {damaged}")
            try:
                ledger = opened = Ledger.open(database, project=project)
            except Exception as error:
                raise StartupError(f"cannot open database {describe(database)}: {error}") from error
            if not allow_unsealed:
                unsealed(ledger, database)
            if not project:
                ledger.projector.follow()
        edge = Edge(ledger)
        # Authentication is on with `auth` or once the ledger has issued a token (services.runtime.auth).
        if not (auth or insecure or is_loopback(host) or ledger.token_book()):
            raise StartupError(f"refusing to serve {address} without authentication: pass --auth or --insecure")
        if http is not None and not (auth or insecure or is_loopback(http_host) or ledger.token_book()):
            raise StartupError(
                f"refusing to serve the dashboard on {http} without authentication: pass --auth or --insecure"
            )
        counters = Metrics() if instrument else None
        gate = CountingGate(edge, required=auth)
        gate.metrics = counters
        if counters is not None:
            counters.attach(edge)
        ops = Ops(edge, counters, Readiness(edge.ledger), Access(gate))
        server = grpc.aio.server(
            interceptors=[EdgeInterceptor(edge, gate, counters)],
            options=[
                ("grpc.max_receive_message_length", MESSAGE_SIZE_MAX),
                ("grpc.max_send_message_length", MESSAGE_SIZE_MAX),
                ("grpc.so_reuseport", 0),
            ],
        )  # grpc shares a port with any other server by default.
        runs_pb2_grpc.add_RunsServicer_to_server(RunsServicer(edge), server)  # type: ignore[no-untyped-call]
        spend_pb2_grpc.add_SpendServicer_to_server(SpendServicer(edge), server)  # type: ignore[no-untyped-call]
        registry_pb2_grpc.add_RegistryServicer_to_server(RegistryServicer(edge), server)  # type: ignore[no-untyped-call]
        events_pb2_grpc.add_EventsServicer_to_server(EventsServicer(edge), server)  # type: ignore[no-untyped-call]
        health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        reflection.enable_server_reflection((*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
        try:
            if credentials is None:
                port, failure = server.add_insecure_port(listen_address(host, wanted_port)), ""
            else:
                port, failure = server.add_secure_port(listen_address(host, wanted_port), credentials), ""
        except RuntimeError as error:
            port, failure = 0, str(error)
        if not port:  # Taken since the probe, or something only gRPC objects to.
            problem = bind_problem(host, wanted_port) or f"gRPC could not bind it ({failure or 'no port'})"
            raise StartupError(f"cannot listen on {address}: {problem}")
        bound = listen_address(host, port)
        dashboard: Dashboard | None = None
        ops_dashboard: Dashboard | None = None
        if http is not None:
            sockets = bind_http(http)
            dashboard = Dashboard(
                create_app(edge, gate, hosts, ops), sockets, options=http_options, tls=http_tls, grace_s=GRACE_S
            )
        if metrics is not None:
            metrics_sockets = bind_http(metrics, "/metrics (--metrics)")
            if not is_loopback(parse_listen(metrics)[0]):
                log.warning(
                    "/metrics, /healthz and /readyz on %s are unauthenticated: bind it where only the scraper reaches",
                    metrics,
                )
            sockets = [*sockets, *metrics_sockets]  # Closed on failure; the dashboard keeps its own list.
            ops_tls = tls.ssl_context() if tls is not None else None
            ops_dashboard = Dashboard(ops.app(), metrics_sockets, options=HttpOptions(), tls=ops_tls, grace_s=GRACE_S)
        if holder is not None:
            holder.record(bound)
    except BaseException:
        for listener in sockets:
            listener.close()
        if edge is not None:
            edge.close()
            edge.workers.close()
        if opened is not None:
            opened.close()
        if holder is not None:
            holder.release()
        raise
    return (
        LedgerServer(
            server,
            edge,
            health_servicer,
            owns_ledger=owns_ledger,
            address=bound,
            holder=holder,
            gate=gate,
            dashboard=dashboard,
            ops=ops,
            ops_dashboard=ops_dashboard,
        ),
        port,
    )


def unsealed(ledger: Ledger, database: str) -> None:
    """Refuse to serve a log whose seals are missing, or whose chain breaks in its last events
    (Integrity.chain_tail_break): whatever is appended would extend a chain nobody can verify.
    Raises StartupError saying what to do: `seal` only for a log without any seal (it refuses one
    that has some), the file's own --db in it."""
    broken = ledger.chain_tail_break()
    if broken is None:
        return
    where = f"--db {database}" if "://" not in database else "--database-url URL"
    if ledger.chain_head().position == 0:
        remedy = (
            f"if the log is as it should be, seal it: `trainledger seal {where} --reason TEXT`; or pass"
            " --allow-unsealed to serve it for reading (it takes no write until sealed)"
        )
    else:
        remedy = (
            "restore the log from a backup (a log that holds seals is never sealed over), or pass"
            " --allow-unsealed to serve it as it is, broken chain included"
        )
    raise StartupError(
        f"refusing to serve {describe(database)}: its hash chain breaks at position {broken.position}"
        f" ({broken.problem}: {broken.detail}); run `trainledger verify {where}`, then {remedy}"
    )


async def serve(
    address: str = "127.0.0.1:50051",
    database: str = "trainledger.db",
    *,
    grace_s: float = GRACE_S,
    project: bool = True,
    auth: bool = False,
    insecure: bool = False,
    tls: ServerTLS | None = None,
    http: str | None = None,
    http_options: HttpOptions | None = None,
    allow_unsealed: bool = False,
    metrics: str | None = None,
    instrument: bool = True,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully. With `http` (HOST:PORT) the web
    dashboard is served there too, on the same event loop over the same ledger. Raises StartupError."""
    server, _ = create_server(
        address,
        database=database,
        project=project,
        auth=auth,
        insecure=insecure,
        tls=tls,
        http=http,
        http_options=http_options,
        allow_unsealed=allow_unsealed,
        metrics=metrics,
        instrument=instrument,
    )
    try:
        await server.start()
    except BaseException:
        await server.stop(0)
        raise
    workers = "" if project else ", projections left to workers"
    secure = f", {tls.describe()}" if tls is not None else ""
    tokens = len(server.edge.ledger.token_book())
    host = server.address.rsplit(":", 1)[0]
    authenticated, notes = startup_notes(required=auth, tokens=tokens, host=host, tls=tls is not None)
    banner = [f"serving on {server.address} (database {describe(database)}{workers}{secure}{authenticated})"]
    for note in notes:
        print(f"trainledger: warning: {note}", file=sys.stderr, flush=True)
    if server.dashboard is not None:
        banner.append(f"dashboard on {server.dashboard.scheme}://{reachable(server.http_address)}/")
    if server.ops_dashboard is not None:
        banner.append(f"metrics on {server.ops_dashboard.scheme}://{server.metrics_address}/metrics")
    for line in banner:  # On stdout for whoever waits for the server, and as events of the log.
        print(f"trainledger: {line}", flush=True)
        log.info("%s", line)
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


def reachable(address: str) -> str:
    """`address` (HOST:PORT) as a browser on this machine reaches it: a wildcard bind (0.0.0.0,
    ::), which no browser is sent to and the dashboard does not answer for, as loopback."""
    host, _, port = address.rpartition(":")
    wildcard = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "::": "[::1]"}
    return f"{wildcard.get(host, host)}:{port}"
