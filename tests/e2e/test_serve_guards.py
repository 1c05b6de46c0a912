"""One listening address has one ledger, and one SQLite file has one serving process: `trainledger
serve` as real processes on real ports (port 0, the first server's "serving on" line names the one
it got). A second server on a taken port, a second server (or a rebuild) on a served file and a
listen address without a port are each refused with one line on stderr and exit status 2; the
holder of a file killed with SIGKILL leaves nothing that blocks a restart."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

WAIT_S = 60.0


def trainledger() -> list[str]:
    script = Path(sys.executable).parent / "trainledger"
    return [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]


def environment() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "TRAINLEDGER_DATABASE_URL"}, "PYTHONUNBUFFERED": "1"}


class Servers:
    """The server processes a test starts, all killed at its end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, database: Path, listen: str = "127.0.0.1:0") -> tuple[subprocess.Popen[str], str]:
        """A server that must start: the process and the HOST:PORT its "serving on" line names."""
        log = self.directory / f"server-{len(self.processes)}.log"
        with open(log, "w") as errors:
            process = subprocess.Popen(
                [*trainledger(), "serve", "--db", str(database), "--listen", listen],
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                cwd=self.directory,
                env=environment(),
            )
        self.processes.append(process)
        line = first_line(process)
        match = re.search(r"serving on (127\.0\.0\.1:\d+)", line)
        assert match, f"the server did not start: {line!r} {log.read_text()[-2000:]}"
        return process, match.group(1)

    def refused(self, *args: str) -> str:
        """A command that must end with status 2 and one line on stderr (which it returns) without
        ever serving."""
        process = subprocess.Popen(
            [*trainledger(), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.directory,
            env=environment(),
        )
        self.processes.append(process)
        line = first_line(process)
        if "serving on" in line:
            process.kill()
            _, errors = process.communicate(timeout=WAIT_S)
            pytest.fail(f"`trainledger {' '.join(args)}` was not refused: it printed {line!r}, stderr {errors!r}")
        try:
            out, errors = process.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, errors = process.communicate(timeout=WAIT_S)
            pytest.fail(f"`trainledger {' '.join(args)}` did not end: {line + out!r} {errors!r}")
        assert process.returncode == 2, (process.returncode, line + out, errors)
        assert "Traceback" not in errors and len(errors.strip().splitlines()) == 1, errors
        return errors.strip()

    def kill_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=WAIT_S)
            if process.stdout is not None:
                process.stdout.close()
            if process.stderr is not None:
                process.stderr.close()


def first_line(process: subprocess.Popen[str]) -> str:
    """The first line the process prints on stdout ("" once it ends without one), waiting at most
    WAIT_S."""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], WAIT_S)
    if not readable:
        process.kill()
        pytest.fail(f"no output within {WAIT_S:.0f} s")
    return process.stdout.readline()


def test_a_second_server_on_a_taken_port_exits_2_naming_the_address(tmp_path: Path, servers: Servers) -> None:
    first, address = servers.start(tmp_path / "first.db")
    other = tmp_path / "other.db"
    error = servers.refused("serve", "--db", str(other), "--listen", address)
    assert error == f"trainledger: cannot listen on {address}: the address is already in use"
    assert not other.exists(), "the refused server created its database"
    assert first.poll() is None


def test_a_second_server_on_a_served_database_exits_2_naming_the_holder(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    first, address = servers.start(database)
    for listen in ("127.0.0.1:0", address):  # Another port, and the same one: the file is refused first.
        error = servers.refused("serve", "--db", str(database), "--listen", listen)
        assert error.startswith("trainledger: "), error
        assert f"pid {first.pid}" in error and address in error and str(database) in error, error
    assert first.poll() is None


def test_rebuild_is_refused_on_a_served_database_and_read_commands_are_not(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    first, address = servers.start(database)
    error = servers.refused("rebuild", "--db", str(database))
    assert f"pid {first.pid}" in error and address in error, error
    listed = subprocess.run(
        [*trainledger(), "runs", "list", "--json", "--db", str(database)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        cwd=tmp_path,
        env=environment(),
    )
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    assert first.poll() is None
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=WAIT_S) == 0
    done = subprocess.run(
        [*trainledger(), "rebuild", "--db", str(database)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        cwd=tmp_path,
        env=environment(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rebuilt every view from")


def test_after_kill_9_a_new_server_starts_on_the_same_file(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    first, _ = servers.start(database)
    first.kill()
    first.wait(timeout=WAIT_S)
    # Whatever the killed holder left next to the file does not block its successor.
    second, address = servers.start(database)
    error = servers.refused("serve", "--db", str(database), "--listen", "127.0.0.1:0")
    assert f"pid {second.pid}" in error and address in error, error


@pytest.mark.parametrize(
    "listen",
    [
        "localhost",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:65536",
        "127.0.0.1:-1",
        "::1:0",
        "[::1]",
        "localhost:http",
        ":50051",
    ],
)
def test_a_listen_address_that_is_not_host_and_port_exits_2(tmp_path: Path, servers: Servers, listen: str) -> None:
    database = tmp_path / "ledger.db"
    error = servers.refused("serve", "--db", str(database), "--listen", listen)
    assert error.startswith(f"trainledger: cannot listen on {listen}: ") and "HOST:PORT" in error, error
    assert not database.exists()


def test_an_address_this_machine_does_not_have_says_why(tmp_path: Path, servers: Servers) -> None:
    database = tmp_path / "ledger.db"
    error = servers.refused("serve", "--db", str(database), "--listen", "192.0.2.1:0")  # TEST-NET-1
    assert error.startswith("trainledger: cannot listen on 192.0.2.1:0: "), error
    assert "not available" in error, error
    assert not database.exists()
