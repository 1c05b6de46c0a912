"""A ledger written when the aggregates lived in ledger.runs, ledger.accounts and ledger.registry
stays readable: its stored topics (of events, of created events' originator_topic and of
snapshots) resolve to the classes where they live now, a filter by type finds its events, and
new writes carry on from where it stopped."""

from __future__ import annotations

import sqlite3
from typing import Any

from ledger import Ledger
from ledger.storage.transcoder import MsgspecTranscoder

DIGEST = "sha256:" + "d" * 64


def _legacy(value: Any) -> Any:
    """`value` with every topic of ledger.domain.X written as the old ledger.X."""
    if isinstance(value, str) and value.startswith("ledger.domain."):
        return "ledger." + value.removeprefix("ledger.domain.")
    if isinstance(value, dict):
        return {key: _legacy(item) for key, item in value.items()}
    return value


def _rewrite_as_legacy(path: str) -> int:
    transcoder = MsgspecTranscoder()
    connection = sqlite3.connect(path)
    rewritten = 0
    with connection:
        for table in ("stored_events", "stored_snapshots"):
            rows = connection.execute(f"SELECT originator_id, originator_version, topic, state FROM {table}")
            for originator_id, version, topic, state in rows.fetchall():
                connection.execute(
                    f"UPDATE {table} SET topic = ?, state = ? WHERE originator_id = ? AND originator_version = ?",
                    (_legacy(topic), transcoder.encode(_legacy(transcoder.decode(state))), originator_id, version),
                )
                rewritten += 1
    topics = {row[0] for row in connection.execute("SELECT topic FROM stored_events")}
    connection.close()
    assert topics and all(
        topic.startswith(("ledger.runs:", "ledger.accounts:", "ledger.registry:")) for topic in topics
    ), topics
    return rewritten


def test_a_ledger_stored_under_the_old_topics_reads_and_writes_on(sqlite_database: str) -> None:
    ledger = Ledger.open(sqlite_database)
    run = ledger.open_run(run_key="legacy", cap_usd_micro=10**9)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a")
    for step in range(1, 202):  # a snapshot of the run at version 200
        ledger.append_steps(run_id=run.run_id, attempt=1, steps=[step], metrics={"loss": [1.0 / step]})
    ledger.reserve(account=run.run_id, reservation_id="r1", amount_usd_micro=500)
    ledger.commit(account=run.run_id, reservation_id="r1", actual_usd_micro=400)
    ledger.register(family="fam", artifact_uri="file:///m", digest=DIGEST, source_run_id=run.run_id)
    ledger.close()
    assert _rewrite_as_legacy(sqlite_database) > 200

    reopened = Ledger.open(sqlite_database)
    try:
        reopened.projector.rebuild()
        state = reopened.run_state(run.run_id)
        assert state.last_step == 201 and state.spend.committed_usd_micro == 400
        assert [e["type"] for e in reopened.read_events(types=["Account.SpendCommitted"])] == ["Account.SpendCommitted"]
        assert len(reopened.read_events(types=["StepsRecorded"], limit=1000)) == 201
        retry = reopened.append_steps(run_id=run.run_id, attempt=1, steps=[201], metrics={"loss": [1.0 / 201]})
        assert retry.duplicate
        reopened.append_steps(run_id=run.run_id, attempt=1, steps=[202], metrics={"loss": [0.1]})
        reopened.commit(account=run.run_id, reservation_id="r1", actual_usd_micro=400)  # a retry: no-op
        assert reopened.account_now(run.run_id).committed_usd_micro == 400
        assert reopened.family("fam").versions[0].version == 1
        assert len(reopened.read_events(types=["StepsRecorded"], limit=1000)) == 202
    finally:
        reopened.close()
