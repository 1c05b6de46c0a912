"""Serving the dashboard: uvicorn's HTTP/1.1 protocol (h11) on connections this module accepts
itself, so that each one is counted, capped and timed from its accept on, TLS handshake included,
and the dashboard can never take the file descriptors that gRPC and storage need.

- Caps: at most `connections_max` connections in all (by default a quarter of the process's limit
  on open files, at most CONNECTIONS_MAX) and `client_connections_max` from one client address (by
  default a quarter of that, at most CLIENT_CONNECTIONS_MAX). A connection over either is reset as
  soon as it is accepted; refusals are logged once, then counted and logged at most once every
  REFUSALS_LOG_INTERVAL_S, never once a socket. An accept that fails (out of file descriptors)
  waits ACCEPT_RETRY_S, logged the same way.
- Timeouts: a TLS handshake has REQUEST_TIMEOUT_S; then a connection has REQUEST_TIMEOUT_S, and
  again from each response it was sent, to send a whole request (line, head and body); a slow or
  silent one is closed. Between requests uvicorn closes a connection idle for KEEP_ALIVE_S.
- TLS: with an ssl.SSLContext (services.runtime.tls: the gRPC port's certificate and client CA) every
  connection is HTTPS, and a request's scheme is https (so the login cookie is Secure).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import math
import os
import resource
import socket
import ssl
import struct
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

__all__ = [
    "Dashboard",
    "HttpOptions",
    "HttpOptionsError",
    "Limits",
    "add_arguments",
    "from_arguments",
    "REQUEST_TIMEOUT_S",
]

log = logging.getLogger("trainledger.services.web")

CONNECTIONS_MAX = 1_024
CLIENT_CONNECTIONS_MAX = 64
# The caps a serve option may set.
CONNECTIONS_LIMIT = 100_000
REQUEST_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5
ACCEPT_RETRY_S = 1.0
ACCEPT_BATCH = 16
REFUSALS_LOG_INTERVAL_S = 60.0


class HttpOptionsError(ValueError):
    """A dashboard option out of its range."""


@dataclass(frozen=True)
class HttpOptions:
    """The dashboard's serve options: names it answers besides its own (services.web.hosts) and
    its connection caps (None: derived from the limit on open files)."""

    allowed_hosts: tuple[str, ...] = ()
    connections_max: int | None = None
    client_connections_max: int | None = None


class Limits:
    """Open connections, in all and by client address, against their caps."""

    def __init__(self, connections_max: int, client_connections_max: int) -> None:
        self.connections_max, self.client_connections_max = connections_max, client_connections_max
        self.count = 0
        self.by_client: Counter[str] = Counter()

    @classmethod
    def of(cls, options: HttpOptions, files_max: int | None = None) -> Limits:
        """The caps `options` ask for, or those derived from `files_max` (default: this process's
        soft limit on open files). Raises HttpOptionsError for a cap out of range."""
        total, per_client = options.connections_max, options.client_connections_max
        for value, name in ((total, "--http-connections-max"), (per_client, "--http-client-connections-max")):
            if value is not None and not 1 <= value <= CONNECTIONS_LIMIT:
                raise HttpOptionsError(f"{name} takes a number of connections from 1 to {CONNECTIONS_LIMIT}")
        if total is None:
            files = resource.getrlimit(resource.RLIMIT_NOFILE)[0] if files_max is None else files_max
            total = CONNECTIONS_MAX if files == resource.RLIM_INFINITY else max(1, min(CONNECTIONS_MAX, files // 4))
        if per_client is not None and per_client > total:
            raise HttpOptionsError(
                f"--http-client-connections-max {per_client} is more than the {total} connections in all "
                "(--http-connections-max)"
            )
        return cls(total, per_client or max(1, min(CLIENT_CONNECTIONS_MAX, total // 4)))

    def admit(self, client: str) -> str:
        """Count a connection from `client`: "" when admitted, else why not."""
        if self.by_client[client] >= self.client_connections_max:
            return f"over the cap of {self.client_connections_max} connections from one client address"
        if self.count >= self.connections_max:
            return f"over the cap of {self.connections_max} connections in all"
        self.count += 1
        self.by_client[client] += 1
        return ""

    def release(self, client: str) -> None:
        self.count -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


class Refusals:
    """Refused connections, logged at once the first time, then counted and logged at most once
    every REFUSALS_LOG_INTERVAL_S (with the count and the latest reason)."""

    def __init__(self) -> None:
        self.unlogged = 0
        self.logged_at = -math.inf

    def note(self, why: str) -> None:
        self.unlogged += 1
        now = time.monotonic()
        if now - self.logged_at < REFUSALS_LOG_INTERVAL_S:
            return
        log.warning(
            "refused %d dashboard connection%s (%s); refusals are logged at most once every %d s",
            self.unlogged,
            "" if self.unlogged == 1 else "s",
            why,
            REFUSALS_LOG_INTERVAL_S,
        )
        self.unlogged, self.logged_at = 0, now


class _Ticket:
    """A connection's place under the caps, given back once."""

    def __init__(self, limits: Limits, client: str) -> None:
        self.limits, self.client, self.held = limits, client, True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.limits.release(self.client)


class Connection(H11Protocol):
    """uvicorn's h11 protocol with a deadline on reading each request, and a place under the caps
    that it gives back when it is lost."""

    def __init__(self, config: uvicorn.Config, state: ServerState, ticket: _Ticket, deadline_s: float) -> None:
        super().__init__(config, state, app_state={})
        self.ticket, self.deadline_s = ticket, deadline_s
        self.reading: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow(fresh=False)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow(fresh=False)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow(fresh=True)

    def _should_upgrade(self) -> bool:
        # No WebSocket routes: an Upgrade header is ignored (not handed to another protocol,
        # which would hold the connection outside these caps, nor logged once a request).
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_reading()
        self.ticket.release()
        super().connection_lost(exc)

    def _follow(self, *, fresh: bool) -> None:
        """Run the deadline while a request is awaited or being read (fresh: from now, after a
        response); stop it once the request has come whole."""
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._stop_reading()
            return
        if fresh:
            self._stop_reading()
        if self.reading is None:
            self.reading = self.loop.call_later(self.deadline_s, self._expire)

    def _stop_reading(self) -> None:
        if self.reading is not None:
            self.reading.cancel()
            self.reading = None

    def _expire(self) -> None:
        self.reading = None
        if not self.transport.is_closing():
            self.transport.abort()  # Nothing is owed to it; an abort frees the socket at once.


def _reset(connection: socket.socket) -> None:
    """Close an accepted socket with a reset: nothing lingers, on either side."""
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


class Dashboard:
    """The web dashboard served by uvicorn on the server's event loop, over sockets already bound,
    under `options`' caps, over TLS with `tls`, stopped within `grace_s` unless told otherwise."""

    def __init__(
        self,
        app: Any,
        sockets: list[socket.socket],
        *,
        options: HttpOptions,
        grace_s: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.sockets, self.tls, self.grace_s = sockets, tls, grace_s
        host, port = sockets[0].getsockname()[:2]
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # As bound (port 0: as chosen).
        self.port = port
        self.scheme = "https" if tls is not None else "http"
        self.limits = Limits.of(options)
        self.refusals = Refusals()
        self.config = uvicorn.Config(
            app,
            http="h11",
            ws="none",
            lifespan="off",
            log_level="warning",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=math.ceil(grace_s),
        )
        self.server = uvicorn.Server(self.config)
        self._ticker: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        # Accepted here, not by uvicorn.Server.startup (which would also take over SIGINT and
        # SIGTERM; `serve` handles those itself): see the module's docstring.
        self.config.load()
        self.server.lifespan = self.config.lifespan_class(self.config)
        self.server.servers = []
        for listener in self.sockets:
            self._spawn(self._accept(listener))
        self._ticker = asyncio.create_task(self.server.main_loop(), name="trainledger-http")

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        for accepted in itertools.count(1):
            if accepted % ACCEPT_BATCH == 0:
                # sock_accept does not yield while connections wait: let gRPC's calls run between.
                await asyncio.sleep(0)
            try:
                connection, peer = await loop.sock_accept(listener)
            except OSError as error:  # Out of file descriptors (or memory): wait, accept again.
                self.refusals.note(f"cannot accept: {error.strerror or error}")
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            client = str(peer[0]) if isinstance(peer, tuple) else "local"
            refused = self.limits.admit(client)
            if refused:
                _reset(connection)
                self.refusals.note(refused)
                continue
            self._spawn(self._open(connection, _Ticket(self.limits, client)))

    async def _open(self, connection: socket.socket, ticket: _Ticket) -> None:
        """Serve an admitted connection: its TLS handshake (within the request deadline), then
        uvicorn's protocol."""
        loop = asyncio.get_running_loop()
        protocol = Connection(self.config, self.server.server_state, ticket, REQUEST_TIMEOUT_S)
        tls_options = {"ssl_handshake_timeout": REQUEST_TIMEOUT_S, "ssl_shutdown_timeout": REQUEST_TIMEOUT_S}
        try:
            await loop.connect_accepted_socket(
                lambda: protocol, connection, ssl=self.tls, **(tls_options if self.tls is not None else {})
            )
        except BaseException as error:  # A failed or timed-out handshake (or shutdown): nothing to serve.
            ticket.release()
            _reset(connection)
            if not isinstance(error, (OSError, asyncio.CancelledError)):
                log.warning("cannot serve a dashboard connection", exc_info=error)
            if isinstance(error, asyncio.CancelledError):
                raise

    async def stop(self, grace: float | None) -> None:
        """Stop accepting, end open connections (streams end as the edge closes), and wait for
        requests in flight up to `grace` seconds (grace_s when None)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._ticker is None:
            for listener in self.sockets:
                listener.close()
            return
        # uvicorn waits for connections in whole seconds (at least one, so that they may finish).
        self.config.timeout_graceful_shutdown = max(1, math.ceil(self.grace_s if grace is None else grace))
        self.server.should_exit = True
        ticker, self._ticker = self._ticker, None
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
        await self.server.shutdown(sockets=self.sockets)


def _count(text: str) -> int:
    if not text.isdigit() or len(text) > 7:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of connections")
    return int(text)


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """`serve [--http-allowed-host NAME]... [--http-connections-max N] [--http-client-connections-max N]`."""
    serve.add_argument(
        "--http-allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a Host the dashboard answers besides localhost and its address (repeatable; *.example.com "
        "allows names under it; default: TRAINLEDGER_HTTP_ALLOWED_HOSTS, comma-separated)",
    )
    serve.add_argument(
        "--http-connections-max",
        type=_count,
        default=None,
        metavar="N",
        help=f"dashboard connections in all (default: a quarter of the open-file limit, at most {CONNECTIONS_MAX})",
    )
    serve.add_argument(
        "--http-client-connections-max",
        type=_count,
        default=None,
        metavar="N",
        help=f"dashboard connections from one address (default: a quarter of those, at most {CLIENT_CONNECTIONS_MAX})",
    )


def from_arguments(args: argparse.Namespace) -> HttpOptions:
    """The HttpOptions of serve's options (and TRAINLEDGER_HTTP_ALLOWED_HOSTS)."""
    hosts = args.http_allowed_host
    if hosts is None:
        hosts = [name for name in os.environ.get("TRAINLEDGER_HTTP_ALLOWED_HOSTS", "").split(",") if name.strip()]
    return HttpOptions(
        allowed_hosts=tuple(hosts),
        connections_max=args.http_connections_max,
        client_connections_max=args.http_client_connections_max,
    )
