"""The rest of the client's surface against a real server: values in, typed results out."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from clients import LedgerClient
from clients.models import ChainHead, WatchUpdate
from tests.client.conftest import new_run


def test_run_state_decodes_to_plain_values(client: LedgerClient) -> None:
    opened = client.open_run(run_key="shape", name="shape", spec={"lr": 0.5, "tags": ["a"]}, cap_usd_micro=1_000)
    assert opened.created is True
    again = client.open_run(run_key="shape", name="shape", spec={"lr": 0.5, "tags": ["a"]}, cap_usd_micro=1_000)
    assert (again.created, again.position) == (False, opened.position)
    run_id = opened.state.run.run_id
    expires = datetime.now(UTC) + timedelta(hours=1)
    attempt = client.start_attempt(run_id=run_id, label="host").attempt
    client.append_steps(
        run_id=run_id, attempt=attempt, steps=[1, 2], tokens=[10, 20], usd_micro=[5, 5], metrics={"loss": [1.0, 0.5]}
    )
    saved = client.save_checkpoint(
        run_id=run_id, attempt=attempt, step=2, uri="tinker://run/weights/2", backend="tinker", expires_at=expires
    )
    state = client.get_run_state(run_id=run_id, min_position=saved.position)
    assert state.run.status == "running" and state.run.spec == {"lr": 0.5, "tags": ["a"]}
    assert isinstance(state.run.opened_at, datetime) and state.run.finished_at is None
    assert state.attempts[0].label == "host" and state.attempts[0].resumed_from_step is None
    assert state.checkpoint.expires_at == expires
    assert state.resume.from_step == 2 and state.last_step == 2
    assert state.spend.cap_usd_micro == 1_000 and state.spend.remaining_usd_micro == 1_000
    client.finish_run(run_id=run_id, attempt=attempt, status="stopped", summary={"loss": 0.5})
    noted = client.note_summary(run_id=run_id, summary={"eval": 0.9})
    state = client.get_run_state(run_id=run_id, min_position=noted.position)
    assert state.run.status == "stopped" and state.run.summary == {"loss": 0.5, "eval": 0.9}
    runs = client.list_runs(status="stopped", min_position=noted.position).runs
    assert [r.run_id for r in runs] == [run_id]


def test_watch_run_tails_new_batches(client: LedgerClient) -> None:
    run_id, attempt = new_run(client)
    seen: list[WatchUpdate] = []
    ready = threading.Event()

    def watch() -> None:
        stream = client.watch_run(run_id=run_id, timeout_s=10)
        for event in stream:
            seen.append(event)
            ready.set()
            if event.steps is not None:
                stream.close()
                return

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert ready.wait(10)  # the current state comes first
    client.append_steps(run_id=run_id, attempt=attempt, steps=[7, 8], metrics={"loss": [1.0, 2.0]})
    watcher.join(10)
    assert seen[0].event_type == "state" and seen[-1].steps.steps == [7, 8]


def test_watch_run_folds_each_change_into_the_whole_state(client: LedgerClient) -> None:
    run_id, attempt = new_run(client)
    stream = client.watch_run(run_id=run_id, timeout_s=10)
    first = next(stream)
    assert first.event_type == "state" and first.state.run.run_id == run_id
    assert first.state.current_attempt == attempt and first.state.last_step is None
    client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [1.0, 0.5]})
    client.save_checkpoint(run_id=run_id, attempt=attempt, step=2, backend="hf", uri="file:///ckpt/2")
    seen = []
    for event in stream:
        seen.append(event)
        if event.event_type.endswith("CheckpointSaved"):
            break
    stream.close()
    last = seen[-1].state
    # Fields the later messages did not carry are still there, the changed ones are new.
    assert last.run.run_id == run_id and last.current_attempt == attempt
    assert last.last_step == 2 and last.checkpoint.step == 2


def test_spend_and_registry_round_trips(client: LedgerClient) -> None:
    client.open_account(account="team", cap_usd_micro=5_000)
    client.open_account(account="project", parent="team")
    charged = client.charge(account="project", amount_usd_micro=1_000, reason="bill reconciliation")
    assert charged.charge_id and charged.account.committed_usd_micro == 1_000
    capped = client.set_cap(account="team", cap_usd_micro=8_000)
    assert capped.account.cap_usd_micro == 8_000
    account = client.get_account(account="team", min_position=capped.position)
    assert (account.committed_usd_micro, account.remaining_usd_micro) == (1_000, 7_000)
    one = client.register(family="f", artifact_uri="s3://m/1", digest="a" * 64, metadata={"base": "llama"})
    two = client.register(family="f", artifact_uri="s3://m/2", digest="b" * 64)
    client.promote(family="f", version=one.version, expected_current=0, verdict={"passed": True, "reason": "checked"})
    client.promote(
        family="f", version=two.version, expected_current=one.version, verdict={"passed": True, "reason": "checked"}
    )
    back = client.rollback(family="f", version=one.version, expected_current=two.version, reason="regressed")
    assert (back.current, back.previous) == (one.version, two.version)
    listed = client.list_versions(family="f", min_position=back.position)
    assert [h.kind for h in listed.history] == ["promote", "promote", "rollback"]
    assert listed.history[-1].principal == "tests"


def test_a_client_reads_its_own_writes_without_naming_a_position(client: LedgerClient) -> None:
    """Reads that name no min_position ask for the highest position this client was answered with,
    so a read right after a write always reflects it (the views are projected asynchronously)."""
    run_id, _ = new_run(client)
    for index in range(20):
        reserved = client.reserve(account=run_id, reservation_id=f"own-{index}", amount_usd_micro=10)
        assert client.seen_position == reserved.position
        assert client.get_account(account=run_id).pending_usd_micro == 10 * (index + 1)
        listed = client.list_reservations(account=run_id).reservations
        assert [r.reservation_id for r in listed][-1] == f"own-{index}"


def test_the_head_of_the_chain_and_a_verification_from_the_client(client: LedgerClient) -> None:
    run_id, attempt = new_run(client)
    client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [0.5, 0.25]})
    head = client.get_head()
    events = list(client.read_events())
    assert (head.position, head.digest) == (events[-1].position, events[-1].digest)
    assert len(head.digest) == 64 and head.digest != "0" * 64

    verified = client.verify(expect_head=head)
    assert (verified.ok, verified.checked, verified.broken_at, verified.problem) == (True, head.position, None, "")
    assert verified.head == head

    wrong = client.verify(expect_head=ChainHead(position=head.position, digest="0" * 64), skip_views=True)
    assert (wrong.ok, wrong.broken_at, wrong.problem) == (False, head.position, "HEAD_DIFFERS")

    progress = list(client.verify_progress(expect_head=head, skip_views=True, timeout_s=60))
    assert progress[-1].outcome is not None and progress[-1].outcome.ok
    assert progress[-1].outcome.head == head and progress[-1].outcome.checked == head.position
    assert progress[0].stage == "chain" and all(p.outcome is None for p in progress[:-1])
