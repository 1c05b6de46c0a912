"""The dashboard's connections are bounded, so that nobody can hold its port, or starve gRPC of file
descriptors, by opening connections and sending nothing (or half a request): a connection that
sends no whole request in time is closed, idle or slow, before its first request or after a
response; connections over the cap from one client address, or over the cap in all, are closed
as soon as they are accepted (--http-client-connections-max, --http-connections-max; by default
below the process's open-file limit), logged once rather than once a socket; and under a low
`ulimit -n` a new gRPC client still opens a run while hundreds of bare connections press on the
dashboard. Real `trainledger serve` processes, raw sockets over loopback from several loopback
source addresses (127.0.0.x: each its own client). No timing is asserted: waits are bounds on
hangs."""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients import LedgerClient, run_key
from tests.e2e.test_serve_guards import Servers
from tests.web.browser import Served, serve

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]

WAIT_S = 60.0
REQUEST = b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _port(served: Served) -> int:
    return int(served.http.rsplit(":", 1)[1])


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    connection = socket.socket()
    connection.bind((source, 0))
    connection.connect(("127.0.0.1", port))
    return connection


def _answers(connections: list[socket.socket], request: bytes = REQUEST) -> list[bytes]:
    """Send `request` on each connection and return what each answers first: the start of a
    response, or b"" when the server closed (or reset) it instead."""
    for connection in connections:
        with contextlib.suppress(OSError):
            connection.sendall(request)
    return _first_reads(connections)


def _first_reads(connections: list[socket.socket]) -> list[bytes]:
    """What each connection reads first (b"" when the server closes it), waiting at most WAIT_S."""
    answers: dict[socket.socket, bytes] = {}
    with selectors.DefaultSelector() as selector:
        for connection in connections:
            selector.register(connection, selectors.EVENT_READ)
        deadline = time.monotonic() + WAIT_S
        while len(answers) < len(connections) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                connection = key.fileobj
                assert isinstance(connection, socket.socket)
                try:
                    answers[connection] = connection.recv(65536)
                except OSError:
                    answers[connection] = b""
                selector.unregister(connection)
    assert len(answers) == len(connections), (
        f"{len(connections) - len(answers)} connections neither answered nor closed"
    )
    return [answers[connection] for connection in connections]


def _drained(connection: socket.socket) -> bool:
    """Whether the server closes `connection` (whatever it sends first) within WAIT_S."""
    connection.settimeout(WAIT_S)
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True


def _close(connections: list[socket.socket]) -> None:
    for connection in connections:
        connection.close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    try:
        yield started
    finally:
        started.kill_all()


def test_idle_and_slow_connections_are_closed(tmp_path: Path) -> None:
    served = serve(tmp_path / "ledger.db", tmp_path)
    port = _port(served)
    connections: list[socket.socket] = []
    try:
        bare = _connect(port)
        half = _connect(port)
        half.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        body = _connect(port)  # A whole head, then a body that never comes.
        body.sendall(b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\ntoken=")
        kept = _connect(port)
        connections = [bare, half, body, kept]
        [answer] = _answers([kept])
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]
        assert _first_reads([bare, half]) == [b"", b""]
        assert _drained(kept)  # The rest of its response, then the close.
        assert _drained(body)
        dribbler = _connect(port)  # A header line every half second, never the end of the head.
        connections.append(dribbler)
        dribbler.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        deadline = time.monotonic() + WAIT_S
        with pytest.raises(OSError):  # Broken pipe or reset, once the server has closed it.
            while time.monotonic() < deadline:
                dribbler.sendall(b"x-dribble: 1\r\n")
                time.sleep(0.5)
    finally:
        _close(connections)
        served.stop()


def test_connections_over_the_caps_are_refused(tmp_path: Path) -> None:
    caps = ["--http-connections-max", "12", "--http-client-connections-max", "4"]
    served = serve(tmp_path / "ledger.db", tmp_path, *caps)
    port = _port(served)
    one = [_connect(port, "127.0.0.2") for _ in range(6)]
    others = [_connect(port, f"127.0.0.{n}") for n in (3, 4, 5) for _ in range(4)]
    try:
        answers = _answers(one + others)
        answered = [answer.startswith(b"HTTP/1.1 200 ") for answer in answers]
        assert answered[:6] == [True] * 4 + [False] * 2  # Four from one client address.
        assert answered[6:] == [True] * 8 + [False] * 4  # Twelve in all.
        assert all(answer == b"" for answer in answers if not answer.startswith(b"HTTP/1.1 200 "))
        _close(one)
        deadline = time.monotonic() + WAIT_S  # The server frees a place when it sees a close.
        again = b""
        while not again.startswith(b"HTTP/1.1 200 ") and time.monotonic() < deadline:
            later = _connect(port, "127.0.0.5")
            [again] = _answers([later])
            later.close()
        assert again.startswith(b"HTTP/1.1 200 "), again
        log = served.log.read_text()
        refusals = [line for line in log.splitlines() if "refused" in line and "dashboard connection" in line]
        assert len(refusals) == 1, log[-3000:]
    finally:
        _close(one + others)
        served.stop()


def test_grpc_still_answers_under_a_low_open_file_limit(tmp_path: Path) -> None:
    files_max = 256
    served = serve(tmp_path / "ledger.db", tmp_path, files_max=files_max)
    port = _port(served)
    connections: list[socket.socket] = []
    try:
        for n in range(2, 12):  # 300 connections, 30 from each of ten client addresses.
            connections += [_connect(port, f"127.0.0.{n}") for _ in range(30)]
        with LedgerClient(served.grpc, timeout_s=20.0, retries=0, outage_budget_s=0) as client:
            opened = client.open_run(run_key=run_key({"files": str(uuid.uuid4())}), name="under-a-low-limit")
            assert opened.state.run.run_id
        answered = sum(answer.startswith(b"HTTP/1.1 200 ") for answer in _answers(connections))
        assert 0 < answered < files_max, answered
        log = served.log.read_text()
        assert "Too many open files" not in log and "Traceback" not in log, log[-3000:]
        refusals = [line for line in log.splitlines() if "refused" in line and "dashboard connection" in line]
        assert len(refusals) == 1, log[-3000:]
    finally:
        _close(connections)
        served.stop()


@pytest.mark.parametrize(
    "option",
    [
        ["--http-connections-max", "0"],
        ["--http-connections-max", "1000001"],
        ["--http-client-connections-max", "0"],
        ["--http-connections-max", "8", "--http-client-connections-max", "9"],
    ],
)
def test_caps_out_of_range_are_refused_at_start(tmp_path: Path, servers: Servers, option: list[str]) -> None:
    database = str(tmp_path / "ledger.db")
    line = servers.refused("serve", "--db", database, "--listen", "127.0.0.1:0", *option)
    assert "connections" in line
