"""A ledger server inside the calling process, on its own asyncio loop and thread: what the
examples start when they are given no ledger address (a dry run on a temporary SQLite file), and
what tests use to stop and restart a server on the same port and database (what a crash and a
restart look like to a client).

    with ServerThread("/tmp/ledger.db") as server:     # port 0: a free port is chosen
        client = LedgerClient(server.address)

It is the same server `trainledger serve` runs (services.server.create_server), without the
dashboard; the thread is a daemon, so a process that forgets to stop it still exits.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

__all__ = ["ServerThread", "free_port"]

_START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A port nothing listens on now (bound to port 0 and closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerThread:
    """A gRPC ledger server on `database` (a SQLite file, created when missing) at 127.0.0.1:`port`
    (0: a free one, read back as `port` once started), served from a thread of its own. start()
    and stop() may alternate: a restart keeps the port and the database."""

    def __init__(self, database: str, port: int = 0) -> None:
        self.database, self.port = database, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="ledger-server", daemon=True)
        self._thread.start()
        self._server, self.port = asyncio.run_coroutine_threadsafe(self._start(), loop).result(_START_TIMEOUT_S)
        return self

    async def _start(self) -> tuple[Any, int]:
        from services.server import create_server  # The server's imports are paid on start, not on import.

        server, port = create_server(f"127.0.0.1:{self.port}", database=self.database)
        await server.start()
        return server, port

    def stop(self, grace_s: float | None = 0) -> None:
        """Stop serving (in-flight calls are cancelled with grace 0) and close the database."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        try:
            asyncio.run_coroutine_threadsafe(self._server.stop(grace_s), loop).result(_START_TIMEOUT_S)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_START_TIMEOUT_S)
            loop.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
