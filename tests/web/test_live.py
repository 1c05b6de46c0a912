"""Server-sent events over real HTTP: a run's stream delivers what is recorded after connecting
(steps, checkpoints, spend, state), resumes from Last-Event-ID, is read once for all of its
followers, is bounded per caller, drops a follower that falls behind, and ends when the server
shuts down; the runs page's stream sends the summary of a run that changed."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from clients import LedgerClient
from services.web.live import Follower
from tests.web.conftest import WebServer, fresh_key

Event = tuple[str, str, Any]  # (type, id, data); ("comment", "", text) for a comment line


def events(response: httpx.Response) -> Iterator[Event]:
    """The events of an SSE response as they arrive."""
    kind, ident, data = "message", "", []
    for line in response.iter_lines():
        if line.startswith(":"):
            yield "comment", "", line[1:].strip()
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("id:"):
            ident = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            yield kind, ident, json.loads("\n".join(data))
            kind, ident, data = "message", "", []


def next_event(stream: Iterator[Event], kind: str) -> Event:
    """The next event of `kind`, skipping comments and other kinds."""
    for event in stream:
        if event[0] == kind:
            return event
    raise AssertionError(f"the stream ended before a {kind} event")


def new_run(client: LedgerClient, name: str, cap_usd_micro: int | None = 5_000_000) -> tuple[str, int]:
    run_id = client.open_run(run_key=fresh_key(), name=name, cap_usd_micro=cap_usd_micro).state.run.run_id
    return run_id, client.start_attempt(run_id=run_id).attempt


@pytest.fixture
def sse(served: WebServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=httpx.Timeout(10.0)) as client:
        yield client


def test_a_run_stream_delivers_what_is_recorded_after_connecting(sse: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id, attempt = new_run(grpc_client, "live-one")
    with sse.stream("GET", f"/api/runs/{run_id}/live") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = events(response)
        kind, ident, state = next(stream)
        assert kind == "state"
        assert (state["run"]["run_id"], state["run"]["name"], state["last_step"]) == (run_id, "live-one", None)
        assert int(ident) == state["position"]

        receipt = grpc_client.append_steps(
            run_id=run_id,
            attempt=attempt,
            steps=[0, 1, 2],
            metrics={"loss": [1.0, 0.5, 0.25], "eval_loss": {"values": [9.0], "index": [2]}},
        )
        kind, ident, steps = next_event(stream, "steps")
        assert steps == {
            "attempt": 1,
            "steps": [0, 1, 2],
            "metrics": {"eval_loss": [None, None, 9.0], "loss": [1.0, 0.5, 0.25]},
        }
        assert int(ident) == receipt.position

        grpc_client.save_checkpoint(run_id=run_id, attempt=attempt, step=2, uri="s3://live/2", backend="s3")
        _, _, checkpoint = next_event(stream, "checkpoint")
        assert (checkpoint["attempt"], checkpoint["step"]) == (1, 2)
        assert checkpoint["handle"] == {"backend": "s3", "uri": "s3://live/2", "fidelity": "weights"}
        _, _, changed = next_event(stream, "state")
        assert changed["checkpoint"]["step"] == 2
        assert changed["last_step"] == 2
        assert "spec" not in changed["run"]

        grpc_client.reserve(account=run_id, amount_usd_micro=300_000, attempt=attempt)
        _, _, spend = next_event(stream, "spend")
        assert {k: spend[k] for k in ("cap_usd_micro", "committed_usd_micro", "pending_usd_micro")} == {
            "cap_usd_micro": 5_000_000,
            "committed_usd_micro": 0,
            "pending_usd_micro": 300_000,
        }

        grpc_client.finish_run(run_id=run_id, attempt=attempt, status="done")
        _, _, finished = next_event(stream, "state")
        assert finished["run"]["status"] == "done"


def test_last_event_id_resumes_with_the_steps_missed(sse: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id, attempt = new_run(grpc_client, "live-resume")
    seen = grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[0], metrics={"loss": [3.0]})
    missed = grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [2.0, 1.0]})
    with sse.stream("GET", f"/api/runs/{run_id}/live", headers={"last-event-id": str(seen.position)}) as response:
        stream = events(response)
        kind, _, state = next(stream)
        assert (kind, state["last_step"]) == ("state", 2)
        kind, ident, steps = next(stream)
        assert (kind, int(ident)) == ("steps", missed.position)
        assert steps == {"attempt": 1, "steps": [1, 2], "metrics": {"loss": [2.0, 1.0]}}


def test_a_run_is_read_once_for_all_of_its_followers(
    served: WebServer, sse: httpx.Client, grpc_client: LedgerClient
) -> None:
    run_id, attempt = new_run(grpc_client, "live-many")
    streams = served.server.dashboard.config.app.state.web.streams
    with (
        sse.stream("GET", f"/api/runs/{run_id}/live") as first,
        sse.stream("GET", f"/api/runs/{run_id}/live") as second,
        sse.stream("GET", f"/api/runs/{run_id}/live") as third,
    ):
        followers = [events(response) for response in (first, second, third)]
        for follower in followers:
            assert next(follower)[0] == "state"
        before = streams.reads_of(run_id)
        grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[0], metrics={"loss": [1.0]})
        for follower in followers:
            assert next_event(follower, "steps")[2]["steps"] == [0]
        assert streams.reads_of(run_id) - before <= 2  # One read found the batch (a wake may find nothing).


def test_followers_are_bounded_per_caller(served: WebServer, sse: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id, _ = new_run(grpc_client, "live-bounded")
    bounds = served.server.dashboard.config.app.state.web.streams.bounds
    bounds.per_caller_max = 1
    try:
        with sse.stream("GET", f"/api/runs/{run_id}/live") as response:
            stream = events(response)  # Kept: a generator dropped closes the response.
            assert next(stream)[0] == "state"
            refused = sse.get(f"/api/runs/{run_id}/live")
            assert refused.status_code == 429
            assert refused.json()["error"]["reason"] == "TOO_MANY_WATCHERS"
            assert refused.json()["error"]["scope"] == "caller"
    finally:
        bounds.per_caller_max = 128


def test_a_follower_that_falls_behind_is_sent_an_error_and_dropped() -> None:
    async def scenario() -> list[bytes | None]:
        follower = Follower("someone@host", messages_max=2, bytes_max=1_000_000)
        for position in (7, 8, 9):
            follower.push(b"event: steps\ndata: {}\n\n", position)
        return [await follower.next(1.0), await follower.next(1.0)]

    error, end = asyncio.run(scenario())
    assert end is None
    assert error is not None and error.startswith(b"event: error\n")
    document = json.loads(error.split(b"data: ", 1)[1])
    assert (document["reason"], document["next_position"]) == ("WATCHER_TOO_SLOW", 7)


def test_the_runs_page_stream_sends_a_run_that_changed(sse: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id, attempt = new_run(grpc_client, "live-list")
    with sse.stream("GET", "/api/live") as response:
        assert response.status_code == 200
        stream = events(response)
        assert next(stream) == ("comment", "", "live")
        grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[0, 1, 2, 3], metrics={"loss": [1.0] * 4})
        for kind, _, run in stream:
            if kind == "run" and run["run_id"] == run_id and run["last_step"] == 3:
                break
        assert (run["name"], run["status"], run["current_attempt"], run["cap_usd_micro"]) == (
            "live-list",
            "running",
            1,
            5_000_000,
        )
        hold = grpc_client.reserve(account=run_id, amount_usd_micro=100_000, attempt=attempt)
        grpc_client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=40_000)
        for kind, _, run in stream:
            if kind == "run" and run["run_id"] == run_id and run["committed_usd_micro"] == 40_000:
                break
        assert run["pending_usd_micro"] == 0


def test_streams_end_when_the_server_shuts_down(tmp_path) -> None:
    server = WebServer(str(tmp_path / "ledger.db")).start()
    stopping: threading.Thread | None = None
    try:
        with LedgerClient(server.address, principal="tests", timeout_s=10.0) as client:
            run_id, _ = new_run(client, "live-shutdown")
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            with (
                http.stream("GET", f"/api/runs/{run_id}/live") as run_stream,
                http.stream("GET", "/api/live") as runs_stream,
            ):
                stream, runs = events(run_stream), events(runs_stream)
                assert next(stream)[0] == "state"
                assert next(runs)[0] == "comment"
                stopping = threading.Thread(target=server.stop, kwargs={"grace_s": 5})
                stopping.start()
                assert [e for e in stream if e[0] != "comment"] == []  # Ends, without an error.
                assert [e for e in runs if e[0] != "comment"] == []
    finally:
        if stopping is None:
            server.stop()
        else:
            stopping.join(30)


def test_the_runs_page_stream_reads_once_for_all_followers(
    served: WebServer, sse: httpx.Client, grpc_client: LedgerClient
) -> None:
    run_id, attempt = new_run(grpc_client, "live-list-many")
    live = served.server.dashboard.config.app.state.web.live
    with (
        sse.stream("GET", "/api/live") as first,
        sse.stream("GET", "/api/live") as second,
        sse.stream("GET", "/api/live") as third,
    ):
        followers = [events(response) for response in (first, second, third)]
        for follower in followers:
            assert next(follower) == ("comment", "", "live")
        before = live.reads
        grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[7], metrics={"loss": [1.0]})
        for follower in followers:
            for kind, _, run in follower:
                if kind == "run" and run["run_id"] == run_id:
                    break
            assert run["last_step"] == 7
        assert live.reads - before <= 2  # One read for the three (a chunk may wake it twice).


def test_a_run_stream_tells_of_a_run_started_from_its_checkpoint(sse: httpx.Client, grpc_client: LedgerClient) -> None:
    """The run page's Children panel follows the run's stream: a child opened from one of its
    checkpoints must reach the source run's followers as a state with the new child."""
    run_id, attempt = new_run(grpc_client, "live-source")
    grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[0], metrics={"loss": [1.0]})
    grpc_client.save_checkpoint(run_id=run_id, attempt=attempt, step=0, uri="s3://live-source/0", backend="s3")
    with sse.stream("GET", f"/api/runs/{run_id}/live") as response:
        stream = events(response)
        _, _, first = next_event(stream, "state")
        assert first["child_count"] == 0
        grpc_client.open_run(run_key=fresh_key(), name="live-child", source_checkpoint={"run_id": run_id, "step": 0})
        # A step of the source afterwards: the child must have been told of by then.
        grpc_client.append_steps(run_id=run_id, attempt=attempt, steps=[1], metrics={"loss": [0.5]})
        told: list[Any] = []
        for event in stream:
            if event[0] == "state":
                told.append(event[2])
            if event[0] == "steps":
                break
        assert any(state.get("child_count") == 1 for state in told), told
