"""The composition root: one ledger, four servicers, health, reflection, the interceptor, the
reservation sweep, a storage probe behind health, the web dashboard, and a graceful shutdown.

With `http` (HOST:PORT) create_server also binds the dashboard's socket (services.web: a Starlette
app over the same Edge and Gate) and LedgerServer.start serves it with uvicorn on the same event
loop; an address in use is a StartupError before anything is served, and serving it on a host that
is not loopback without authentication is refused like gRPC's. Shutdown ends the live streams
(the edge closes), stops the HTTP server within the grace, then gRPC.

Health follows storage and projection (services.lifecycle.LedgerServer: the running server, its
sweep, its probe and its ordered shutdown): calls meanwhile answer UNAVAILABLE by themselves.
Health follows readiness too (services.runtime.readiness): NOT_SERVING until the views are within
a bounded lag of the log and the log's tail is intact, from the start. Listen addresses are
parsed and bound by services.runtime.listen. Calls are counted for Prometheus (services.runtime.metrics) and
/metrics, /healthz and /readyz are served on the dashboard and, with `metrics`, on an address of
their own (services.web.ops).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
import sys
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ledger import Ledger
from ledger.backend import damage, is_postgres_url
from services.grpc.events import EventsServicer
from services.grpc.interceptors import EdgeInterceptor
from services.grpc.registry import RegistryServicer
from services.grpc.runs import RunsServicer
from services.grpc.spend import SpendServicer
from services.lifecycle import GRACE_S, SERVICE_NAMES, LedgerServer
from services.runtime.auth import Gate, is_loopback, startup_notes
from services.runtime.describe import describe
from services.runtime.edge import Edge
from services.runtime.holder import Holder, HolderError, acquire
from services.runtime.listen import StartupError, bind_http, bind_problem, listen_address, parse_listen, reachable
from services.runtime.metrics import CountingGate, Metrics
from services.runtime.readiness import Readiness
from services.runtime.tls import ServerTLS, TLSError
from services.web import create_app
from services.web.access import Access
from services.web.hosts import AllowedHosts, HostsError
from services.web.ops import Ops
from services.web.serving import Dashboard, HttpOptions, HttpOptionsError, Limits
from trainledger.v1 import events_pb2_grpc, registry_pb2_grpc, runs_pb2_grpc, spend_pb2_grpc

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
    """Build the server (call it on the event loop that will run it) and bind `address`, HOST:PORT or
    [IPv6]:PORT (port 0 picks a free port; an address in use is refused, never shared). Opens `database` unless
    a ledger is given; a given ledger must be projecting or following (Ledger.open's default projects) and stays
    the caller's to close. A SQLite database this server opens is held for it (services.runtime.holder) until it
    stops: one SQLite file has one serving process. With project=False the server applies no events to the views
    itself: `trainledger project` workers do (PostgreSQL only), and the server follows their progress. With
    `tls` the port speaks TLS only (services.runtime.tls: mutual TLS when it names a client CA). With `http`
    (HOST:PORT) the web dashboard's socket is bound too (LedgerServer.http_address; served from start()), over
    TLS with the same files whenever gRPC is, answering the hosts and under the caps of `http_options`
    (services.web.serving). A database it opens whose log has no seals, or whose chain breaks in its last
    events, is refused unless `allow_unsealed` (see `unsealed`). With `instrument` (the default) calls are
    counted for Prometheus (services.runtime.metrics: /metrics on the dashboard, and on `metrics`, HOST:PORT, an
    address of its own with /healthz and /readyz, services.web.ops). Returns the server, not yet started, and
    the bound port. Raises StartupError."""
    host, wanted_port = parse_listen(address)
    http_host, http_options, credentials, http_tls, hosts = _transport(tls, http, http_options)
    holder = _hold(database, project) if ledger is None else None
    opened: Ledger | None = None
    edge: Edge | None = None
    sockets: list[socket.socket] = []
    try:
        _check_free(address, host, wanted_port)
        if ledger is None:
            ledger = opened = _open(database, project, allow_unsealed)
        edge = Edge(ledger)
        _check_authentication(ledger, address, host, http, http_host, chosen=auth or insecure)
        gate, ops = _gate(edge, auth, instrument)
        server, health_servicer = _grpc_server(edge, gate, ops.metrics)
        port, bound = _bind_grpc(server, address, host, wanted_port, credentials)
        dashboard = ops_dashboard = None
        if http is not None:
            dashboard = _dashboard(http, "the dashboard", create_app(edge, gate, hosts, ops), http_options, http_tls)
            sockets = list(dashboard.sockets)  # Closed on failure.
        if metrics is not None:
            ops_dashboard = _ops_dashboard(metrics, ops, tls)
            sockets += ops_dashboard.sockets
        if holder is not None:
            holder.record(bound)
    except BaseException:
        _undo(sockets, edge, opened, holder)
        raise
    served = LedgerServer(
        server,
        edge,
        health_servicer,
        owns_ledger=opened is not None,
        address=bound,
        holder=holder,
        gate=gate,
        dashboard=dashboard,
        ops=ops,
        ops_dashboard=ops_dashboard,
    )
    return served, port


def _transport(
    tls: ServerTLS | None, http: str | None, http_options: HttpOptions | None
) -> tuple[str, HttpOptions, grpc.ServerCredentials | None, ssl.SSLContext | None, AllowedHosts]:
    """The dashboard's host and options, gRPC's credentials, the dashboard's TLS context and the
    hosts it answers, checked before anything is opened."""
    http_host = parse_listen(http)[0] if http is not None else ""
    http_options = http_options or HttpOptions()
    try:
        credentials = tls.credentials() if tls is not None else None
        http_tls = tls.ssl_context() if tls is not None and http is not None else None
        hosts = AllowedHosts(http_options.allowed_hosts, bound=http_host)
        Limits.of(http_options)
    except (TLSError, HostsError, HttpOptionsError) as error:
        raise StartupError(str(error)) from None
    return http_host, http_options, credentials, http_tls, hosts


def _check_free(address: str, host: str, port: int) -> None:
    problem = bind_problem(host, port)
    if problem:
        raise StartupError(f"cannot listen on {address}: {problem}")


def _undo(sockets: list[socket.socket], edge: Edge | None, opened: Ledger | None, holder: Holder | None) -> None:
    """Release what a create_server that failed had taken."""
    for listener in sockets:
        listener.close()
    if edge is not None:
        edge.close()
        edge.workers.close()
    if opened is not None:
        opened.close()
    if holder is not None:
        holder.release()


def _hold(database: str, project: bool) -> Holder | None:
    """The database's holder lock for this server (services.runtime.holder)."""
    if not project and not is_postgres_url(database):
        raise StartupError(
            f"cannot leave projection to workers on {describe(database)}: only a "
            "PostgreSQL database is shared with `trainledger project` workers"
        )
    try:
        return acquire(database, "serve")
    except HolderError as error:
        raise StartupError(str(error)) from None


def _open(database: str, project: bool, allow_unsealed: bool) -> Ledger:
    damaged = damage(database)  # Checked before anything could write to the file.
    if damaged:
        raise StartupError(f"cannot open database {describe(database)}: {damaged}")
    try:
        ledger = Ledger.open(database, project=project)
    except Exception as error:
        raise StartupError(f"cannot open database {describe(database)}: {error}") from error
    try:
        if not allow_unsealed:
            unsealed(ledger, database)
        if not project:
            ledger.projector.follow()
    except BaseException:
        ledger.close()
        raise
    return ledger


def _check_authentication(
    ledger: Ledger, address: str, host: str, http: str | None, http_host: str, *, chosen: bool
) -> None:
    """Refuse to serve a host that is not loopback without authentication unless --auth or
    --insecure was `chosen`; authentication is on once the ledger has issued a token
    (services.runtime.auth)."""
    if not (chosen or is_loopback(host) or ledger.token_book()):
        raise StartupError(f"refusing to serve {address} without authentication: pass --auth or --insecure")
    if http is not None and not (chosen or is_loopback(http_host) or ledger.token_book()):
        raise StartupError(
            f"refusing to serve the dashboard on {http} without authentication: pass --auth or --insecure"
        )


def _grpc_server(edge: Edge, gate: Gate, counters: Metrics | None) -> tuple[grpc.aio.Server, Any]:
    """The gRPC server with the four servicers, health and reflection behind the interceptor."""
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
    return server, health_servicer


def _bind_grpc(
    server: grpc.aio.Server, address: str, host: str, wanted_port: int, credentials: grpc.ServerCredentials | None
) -> tuple[int, str]:
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
    return port, listen_address(host, port)


def _gate(edge: Edge, auth: bool, instrument: bool) -> tuple[CountingGate, Ops]:
    """The gate every call passes (counted for Prometheus with `instrument`) and the operations
    endpoints."""
    counters = Metrics() if instrument else None
    gate = CountingGate(edge, required=auth)
    gate.metrics = counters
    if counters is not None:
        counters.attach(edge)
    return gate, Ops(edge, counters, Readiness(edge.ledger), Access(gate))


def _dashboard(address: str, what: str, app: Any, options: HttpOptions, tls: ssl.SSLContext | None) -> Dashboard:
    """`app` served at `address`, its sockets bound here."""
    sockets = bind_http(address, what)
    try:
        return Dashboard(app, sockets, options=options, tls=tls, grace_s=GRACE_S)
    except BaseException:
        for listener in sockets:
            listener.close()
        raise


def _ops_dashboard(metrics: str, ops: Ops, tls: ServerTLS | None) -> Dashboard:
    """/metrics, /healthz and /readyz on an address of their own."""
    ops_tls = tls.ssl_context() if tls is not None else None
    served = _dashboard(metrics, "/metrics (--metrics)", ops.app(), HttpOptions(), ops_tls)
    if not is_loopback(parse_listen(metrics)[0]):
        log.warning(
            "/metrics, /healthz and /readyz on %s are unauthenticated: bind it where only the scraper reaches",
            metrics,
        )
    return served


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
