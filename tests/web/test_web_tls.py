"""The dashboard over TLS: a `trainledger serve` process given --tls-cert and --tls-key serves its
dashboard over HTTPS with the same certificate, and with --tls-client-ca asks for a client
certificate signed by that CA, as gRPC does: plaintext HTTP to that port gets nothing, HTTPS
without a client certificate fails its handshake, HTTPS with one reads the event log with an
auditor's token, the login cookie is Secure, HttpOnly and SameSite=Strict, and a connection that
never finishes its handshake is closed. Certificates are
made by tests.certs; the server is a real process, the client httpx over loopback."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ledger import Ledger
from tests.certs import Authority, Issued
from tests.web.browser import Served, serve

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]


@dataclass
class Mutual:
    served: Served
    port: int
    auditor: str
    client: Issued


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def mutual(authority: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mutual]:
    directory = tmp_path_factory.mktemp("mtls")
    database = directory / "ledger.db"
    ledger = Ledger.open(str(database))
    try:
        auditor = ledger.issue_token(holder="audit-1", role="auditor").bearer
    finally:
        ledger.close()
    issued = authority.server()
    tls = ["--tls-cert", issued.cert_file, "--tls-key", issued.key_file, "--tls-client-ca", authority.ca_file]
    served = serve(database, directory, *tls, "--http", "0.0.0.0:0")  # Off loopback, authentication on.
    try:
        port = int(served.http.rsplit(":", 1)[1])
        yield Mutual(served, port, auditor, authority.client("dashboard-user"))
    finally:
        served.stop()


def _context(authority: Authority, client: Issued | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=authority.ca_file)
    if client is not None:
        context.load_cert_chain(client.cert_file, client.key_file)
    return context


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_the_dashboard_of_a_tls_server_announces_https(mutual: Mutual) -> None:
    assert mutual.served.scheme == "https"


def test_plaintext_http_gets_nothing(mutual: Mutual) -> None:
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{mutual.port}/api/events", headers=_bearer(mutual.auditor), timeout=10)


def test_https_without_a_client_certificate_is_refused(mutual: Mutual, authority: Authority) -> None:
    with httpx.Client(verify=_context(authority), timeout=10) as client:
        with pytest.raises(httpx.TransportError):
            client.get(f"https://localhost:{mutual.port}/api/events", headers=_bearer(mutual.auditor))


def test_https_with_a_certificate_of_another_ca_is_refused(
    mutual: Mutual, authority: Authority, tmp_path: Path
) -> None:
    intruder = Authority(tmp_path / "other", "another CA").client("intruder")
    with httpx.Client(verify=_context(authority, intruder), timeout=10) as client:
        with pytest.raises(httpx.TransportError):
            client.get(f"https://localhost:{mutual.port}/api/events", headers=_bearer(mutual.auditor))


def test_https_with_a_client_certificate_reads_the_log(mutual: Mutual, authority: Authority) -> None:
    with httpx.Client(verify=_context(authority, mutual.client), timeout=10) as client:
        response = client.get(f"https://localhost:{mutual.port}/api/events", headers=_bearer(mutual.auditor))
        assert response.status_code == 200, response.text
        assert [event["position"] for event in response.json()["events"]][:1] == [1]
        assert client.get(f"https://localhost:{mutual.port}/api/events").status_code == 401


def test_the_login_cookie_is_secure_http_only_and_strict(mutual: Mutual, authority: Authority) -> None:
    with httpx.Client(verify=_context(authority, mutual.client), timeout=10) as client:
        response = client.post(
            f"https://localhost:{mutual.port}/login", data={"token": mutual.auditor, "next": "/events"}
        )
    assert response.status_code == 303, response.text
    attributes = {
        part.strip().split("=")[0].lower(): part.strip() for part in response.headers["set-cookie"].split(";")
    }
    assert attributes["trainledger_token"] == f"trainledger_token={mutual.auditor}"
    assert "secure" in attributes and "httponly" in attributes
    assert attributes["samesite"].lower() == "samesite=strict"


def test_a_connection_that_never_finishes_its_handshake_is_closed(mutual: Mutual) -> None:
    with socket.create_connection(("127.0.0.1", mutual.port), timeout=60) as silent:
        silent.sendall(b"\x16\x03\x01")  # The start of a ClientHello, and nothing more.
        try:
            closed = silent.recv(65536) == b""
        except ConnectionResetError:
            closed = True
    assert closed


def test_tls_without_client_ca_serves_https_to_any_client(authority: Authority, tmp_path: Path) -> None:
    issued = authority.server()
    served = serve(tmp_path / "ledger.db", tmp_path, "--tls-cert", issued.cert_file, "--tls-key", issued.key_file)
    try:
        port = int(served.http.rsplit(":", 1)[1])
        assert served.scheme == "https"
        response = httpx.get(f"https://localhost:{port}/api/runs", verify=_context(authority), timeout=10)
        assert response.json() == {"runs": [], "next_page": None}
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=10)
    finally:
        served.stop()
