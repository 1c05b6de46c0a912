"""An in-process ledger server on its own asyncio loop and thread, stoppable and restartable on
the same port and database (what a crash and restart looks like to a client)."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

from services.server import create_server

__all__ = ["ServerThread", "free_port"]


def free_port() -> int:
    """A port nothing listens on now (bound to port 0 and closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerThread:
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
        self._server, self.port = asyncio.run_coroutine_threadsafe(self._start(), loop).result(30)
        return self

    async def _start(self) -> tuple[Any, int]:
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
            asyncio.run_coroutine_threadsafe(self._server.stop(grace_s), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            loop.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
