"""Storage faults under `trainledger serve` as a real process: a disk that fills up, and a database
file that is damaged before the server starts.

A full disk: writes answer UNAVAILABLE with reason STORAGE_FULL (never INTERNAL or UNKNOWN), the
server stays up, nothing it acknowledged is lost (not even across a kill -9), and writes succeed
again once space returns. The small disk is a tmpfs the test mounts, so it needs root.

A damaged file (garbage over its header, cut to half its length, garbage over pages in the middle):
`serve` exits 2 with one line and leaves the file exactly as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from tests.e2e.test_serve_guards import Servers
from tests.service.support import Stubs, batch, error_info
from trainledger.v1 import events_pb2, runs_pb2, spend_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]

DISK_SIZE = "8m"
FILLER_BYTES = 5 * 1024 * 1024
BATCH_STEPS = 1_000
CALLS_MAX = 2_000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A fresh 8 MiB tmpfs, unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    directory = tmp_path / "small-disk"
    directory.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(directory)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


class Writer:
    """Writes step batches and reserve/commit pairs, remembering every acknowledged write."""

    def __init__(self, stubs: Stubs) -> None:
        self.stubs = stubs
        opened = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key="disk-full", cap_usd_micro=10**12), timeout=10)
        self.run_id = opened.state.run.run_id
        stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=self.run_id, attempt_id="a1"), timeout=10)
        self.next_step = 0
        self.acked_batches: dict[int, range] = {}  # position -> steps
        self.acked_holds: dict[str, int] = {}  # reservation id -> position of its commit
        self.refusals: list[grpc.RpcError] = []
        self.reserved = ""  # A hold reserved whose commit has not been acknowledged yet.

    def append(self) -> bool:
        steps = range(self.next_step, self.next_step + BATCH_STEPS)
        try:
            answer = self.stubs.runs.AppendSteps(
                runs_pb2.AppendStepsRequest(batch=batch(self.run_id, steps)), timeout=10
            )
        except grpc.RpcError as error:
            self.refusals.append(error)
            return False
        self.acked_batches[answer.position] = steps
        self.next_step = steps.stop
        return True

    def hold(self, number: int) -> bool:
        """Reserve and commit a new hold, or commit the hold whose commit was refused before."""
        if not self.reserved:
            reservation_id = f"hold-{number}"
            try:
                self.stubs.spend.Reserve(
                    spend_pb2.ReserveRequest(
                        account=self.run_id, reservation_id=reservation_id, amount_usd_micro=1_000
                    ),
                    timeout=10,
                )
            except grpc.RpcError as error:
                self.refusals.append(error)
                return False
            self.reserved = reservation_id
        try:
            committed = self.stubs.spend.Commit(
                spend_pb2.CommitRequest(account=self.run_id, reservation_id=self.reserved, actual_usd_micro=900),
                timeout=10,
            )
        except grpc.RpcError as error:
            self.refusals.append(error)
            return False
        self.acked_holds[self.reserved], self.reserved = committed.position, ""
        return True


def assert_clear_storage_full(error: grpc.RpcError) -> None:
    assert error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED), (
        error.code(),
        error.details(),
    )
    info = error_info(error)
    assert (info.domain, info.reason) == ("trainledger", "STORAGE_FULL"), (info, error.details())


def assert_acked_present_once(stubs: Stubs, writer: Writer) -> None:
    events = list(stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=1), timeout=30))
    batches = {e.position: e for e in events if e.type.endswith("StepsRecorded") and e.originator_id == writer.run_id}
    assert set(writer.acked_batches) == set(batches), "an acknowledged batch is missing, or one was recorded twice"
    committed = [e for e in events if e.type.endswith("SpendCommitted")]
    assert {e.position for e in committed} == set(writer.acked_holds.values())
    head = max(e.position for e in events)
    steps: list[int] = []
    page = runs_pb2.GetSeriesResponse(next_from_step=0)
    while page.HasField("next_from_step"):
        page = stubs.runs.GetSeries(
            runs_pb2.GetSeriesRequest(
                run_id=writer.run_id, from_step=page.next_from_step, page_size=10_000, min_position=head
            ),
            timeout=30,
        )
        steps += page.steps
    assert steps == [step for steps in writer.acked_batches.values() for step in steps]
    account = stubs.spend.GetAccount(
        spend_pb2.GetAccountRequest(account=writer.run_id, min_position=head), timeout=30
    ).account
    assert account.committed_usd_micro == 900 * len(writer.acked_holds)
    assert account.pending_usd_micro == 0


def serving(channel: grpc.Channel) -> bool:
    answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    return answer.status == health_pb2.HealthCheckResponse.SERVING


def test_a_full_disk_answers_storage_full_loses_nothing_and_recovers(small_disk: Path, servers: Servers) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * FILLER_BYTES)
    database = small_disk / "ledger.db"
    server, address = servers.start(database)
    with grpc.insecure_channel(address) as channel:
        stubs = Stubs(channel)
        writer = Writer(stubs)
        for number in range(CALLS_MAX):
            if not (writer.append() and writer.hold(number)) and len(writer.refusals) >= 5:
                break
        assert len(writer.refusals) >= 5, f"the disk never filled up ({len(writer.acked_batches)} batches acked)"
        assert writer.acked_batches and writer.acked_holds
        for refusal in writer.refusals:
            assert_clear_storage_full(refusal)
        assert server.poll() is None, "the server died on a full disk"

        filler.unlink()  # Space returns: the very next writes succeed.
        refused = len(writer.refusals)
        assert writer.append() and writer.hold(CALLS_MAX), [r.details() for r in writer.refusals[refused:]]
        assert_acked_present_once(stubs, writer)
        assert serving(channel)

    server.kill()  # Nothing acknowledged is lost across a crash either.
    server.wait()
    _, address = servers.start(database)
    with grpc.insecure_channel(address) as channel:
        assert_acked_present_once(Stubs(channel), writer)


# Damaged files: each case damages a copy of one valid ledger file.


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def ledger_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid ledger of about 1 MB (a run with 50 batches), closed cleanly."""
    path = tmp_path_factory.mktemp("valid") / "ledger.db"
    ledger = Ledger.open(str(path))
    try:
        run = ledger.open_run(run_key="damaged", name="damaged")
        ledger.start_attempt(run_id=run.run_id, attempt_id="a1")
        for first in range(0, 50 * BATCH_STEPS, BATCH_STEPS):
            ledger.append_steps(
                run_id=run.run_id,
                attempt=1,
                steps=list(range(first, first + BATCH_STEPS)),
                metrics={"loss": [0.5] * BATCH_STEPS},
            )
    finally:
        ledger.close()
    return path


def garbage_over_header(path: Path) -> None:
    with open(path, "r+b") as file:
        file.write(bytes(range(7, 107)))


def truncated_to_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garbage_in_the_middle(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.seek(size // 2 // 4096 * 4096)
        file.write(b"\xa5" * 8192)


@pytest.mark.parametrize("damage", [garbage_over_header, truncated_to_half, garbage_in_the_middle])
def test_serve_refuses_a_damaged_database_and_leaves_it_as_it_was(
    tmp_path: Path, servers: Servers, ledger_file: Path, damage
) -> None:
    database = tmp_path / "damaged.db"
    database.write_bytes(ledger_file.read_bytes())
    damage(database)
    before = digest(database), database.stat().st_size
    line = servers.refused("serve", "--db", str(database), "--listen", "127.0.0.1:0")
    prefix = f"trainledger: cannot open database {database}: "
    assert line.startswith(prefix), line
    assert "damaged" in line.removeprefix(prefix), line
    assert (digest(database), database.stat().st_size) == before, "the refused server changed the file"
    assert not Path(f"{database}.lock").exists()


def test_serve_starts_on_an_undamaged_copy(tmp_path: Path, servers: Servers, ledger_file: Path) -> None:
    database = tmp_path / "valid.db"
    database.write_bytes(ledger_file.read_bytes())
    _, address = servers.start(database)
    with grpc.insecure_channel(address) as channel:
        assert serving(channel)
