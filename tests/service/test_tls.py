"""TLS over real gRPC on loopback, with a CA, server and client certificates made here: calls over
TLS (sync and asyncio clients), mutual TLS accepted with a certificate the server's client CA
signed and refused in the handshake without one or with one from another CA, and the clear errors
of a plaintext client against a TLS server and of a client that does not trust the server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients import LedgerClient, run_key
from clients.aio import AsyncLedgerClient
from clients.errors import Unavailable
from clients.tls import TLS
from services.cli import commands as cli
from services.runtime.tls import ServerTLS
from services.server import StartupError, create_server
from tests.certs import Authority
from tests.client.server_thread import ServerThread


class TLSServerThread(ServerThread):
    """The in-process server of tests.client.server_thread, serving TLS."""

    def __init__(self, database: str, tls: ServerTLS) -> None:
        super().__init__(database)
        self.tls = tls

    async def _start(self) -> tuple[Any, int]:
        server, port = create_server(f"127.0.0.1:{self.port}", database=self.database, tls=self.tls)
        await server.start()
        return server, port


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("other-ca"), "another CA")


def _serve(directory: Path, tls: ServerTLS) -> Iterator[ServerThread]:
    server = TLSServerThread(str(directory / "ledger.db"), tls).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tls_server(authority: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    issued = authority.server()
    yield from _serve(tmp_path_factory.mktemp("tls"), ServerTLS(issued.cert_file, issued.key_file))


@pytest.fixture(scope="module")
def mtls_server(authority: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    issued = authority.server()
    tls = ServerTLS(issued.cert_file, issued.key_file, client_ca_file=authority.ca_file)
    yield from _serve(tmp_path_factory.mktemp("mtls"), tls)


def _open_run(client: LedgerClient) -> str:
    opened = client.open_run(run_key=run_key({"tls": str(uuid.uuid4())}), name="tls")
    return opened.state.run.run_id


def _client(address: str, tls: TLS | bool) -> LedgerClient:
    return LedgerClient(address, tls=tls, timeout_s=5.0, retries=0, outage_budget_s=0)


def test_calls_over_tls(tls_server: ServerThread, authority: Authority) -> None:
    with _client(f"localhost:{tls_server.port}", TLS(ca_file=authority.ca_file)) as client:
        run_id = _open_run(client)
        assert client.start_attempt(run_id=run_id, label="tls").attempt == 1
        assert client.get_run_state(run_id=run_id).run.run_id == run_id


def test_server_name_checks_an_address_by_another_name(authority: Authority, tmp_path: Path) -> None:
    issued = authority.server("named", hosts=("ledger.example",))
    for server in _serve(tmp_path, ServerTLS(issued.cert_file, issued.key_file)):
        with _client(server.address, TLS(ca_file=authority.ca_file, server_name="ledger.example")) as client:
            _open_run(client)
        with _client(server.address, TLS(ca_file=authority.ca_file)) as client:  # 127.0.0.1 is not in it.
            with pytest.raises(Unavailable, match="TLS handshake failed"):
                _open_run(client)


def test_the_async_client_over_tls(tls_server: ServerThread, authority: Authority) -> None:
    async def scenario() -> str:
        async with AsyncLedgerClient(
            f"localhost:{tls_server.port}", tls=TLS(ca_file=authority.ca_file), retries=0, outage_budget_s=0
        ) as client:
            opened = await client.open_run(run_key=run_key({"tls-aio": str(uuid.uuid4())}), name="tls")
            return opened.state.run.run_id

    assert asyncio.run(scenario())


def test_mutual_tls_accepts_a_certificate_its_ca_signed(mtls_server: ServerThread, authority: Authority) -> None:
    issued = authority.client("trainer")
    tls = TLS(ca_file=authority.ca_file, cert_file=issued.cert_file, key_file=issued.key_file)
    with _client(f"localhost:{mtls_server.port}", tls) as client:
        _open_run(client)


def test_mutual_tls_refuses_a_client_without_a_certificate(mtls_server: ServerThread, authority: Authority) -> None:
    with _client(f"localhost:{mtls_server.port}", TLS(ca_file=authority.ca_file)) as client:
        with pytest.raises(Unavailable, match="client certificate"):
            _open_run(client)


def test_mutual_tls_refuses_a_certificate_of_another_ca(
    mtls_server: ServerThread, authority: Authority, stranger: Authority
) -> None:
    issued = stranger.client("intruder")
    tls = TLS(ca_file=authority.ca_file, cert_file=issued.cert_file, key_file=issued.key_file)
    with _client(f"localhost:{mtls_server.port}", tls) as client:
        with pytest.raises(Unavailable):
            _open_run(client)


def test_a_plaintext_client_is_told_the_server_may_speak_tls(tls_server: ServerThread) -> None:
    with _client(tls_server.address, False) as client:
        with pytest.raises(Unavailable, match="it may speak TLS") as raised:
            _open_run(client)
    assert "tls=True" in str(raised.value)


def test_a_server_outside_the_trusted_roots_fails_the_handshake(tls_server: ServerThread) -> None:
    with _client(f"localhost:{tls_server.port}", True) as client:  # The system's roots.
        with pytest.raises(Unavailable, match="TLS handshake failed"):
            _open_run(client)


def test_tls_from_the_environment(tls_server: ServerThread, authority: Authority, monkeypatch) -> None:
    monkeypatch.setenv("TRAINLEDGER_CA_FILE", authority.ca_file)
    with LedgerClient(f"localhost:{tls_server.port}", retries=0, outage_budget_s=0) as client:
        assert client.tls == TLS(ca_file=authority.ca_file)
        _open_run(client)
    monkeypatch.setenv("TRAINLEDGER_TLS", "0")
    with LedgerClient(f"localhost:{tls_server.port}", retries=0, outage_budget_s=0) as client:
        assert client.tls is None


def test_a_client_certificate_needs_its_key() -> None:
    with pytest.raises(ValueError, match="both cert_file and key_file"):
        TLS(cert_file="client.pem")


def test_serve_refuses_unusable_tls_files(authority: Authority, tmp_path: Path, capsys) -> None:
    issued = authority.server()
    database = str(tmp_path / "ledger.db")
    listen = ["--db", database, "--listen", "127.0.0.1:0"]
    assert cli.main(["serve", *listen, "--tls-cert", issued.cert_file]) == 2
    assert "TLS needs both --tls-cert and --tls-key" in capsys.readouterr().err
    missing = str(tmp_path / "missing.pem")
    assert cli.main(["serve", *listen, "--tls-cert", issued.cert_file, "--tls-key", missing]) == 2
    assert f"cannot read the TLS key {missing}" in capsys.readouterr().err
    text = tmp_path / "key.txt"
    text.write_text("not a key")
    with pytest.raises(StartupError, match="is not a PEM file"):
        create_server("127.0.0.1:0", database=database, tls=ServerTLS(issued.cert_file, str(text)))


def test_the_cli_speaks_mutual_tls_from_flags_and_the_environment(
    mtls_server: ServerThread, authority: Authority, monkeypatch, capsys
) -> None:
    issued = authority.client("operator")
    address = ["--address", f"localhost:{mtls_server.port}"]
    files = ["--cert-file", issued.cert_file, "--key-file", issued.key_file]
    assert cli.main(["runs", "list", *address, "--ca-file", authority.ca_file, *files]) == 0, capsys.readouterr().err
    # The environment's client certificate and server name stay with a CA given as a flag.
    monkeypatch.setenv("TRAINLEDGER_CERT_FILE", issued.cert_file)
    monkeypatch.setenv("TRAINLEDGER_KEY_FILE", issued.key_file)
    monkeypatch.setenv("TRAINLEDGER_TLS_SERVER_NAME", "localhost")
    by_ip = ["--address", f"127.0.0.1:{mtls_server.port}"]
    assert cli.main(["runs", "list", *by_ip, "--ca-file", authority.ca_file]) == 0, capsys.readouterr().err
    assert cli.main(["runs", "list", *address, "--tls-server-name", "localhost", "--tls"]) == 2
    monkeypatch.delenv("TRAINLEDGER_KEY_FILE")
    assert cli.main(["runs", "list", *address, "--ca-file", authority.ca_file]) == 2
    assert "--cert-file" in capsys.readouterr().err


def test_the_cli_words_tls_hints_in_flags(tls_server: ServerThread, capsys) -> None:
    assert cli.main(["runs", "list", "--address", tls_server.address]) == 2
    told = capsys.readouterr().err
    assert "--tls" in told and "--ca-file" in told
    assert "tls=True" not in told and "start one with" not in told
