"""Trainers and scoped tokens name their own runs on the command line, as real processes: a
served ledger with runs under team-a and team-b, and `runs show`, `runs list` and `watch` run with
tokens scoped to team-a. A run is found by its id or run key through a read of that run, by name
through the runs listing narrowed to the token's scope; team-b's runs stay out of sight."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledger import Ledger
from tests.e2e.test_serve_guards import Servers, environment, trainledger

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

WHO = {"principal": "setup", "request_id": ""}


@dataclass
class World:
    directory: Path
    address: str
    a_run: str
    b_run: str
    database: Path
    live_run: str
    watcher_token_id: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("scoped-cli")
    database = directory / "ledger.db"
    ledger = Ledger.open(str(database))
    try:
        ledger.open_account(account="team-a", cap_usd_micro=None, **WHO)
        ledger.open_account(account="team-b", cap_usd_micro=None, **WHO)
        runs = {}
        for team in ("team-a", "team-b"):
            runs[team] = ledger.open_run(
                run_key=f"key-{team}", name=f"run-{team}", spec={}, parent_account=team, cap_usd_micro=None, **WHO
            ).run_id
            ledger.start_attempt(run_id=runs[team], attempt_id=f"attempt-{team}", label="", **WHO)
            ledger.finish_run(run_id=runs[team], attempt=1, status="done", summary={}, **WHO)
        for role, scope in (("trainer", "team-a"), ("operator", "team-a"), ("trainer", "")):
            issued = ledger.issue_token(holder=f"{role}-{scope or 'all'}", role=role, account=scope, **WHO)
            (directory / f"{role}-{scope or 'all'}.token").write_text(issued.bearer + "\n")
        live = ledger.open_run(run_key="key-live", name="live", spec={}, cap_usd_micro=None, **WHO).run_id
        ledger.start_attempt(run_id=live, attempt_id="attempt-live", label="", **WHO)
        watcher = ledger.issue_token(holder="watcher", role="auditor", **WHO)
        (directory / "watcher.token").write_text(watcher.bearer + "\n")
    finally:
        ledger.close()
    servers = Servers(directory)
    try:
        _, address = servers.start(database)
        yield World(directory, address, runs["team-a"], runs["team-b"], database, live, watcher.token.token_id)
    finally:
        servers.kill_all()


def cli(world: World, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*trainledger(), *args, "--address", world.address, "--token-file", str(world.directory / f"{token}.token")],
        capture_output=True,
        text=True,
        cwd=world.directory,
        env=environment(),
        timeout=60,
    )


@pytest.mark.parametrize("token", ["trainer-team-a", "trainer-all", "operator-team-a"])
def test_a_run_is_shown_by_its_id_or_run_key(world: World, token: str) -> None:
    for ref in (world.a_run, "key-team-a"):
        shown = cli(world, token, "runs", "show", ref)
        assert shown.returncode == 0, shown.stderr
        assert "run-team-a" in shown.stdout and world.a_run in shown.stdout


def test_a_trainer_watches_its_run(world: World) -> None:
    watched = cli(world, "trainer-team-a", "watch", world.a_run)
    assert watched.returncode == 0, watched.stderr
    assert "done" in watched.stdout


def test_a_scoped_operator_names_its_run_and_lists_only_its_scope(world: World) -> None:
    shown = cli(world, "operator-team-a", "runs", "show", "run-team-a")
    assert shown.returncode == 0, shown.stderr
    assert world.a_run in shown.stdout
    for account in ((), ("--account", "team-a")):
        listed = cli(world, "operator-team-a", "runs", "list", *account)
        assert listed.returncode == 0, listed.stderr
        assert "run-team-a" in listed.stdout and "run-team-b" not in listed.stdout


def test_another_scopes_run_stays_out_of_sight(world: World) -> None:
    for token in ("trainer-team-a", "operator-team-a"):
        for ref in (world.b_run, "key-team-b"):
            refused = cli(world, token, "runs", "show", ref)
            assert refused.returncode == 1
            assert "run-team-b" not in refused.stdout + refused.stderr
    listed = cli(world, "operator-team-a", "runs", "list", "--account", "team-b")
    assert listed.returncode == 1 and "OUTSIDE_SCOPE" in listed.stderr


def test_a_trainer_naming_a_run_by_name_is_told_to_use_its_id_or_key(world: World) -> None:
    refused = cli(world, "trainer-team-a", "runs", "show", "run-team-a")
    assert refused.returncode == 1
    assert "run id or run key" in refused.stderr


def test_a_command_without_a_token_is_told_how_to_give_one(world: World) -> None:
    refused = subprocess.run(
        [*trainledger(), "runs", "list", "--address", world.address],
        capture_output=True,
        text=True,
        cwd=world.directory,
        env={k: v for k, v in environment().items() if k != "TRAINLEDGER_TOKEN"},
        timeout=60,
    )
    assert refused.returncode == 3 and "TOKEN_MISSING" in refused.stderr
    assert "--token-file FILE" in refused.stderr and "TRAINLEDGER_TOKEN" in refused.stderr


def test_watch_ends_with_status_3_when_its_token_is_revoked(world: World) -> None:
    token_file = str(world.directory / "watcher.token")
    watch = subprocess.Popen(
        [*trainledger(), "watch", world.live_run, "--address", world.address, "--token-file", token_file],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=world.directory,
        env=environment(),
    )
    try:
        assert watch.stdout is not None and "watching live" in watch.stdout.readline()
        revoked = subprocess.run(
            [*trainledger(), "tokens", "revoke", world.watcher_token_id, "--db", str(world.database)],
            capture_output=True,
            text=True,
            cwd=world.directory,
            env=environment(),
            timeout=60,
        )
        assert revoked.returncode == 0, revoked.stderr
        _, errors = watch.communicate(timeout=60)
    finally:
        watch.kill()
    assert watch.returncode == 3 and "TOKEN_REVOKED" in errors
