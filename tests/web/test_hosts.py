"""The dashboard answers only the hosts it serves, so that a page on another name that resolves to
this machine (DNS rebinding) cannot read it: localhost, 127.0.0.1, [::1], the address it is bound
to or was reached at, and the names given with --http-allowed-host (or
TRAINLEDGER_HTTP_ALLOWED_HOSTS); any other Host header, or none, is a 421 HOST_NOT_ALLOWED, even
with authentication off. A real `trainledger serve` process, requests over loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_serve_guards import Servers
from tests.web.browser import Served, serve

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("hosts")
    allowed = ["--http-allowed-host", "ledger.example", "--http-allowed-host", "*.dash.example"]
    server = serve(directory / "ledger.db", directory, *allowed)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    try:
        yield started
    finally:
        started.kill_all()


def _events(served: Served, host: str) -> httpx.Response:
    return httpx.get(f"{served.base}/api/events", headers={"host": host}, timeout=10)


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 421, response.text
    assert response.json()["error"]["reason"] == "HOST_NOT_ALLOWED"


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:{port}",
        "localhost.attacker.example",
        "127.0.0.1.attacker.example",
        "ledger.example.attacker.example",
        "dash.example",
        "[::2]:{port}",
    ],
)
def test_a_host_it_does_not_serve_is_refused(served: Served, host: str) -> None:
    port = served.http.rsplit(":", 1)[1]
    _refused(_events(served, host.format(port=port)))


def test_a_page_for_another_host_is_refused(served: Served) -> None:
    response = httpx.get(f"{served.base}/", headers={"host": "attacker.example"}, timeout=10)
    assert response.status_code == 421
    assert "HOST_NOT_ALLOWED" in response.text


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:{port}",
        "127.0.0.1:{port}",
        "[::1]:{port}",
        "LEDGER.example",
        "ledger.example:443",
        "a.dash.example",
    ],
)
def test_the_hosts_it_serves_are_answered(served: Served, host: str) -> None:
    port = served.http.rsplit(":", 1)[1]
    response = _events(served, host.format(port=port))
    assert response.status_code == 200, response.text
    assert "events" in response.json()


def test_a_request_without_a_host_is_refused(served: Served) -> None:
    host, port = served.http.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(b"GET /api/events HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 421 "), answer[:200]


def test_allowed_hosts_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINLEDGER_HTTP_ALLOWED_HOSTS", "one.example, two.example")
    server = serve(tmp_path / "ledger.db", tmp_path)
    try:
        assert _events(server, "two.example").status_code == 200
        _refused(_events(server, "three.example"))
    finally:
        server.stop()


@pytest.mark.parametrize("name", ["bad host", "a/b", "*", "x" * 254, "ex*ample.com"])
def test_an_allowed_host_that_is_not_a_host_name_is_refused_at_start(
    tmp_path: Path, servers: Servers, name: str
) -> None:
    database = str(tmp_path / "ledger.db")
    line = servers.refused("serve", "--db", database, "--listen", "127.0.0.1:0", "--http-allowed-host", name)
    assert "--http-allowed-host" in line


@pytest.mark.parametrize("path", ["/metrics", "/readyz", "/healthz"])
def test_a_scraper_on_another_host_is_answered_json_not_a_page(served: Served, path: str) -> None:
    """Prometheus scraping the dashboard's port by a name not allowed gets a JSON refusal that
    names --http-allowed-host's reason, never an HTML page."""
    response = httpx.get(f"{served.base}{path}", headers={"host": "prometheus-target.example"}, timeout=10)
    _refused(response)
    assert response.headers["content-type"].startswith("application/json")
