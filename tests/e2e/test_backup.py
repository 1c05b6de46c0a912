"""`trainledger backup` copies a served SQLite ledger while writes go on: a server process takes step
batches and reserve/commit pairs from a writer thread, the backup runs beside it as its own process
(it takes no holder lock), the writes carry on, and the copy, served by a second server on another
port, gives every event up to its position, exactly as the original has them, with views that
agree with those events."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import grpc
import pytest

from ledger import Ledger
from tests.e2e.test_serve_guards import WAIT_S, Servers, environment, trainledger
from tests.service.support import Stubs, batch
from trainledger.v1 import events_pb2, runs_pb2, spend_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.subprocess]

BATCH_STEPS = 200


class Writer(threading.Thread):
    """Step batches and reserve/commit pairs on one run until stopped; `acks` holds (position,
    event type) of every acknowledged write."""

    def __init__(self, address: str) -> None:
        super().__init__(name="backup-writer", daemon=True)
        self.channel = grpc.insecure_channel(address)
        self.stubs = Stubs(self.channel)
        opened = self.stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key="backup", cap_usd_micro=10**12), timeout=10)
        self.run_id = opened.state.run.run_id
        self.stubs.runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=self.run_id, attempt_id="a1"), timeout=10)
        self.acks: list[tuple[int, str]] = []
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            number = 0
            while not self.stopping.is_set():
                steps = range(number * BATCH_STEPS, (number + 1) * BATCH_STEPS)
                answer = self.stubs.runs.AppendSteps(
                    runs_pb2.AppendStepsRequest(batch=batch(self.run_id, steps)), timeout=10
                )
                self.acks.append((answer.position, "StepsRecorded"))
                hold = f"hold-{number}"
                answer = self.stubs.spend.Reserve(
                    spend_pb2.ReserveRequest(account=self.run_id, reservation_id=hold, amount_usd_micro=1_000),
                    timeout=10,
                )
                self.acks.append((answer.position, "SpendReserved"))
                if number % 2:  # Every other hold stays pending.
                    answer = self.stubs.spend.Commit(
                        spend_pb2.CommitRequest(account=self.run_id, reservation_id=hold, actual_usd_micro=900),
                        timeout=10,
                    )
                    self.acks.append((answer.position, "SpendCommitted"))
                number += 1
        except BaseException as error:  # Reported by the test.
            self.failure = error

    def wait_for(self, count: int) -> None:
        while len(self.acks) < count and self.failure is None and self.is_alive():
            self.stopping.wait(0.01)
        assert self.failure is None, self.failure

    def stop(self) -> None:
        self.stopping.set()
        self.join(WAIT_S)
        self.channel.close()
        assert self.failure is None, self.failure


def events(stubs: Stubs) -> list[events_pb2.Event]:
    return list(stubs.events.ReadEvents(events_pb2.ReadEventsRequest(from_position=1), timeout=30))


def run_backup(database: Path, copy: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*trainledger(), "backup", "--db", str(database), "--to", str(copy)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        cwd=cwd,
        env=environment(),
    )


def test_a_backup_taken_under_writes_serves_every_event_up_to_its_position(tmp_path: Path, servers: Servers) -> None:
    database, copy = tmp_path / "ledger.db", tmp_path / "copy.db"
    server, address = servers.start(database)
    writer = Writer(address)
    writer.start()
    try:
        writer.wait_for(100)
        done = run_backup(database, copy, tmp_path)
        assert done.returncode == 0, done.stderr
        acked_at_backup = len(writer.acks)
        writer.wait_for(acked_at_backup + 100)  # The server kept taking writes.
    finally:
        writer.stop()
    assert done.stdout.startswith(f"backed up {database} to {copy}: the log up to position "), done.stdout
    position = int(done.stdout.split("position ")[1].split()[0])
    assert server.poll() is None

    with grpc.insecure_channel(address) as channel:
        original = events(Stubs(channel))
    assert original[-1].position > position, "no write landed after the backup"
    _, copy_address = servers.start(copy)
    with grpc.insecure_channel(copy_address) as channel:
        stubs = Stubs(channel)
        copied = events(stubs)
        # Every event up to the copy's position, byte for byte as the original has it, and no other.
        assert [e.SerializeToString() for e in copied] == [
            e.SerializeToString() for e in original if e.position <= position
        ]
        assert copied[-1].position == position
        assert any(ack <= position for ack, _ in writer.acks) and any(ack > position for ack, _ in writer.acks)
        by_position = {e.position: e.type for e in copied}
        for ack, kind in writer.acks:
            if ack <= position:
                assert by_position.get(ack, "").endswith(kind), (ack, kind, by_position.get(ack))

        # The copy's views agree with its events.
        recorded = [json.loads(e.data_json) for e in copied if e.type.endswith("StepsRecorded")]
        steps: list[int] = []
        page = runs_pb2.GetSeriesResponse(next_from_step=0)
        while page.HasField("next_from_step"):
            page = stubs.runs.GetSeries(
                runs_pb2.GetSeriesRequest(
                    run_id=writer.run_id, from_step=page.next_from_step, page_size=10_000, min_position=position
                ),
                timeout=30,
            )
            steps += page.steps
        assert steps == [step for data in recorded for step in data["steps"]]
        reserved = sum(e.type.endswith("SpendReserved") for e in copied)
        committed = sum(e.type.endswith("SpendCommitted") for e in copied)
        account = stubs.spend.GetAccount(
            spend_pb2.GetAccountRequest(account=writer.run_id, min_position=position), timeout=30
        ).account
        assert (account.committed_usd_micro, account.pending_usd_micro) == (
            900 * committed,
            1_000 * (reserved - committed),
        )
        state = stubs.runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=writer.run_id), timeout=30).state
        assert (state.last_step, state.position) == (steps[-1], position)


def test_backup_never_overwrites_and_sends_postgresql_to_pg_dump(tmp_path: Path, servers: Servers) -> None:
    database, copy = tmp_path / "ledger.db", tmp_path / "copy.db"
    Ledger.open(str(database)).close()
    copy.write_text("an earlier backup")
    line = servers.refused("backup", "--db", str(database), "--to", str(copy))
    assert line == f"trainledger: {copy} already exists: back up to a new file", line
    assert copy.read_text() == "an earlier backup"
    line = servers.refused(
        "backup", "--database-url", "postgresql://ledger@127.0.0.1/ledger", "--to", str(tmp_path / "other.db")
    )
    assert "pg_dump" in line, line
    assert sorted(path.name for path in tmp_path.glob("*copy*")) == ["copy.db"], "a partial file was left behind"
