"""`trainledger tokens` and `serve`'s authentication as real processes: the first admin token made
on the database directly, a served ledger that then refuses calls without it, a revocation by the
command line refused by the running server within 2 s, and a non-loopback address that needs
`--auth` or `--insecure`."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from tests.e2e.test_serve_guards import Servers, environment, first_line, trainledger
from tests.service.support import error_info
from trainledger.v1 import runs_pb2, runs_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*trainledger(), *args], capture_output=True, text=True, cwd=cwd, env=environment(), timeout=60
    )


@pytest.fixture
def servers(tmp_path: Path):
    started = Servers(tmp_path)
    yield started
    started.kill_all()


def list_runs(address: str, token: str | None) -> runs_pb2.ListRunsResponse:
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(address) as channel:
        return runs_pb2_grpc.RunsStub(channel).ListRuns(runs_pb2.ListRunsRequest(), metadata=metadata, timeout=10)


def reason_of(address: str, token: str | None) -> str:
    with pytest.raises(grpc.RpcError) as raised:
        list_runs(address, token)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    return error_info(raised.value).reason


def test_tokens_made_listed_and_revoked_on_the_database_while_it_is_served(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    made = cli("tokens", "create", "--db", str(database), "--principal", "root", "--role", "admin", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    token = made.stdout.splitlines()[0]
    assert token.startswith("tl_") and len(token) > 60
    listed = cli("tokens", "list", "--db", str(database), "--json", cwd=tmp_path)
    rows = json.loads(listed.stdout)
    assert [(row["principal"], row["role"], row["revoked_at"]) for row in rows] == [("root", "admin", "-")]
    assert token.split("_", 2)[2] not in listed.stdout and token.split("_", 2)[2] not in database.read_bytes().decode(
        errors="replace"
    )

    _, address = servers.start(database)
    assert reason_of(address, None) == "TOKEN_MISSING"
    assert list_runs(address, token).runs is not None

    revoked = cli("tokens", "revoke", rows[0]["token_id"], "--db", str(database), "--reason", "rotated", cwd=tmp_path)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.strip() == f"token {rows[0]['token_id']} revoked"
    started = time.monotonic()
    while True:
        try:
            list_runs(address, token)
        except grpc.RpcError as error:
            assert error_info(error).reason == "TOKEN_REVOKED"
            break
        assert time.monotonic() - started < 2.0
        time.sleep(0.05)
    again = cli("tokens", "revoke", rows[0]["token_id"], "--db", str(database), cwd=tmp_path)
    assert again.stdout.strip() == f"token {rows[0]['token_id']} was already revoked"


def test_tokens_refuses_what_it_cannot_issue(tmp_path: Path) -> None:
    database = str(tmp_path / "ledger.db")
    args = ["tokens", "create", "--db", database, "--principal", "alice", "--role", "trainer"]
    unknown = cli(*args, "--account", "team-a", cwd=tmp_path)
    assert (unknown.returncode, unknown.stderr.strip()) == (1, "trainledger: no account team-a")
    expiry = cli(*args, "--expires", "soon", cwd=tmp_path)
    assert expiry.returncode == 2 and "is not a number and a unit" in expiry.stderr
    role = cli("tokens", "create", "--db", database, "--principal", "alice", "--role", "root", cwd=tmp_path)
    assert role.returncode == 2 and "invalid choice" in role.stderr
    missing = cli("tokens", "revoke", "0123456789abcdef", "--db", database, cwd=tmp_path)
    assert (missing.returncode, missing.stderr.strip()) == (1, "trainledger: no token 0123456789abcdef")


def test_a_non_loopback_address_without_authentication_is_refused_in_one_line(tmp_path: Path, servers: Servers) -> None:
    database = str(tmp_path / "ledger.db")
    refused = cli("serve", "--db", database, "--listen", "0.0.0.0:0", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "trainledger: refusing to serve 0.0.0.0:0 without authentication: pass --auth or --insecure"
    ]
    process = subprocess.Popen(
        [*trainledger(), "serve", "--db", database, "--listen", "0.0.0.0:0", "--insecure"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env=environment(),
    )
    servers.processes.append(process)
    assert "serving on 0.0.0.0:" in first_line(process)


def test_revoke_given_the_secret_token_revokes_it_and_never_prints_the_secret(tmp_path: Path) -> None:
    database = str(tmp_path / "ledger.db")
    made = cli("tokens", "create", "--db", database, "--principal", "root", "--role", "admin", cwd=tmp_path)
    token = made.stdout.splitlines()[0]
    token_id, secret = token.split("_", 2)[1:]
    revoked = cli("tokens", "revoke", token, "--db", database, cwd=tmp_path)
    assert revoked.returncode == 0, revoked.stderr
    assert secret not in revoked.stdout + revoked.stderr
    assert f"token {token_id} revoked" in revoked.stdout
    rows = json.loads(cli("tokens", "list", "--db", database, "--json", cwd=tmp_path).stdout)
    assert rows[0]["revoked_at"] != "-"
    # A secret-like word that is no token id is refused without being echoed.
    mangled = "tl_" + token_id + "_" + secret[:10]
    refused = cli("tokens", "revoke", mangled, "--db", database, cwd=tmp_path)
    assert refused.returncode == 2 and "TOKEN_ID" in refused.stderr
    assert secret[:10] not in refused.stdout + refused.stderr


def test_prune_with_a_token_that_may_not_read_the_protections_says_which_token_may(
    tmp_path: Path, servers: Servers
) -> None:
    database = str(tmp_path / "ledger.db")
    made = cli("tokens", "create", "--db", database, "--principal", "tina", "--role", "trainer", cwd=tmp_path)
    token = made.stdout.splitlines()[0]
    _, address = servers.start(Path(database))
    (tmp_path / "root").mkdir()
    pruned = subprocess.run(
        [*trainledger(), "checkpoints", "prune", "--all", "--root", "root", "--dry-run", "--address", address],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**environment(), "TRAINLEDGER_TOKEN": token},
        timeout=60,
    )
    assert pruned.returncode == 1
    assert "checkpoints prune needs an unscoped operator or admin token" in pruned.stderr
    assert "ListRuns" not in pruned.stderr


def test_a_token_made_into_a_file_is_read_from_it(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    made = cli("tokens", "create", "--db", str(database), "--principal", "root", "--role", "admin", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    (tmp_path / "tok.txt").write_text(made.stdout)  # `tokens create ... > tok.txt`
    assert "shown once" in made.stderr
    _, address = servers.start(database)
    listed = cli("runs", "list", "--address", address, "--token-file", "tok.txt", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (tmp_path / "bad.txt").write_text("two words\n")
    refused = cli("runs", "list", "--address", address, "--token-file", "bad.txt", cwd=tmp_path)
    assert refused.returncode == 2 and "bad.txt" in refused.stderr


def test_serve_says_authentication_is_on_and_warns_of_plaintext_tokens(tmp_path: Path, servers: Servers) -> None:
    import re

    database = tmp_path / "ledger.db"
    server = subprocess.Popen(
        [*trainledger(), "serve", "--db", str(database), "--listen", "0.0.0.0:0", "--auth", "--http", "0.0.0.0:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=environment(),
    )
    servers.processes.append(server)
    first = first_line(server)
    assert "serving on" in first and "authentication on" in first, first
    assert server.stdout is not None
    dashboard = server.stdout.readline()  # Read with the first line, maybe: not select()ed for.
    match = re.search(r"dashboard on http://127\.0\.0\.1:(\d+)/", dashboard)
    assert match, dashboard  # Not 0.0.0.0, which the dashboard does not answer for.
    server.kill()
    _, errors = server.communicate(timeout=30)
    assert "plaintext" in errors and "--tls-cert" in errors
    assert "trainledger tokens create" in errors and "--role admin" in errors


def test_a_refused_host_is_told_how_to_allow_it(tmp_path: Path, servers: Servers) -> None:
    import http.client

    database = tmp_path / "ledger.db"
    server = subprocess.Popen(
        [*trainledger(), "serve", "--db", str(database), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env=environment(),
    )
    servers.processes.append(server)
    first_line(server)
    assert server.stdout is not None
    port = int(server.stdout.readline().strip().rstrip("/").rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/api/runs", headers={"Host": "ledger.example"})
    answer = connection.getresponse()
    assert answer.status == 421
    assert "--http-allowed-host ledger.example" in answer.read().decode()
