"""The real tinker SDK runs a whole training flow against the loopback FakeTinkerServer."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest

tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402

from tests.fakes.tinker import FakeTinkerServer, usage_event  # noqa: E402


@pytest.fixture
def server():
    srv = FakeTinkerServer().start()
    try:
        yield srv
    finally:
        srv.stop()
    assert not srv.errors, srv.errors


@pytest.fixture
def service(server):
    client = tinker.ServiceClient(
        base_url=server.base_url, api_key=FakeTinkerServer.API_KEY, user_metadata={"ledger_run_id": "run-42"}
    )
    yield client
    client.close("success").result(timeout=30)  # no-op if the test already closed it


def _datum(tokens: list[int]) -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


def _post(server: FakeTinkerServer, endpoint: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"{server.base_url}/api/v1/{endpoint}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "X-API-Key": FakeTinkerServer.API_KEY},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_full_flow_with_real_sdk(server, service):
    started = time.monotonic()
    tc = service.create_lora_training_client(base_model=FakeTinkerServer.BASE_MODEL, rank=8).result(timeout=30)
    batch = [_datum([1, 2, 3, 4, 5]), _datum([6, 7, 8])]  # 4 + 2 input tokens, 6 targets
    losses = []
    for _ in range(3):
        fwd = tc.forward_backward(batch, "cross_entropy")
        opt = tc.optim_step(types.AdamParams(learning_rate=1e-4))
        out = fwd.result(timeout=30)
        opt.result(timeout=30)
        losses.append(out.metrics["loss:sum"])
        assert [len(o["logprobs"].tolist()) for o in out.loss_fn_outputs] == [4, 2]
    assert losses == sorted(losses, reverse=True) and len(set(losses)) == 3

    saved = tc.save_state("step-3").result(timeout=30)
    run_id = tc.get_info().model_id
    assert saved.path == f"tinker://{run_id}/weights/step-3"
    parsed = types.ParsedCheckpointTinkerPath.from_tinker_path(saved.path)
    assert (parsed.training_run_id, parsed.checkpoint_type, parsed.checkpoint_id) == (
        run_id,
        "training",
        "weights/step-3",
    )
    sampler = tc.save_weights_for_sampler("step-3").result(timeout=30)
    assert sampler.path == f"tinker://{run_id}/sampler_weights/step-3"

    # Resume in the same session with optimizer state: the loss continues where it stopped.
    resumed = service.create_training_client_from_state_with_optimizer(saved.path).result(timeout=30)
    new_id = resumed.get_info().model_id
    assert new_id != run_id
    model = server.models[new_id]
    assert (model.loaded_from, model.optimizer_loaded, model.step) == (saved.path, True, 3)
    fourth = resumed.forward_backward(batch, "cross_entropy").result(timeout=30).metrics["loss:sum"]
    assert fourth < losses[-1]

    # The checkpoint list and capabilities are served too (RestClient, GET).
    rest = tinker.RestClient(base_url=server.base_url, api_key=FakeTinkerServer.API_KEY)
    listed = rest.list_checkpoints(run_id).result(timeout=30)
    assert sorted(c.tinker_path for c in listed.checkpoints) == sorted([saved.path, sampler.path])
    caps = rest.get_server_capabilities().result(timeout=30)
    assert [m.model_name for m in caps.supported_models] == [FakeTinkerServer.BASE_MODEL]

    service.close("success", detail="done").result(timeout=30)

    # What the server saw.
    assert len(server.sessions) == 1
    session = server.sessions[0]
    assert session.user_metadata == {"ledger_run_id": "run-42"}
    assert session.finished == {"reason": {"type": "success"}, "detail": "done"}
    fwd_records = server.served("forward_backward")
    assert len(fwd_records) == 4
    assert all(r.session_id == session.session_id and r.status == 200 for r in fwd_records)
    assert [r.body["n_tokens"] for r in fwd_records] == [6, 6, 6, 6]
    assert [r.body["n_targets"] for r in fwd_records] == [6, 6, 6, 6]
    assert server.count("optim_step") == 3
    assert server.models[run_id].tokens_seen == 18
    assert server.count("save_weights") == 1 and server.count("save_weights_for_sampler") == 1
    assert server.count("load_weights") == 1
    assert server.count("retrieve_future") >= 9
    for endpoint in (
        "client/config",
        "client/dynamic_config",
        "create_session",
        "create_model",
        "get_info",
        "telemetry",
        "sessions/{id}/finish",
    ):
        assert server.count(endpoint) >= 1, endpoint
    # close() drains telemetry; SESSION_END is only sent after a fatal error.
    assert "SESSION_START" in {e["event"] for e in session.telemetry_events}
    assert all(r.api_key == FakeTinkerServer.API_KEY for r in server.requests)
    assert time.monotonic() - started < 15


def test_future_error_payload_raises_request_failed(server, service):
    tc = service.create_lora_training_client(base_model=FakeTinkerServer.BASE_MODEL, rank=4).result(timeout=30)
    server.fail_next("forward_backward", error="injected: bad datum", category="user")
    with pytest.raises(tinker.RequestFailedError, match="injected: bad datum"):
        tc.forward_backward([_datum([1, 2, 3])], "cross_entropy").result(timeout=30)
    # The model did not count the failed step; the client still works afterwards.
    assert server.models[tc.get_info().model_id].tokens_seen == 0
    out = tc.forward_backward([_datum([1, 2, 3])], "cross_entropy").result(timeout=30)
    assert out.metrics["loss:sum"] > 0
    assert [r.status for r in server.served("forward_backward")] == [200, 200]


def test_http_400_surfaces_at_once_and_500_is_retried(server, service):
    tc = service.create_lora_training_client(base_model=FakeTinkerServer.BASE_MODEL, rank=4).result(timeout=30)
    server.fail_next("forward_backward", status=400, body={"detail": "bad request"})
    with pytest.raises(tinker.BadRequestError):
        tc.forward_backward([_datum([1, 2, 3])], "cross_entropy").result(timeout=30)
    server.fail_next("optim_step", status=500)
    tc.forward_backward([_datum([1, 2, 3])], "cross_entropy").result(timeout=30)
    tc.optim_step(types.AdamParams()).result(timeout=30)  # the SDK retried the 500 by itself
    assert [(r.status, r.injected) for r in server.served("forward_backward")] == [(400, True), (200, False)]
    assert [(r.status, r.injected) for r in server.served("optim_step")] == [(500, True), (200, False)]
    assert server.models[tc.get_info().model_id].step == 1


def test_resume_from_unknown_or_duplicate_checkpoint_fails(server, service):
    tc = service.create_lora_training_client(base_model=FakeTinkerServer.BASE_MODEL, rank=4).result(timeout=30)
    tc.save_state("a").result(timeout=30)
    with pytest.raises(tinker.RequestFailedError, match="already exists"):
        tc.save_state("a").result(timeout=30)
    assert tc.save_state("a", overwrite=True).result(timeout=30).path.endswith("/weights/a")
    with pytest.raises(tinker.RequestFailedError, match="not found"):
        service.create_training_client_from_state("tinker://nope/weights/x").result(timeout=30)


def test_session_records_without_training(server):
    client = tinker.ServiceClient(
        base_url=server.base_url,
        api_key=FakeTinkerServer.API_KEY,
        user_metadata={"ledger_run_id": "r-7", "attempt": "2"},
    )
    client.create_lora_training_client(base_model=FakeTinkerServer.BASE_MODEL, rank=4).result(timeout=30)
    client.close("interrupted").result(timeout=30)
    assert server.count("forward_backward") == 0
    (session,) = server.sessions
    assert session.user_metadata == {"ledger_run_id": "r-7", "attempt": "2"}
    assert session.finished["reason"] == {"type": "interrupted"}
    create = server.served("create_session")[0]
    assert create.user_metadata == {"ledger_run_id": "r-7", "attempt": "2"}
    # Heartbeats (the SDK sends one every 10 s; exercised here over plain HTTP): a finished session gets 410.
    assert _post(server, "session_heartbeat", {"session_id": session.session_id})[0] == 410
    assert _post(server, "session_heartbeat", {"session_id": "nope"})[0] == 404


def test_heartbeat_and_auth(server):
    status, body = _post(server, "create_session", {"tags": [], "user_metadata": {"k": "v"}, "sdk_version": "x"})
    assert status == 200
    heartbeat = _post(server, "session_heartbeat", {"session_id": body["session_id"]})
    assert heartbeat == (200, {"type": "session_heartbeat"})
    assert server.sessions[0].heartbeats == 1
    req = urllib.request.Request(f"{server.base_url}/api/v1/healthz")  # no API key
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 401
    err.value.close()


def test_polling_try_again_over_plain_httpx_transport():
    with FakeTinkerServer(try_again_polls=2, use_pyqwest_transport=False) as srv:
        client = tinker.ServiceClient(base_url=srv.base_url, api_key=FakeTinkerServer.API_KEY)
        try:
            tc = client.create_lora_training_client(base_model=FakeTinkerServer.BASE_MODEL, rank=4).result(timeout=30)
            out = tc.forward_backward([_datum([1, 2, 3])], "cross_entropy").result(timeout=30)
            assert out.metrics["loss:sum"] == pytest.approx(2 * 2.1)
        finally:
            client.close("success").result(timeout=30)
        # create_model and forward_backward each answered try_again twice before the result.
        assert srv.count("retrieve_future") == 6
        assert not srv.errors


# ---------------------------------------------------------------- the bill (AdminClient.get_billing_usage)
HOUR = datetime(2026, 11, 30, 10, tzinfo=UTC)


def _admin(server: FakeTinkerServer) -> tinker.AdminClient:
    return tinker.AdminClient(base_url=server.base_url, api_key=FakeTinkerServer.API_KEY)


def test_billing_usage_is_parsed_by_the_real_admin_client(server):
    # A session really created here (its user_metadata is served) and one without metadata.
    service = tinker.ServiceClient(
        base_url=server.base_url, api_key=FakeTinkerServer.API_KEY, user_metadata={"ledger_run_id": "run-9"}
    )
    created = service.holder.get_session_id()  # the session is created when first needed
    assert [s.session_id for s in server.sessions] == [created]
    status, body = _post(server, "create_session", {"tags": [], "user_metadata": None, "sdk_version": "x"})
    assert status == 200
    bare = body["session_id"]
    server.bill(
        [
            usage_event("training", 1200, bucket_start=HOUR, session_id=created, rate=3.0, base_model="Qwen/Qwen3-8B"),
            usage_event("sampling_prefill", 40, bucket_start=HOUR, session_id=created, cached=True, rate=0.25),
            usage_event("sampling_prefill", 60, bucket_start=HOUR, session_id=created, estimated_cost_usd=1.25e-05),
            usage_event("sampling_sample", 7, bucket_start=HOUR + timedelta(hours=1), session_id=bare, rate=2.0),
            usage_event("checkpoint", 2, bucket_start=HOUR, session_id=created, estimated_cost_usd=9.0),
            usage_event("storage", 3.5, bucket_start=HOUR, free=True, rate=0.0, base_model=None, project_id="p-1"),
            usage_event("storage", 72.0, bucket_start=HOUR, rate=0.5, base_model=None),
            usage_event("sampling_sample", 5, bucket_start=HOUR + timedelta(hours=2), session_id="elsewhere"),
            usage_event("training", 99, bucket_start=HOUR - timedelta(hours=1), session_id=created, rate=3.0),
        ],
        cost_data_through=HOUR + timedelta(hours=1),
        sessions={"configured": {"ledger_account": "team-a"}},
    )
    response = _admin(server).get_billing_usage(HOUR, HOUR + timedelta(hours=2)).result(timeout=30)
    service.close("success").result(timeout=30)

    assert isinstance(response, types.BillingUsageResponse)
    # The window [10:00, 12:00): the 09:00 and 12:00 buckets are left out; by bucket, then quantity.
    assert [(e.bucket_start.hour, e.event_info.type) for e in response.data] == [
        (10, "training"),
        (10, "storage"),
        (10, "sampling_prefill"),
        (10, "sampling_prefill"),
        (10, "storage"),
        (10, "checkpoint"),
        (11, "sampling_sample"),
    ]
    training, paid, uncached, cached, free, checkpoint, sample = response.data
    assert isinstance(training.event_info, types.TrainingBillingEvent)
    assert training.event_info.token_count == 1200
    assert (training.session_id, training.base_model) == (created, "Qwen/Qwen3-8B")
    assert training.bucket_end == datetime(2026, 11, 30, 11, tzinfo=UTC)
    assert training.estimated_cost_usd == pytest.approx(0.0036)
    assert training.effective_rate_usd_per_million_tokens == 3.0
    assert (training.user_id, training.user_name) == ("org-user-1", "Fake User")
    assert isinstance(cached.event_info, types.SamplingPrefillBillingEvent)
    assert (cached.event_info.cached, cached.event_info.token_count) == (True, 40)
    assert cached.estimated_cost_usd == pytest.approx(0.00001)
    assert (uncached.event_info.cached, uncached.estimated_cost_usd) == (False, 1.25e-05)
    assert isinstance(checkpoint.event_info, types.CheckpointBillingEvent)
    assert (checkpoint.event_info.count, checkpoint.estimated_cost_usd) == (2, None)  # never priced
    assert isinstance(free.event_info, types.StorageBillingEvent)
    assert (free.event_info.free, free.event_info.gigabyte_hours, free.estimated_cost_usd) == (True, 3.5, 0.0)
    assert (free.session_id, free.base_model, free.project_id) == (None, None, "p-1")
    assert (paid.event_info.free, paid.estimated_cost_usd) == (False, pytest.approx(0.05))  # 0.5 x 72 / 720
    assert paid.effective_rate_usd_per_gigabyte_month == 0.5
    assert isinstance(sample.event_info, types.SamplingSampleBillingEvent)
    assert sample.event_info.token_count == 7
    # Sessions: only those in data, with the metadata they were created with (None for none).
    assert {sid: s.user_metadata for sid, s in response.sessions.items()} == {
        created: {"ledger_run_id": "run-9"},
        bare: None,
    }
    assert response.cost_data_through == datetime(2026, 11, 30, 11, tzinfo=UTC)
    assert server.billing_windows == [(HOUR, HOUR + timedelta(hours=2))]
    (served,) = server.served("billing/usage/events")
    assert (served.method, served.status) == ("GET", 200)

    # A session nobody created: None unless configured; configured metadata wins.
    later = _admin(server).get_billing_usage(HOUR + timedelta(hours=2), HOUR + timedelta(hours=3)).result(timeout=30)
    assert {sid: s.user_metadata for sid, s in later.sessions.items()} == {"elsewhere": None}
    server.bill_sessions["elsewhere"] = {"ledger_run_id": "run-x"}
    later = _admin(server).get_billing_usage(HOUR + timedelta(hours=2), HOUR + timedelta(hours=3)).result(timeout=30)
    assert later.sessions["elsewhere"].user_metadata == {"ledger_run_id": "run-x"}


def test_billing_window_is_checked_like_tinker(server):
    admin = _admin(server)
    bad = [
        ("2026-11-30T10:30:00Z", "2026-11-30T12:00:00Z"),  # misaligned start
        (HOUR, HOUR + timedelta(hours=1, seconds=1)),  # misaligned end
        (HOUR, HOUR + timedelta(days=14, hours=1)),  # over 14 days
        (HOUR, HOUR - timedelta(hours=1)),  # end before start
        (HOUR, HOUR),  # empty
        (datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2), "2099-01-01T00:00:00Z"),
    ]
    for starting_on, ending_before in bad:
        with pytest.raises(tinker.BadRequestError):
            admin.get_billing_usage(starting_on, ending_before).result(timeout=30)
    assert [r.status for r in server.served("billing/usage/events")] == [400] * len(bad)
    ok = admin.get_billing_usage(HOUR, HOUR + timedelta(days=14)).result(timeout=30)  # exactly 14 days
    assert (ok.data, ok.sessions, ok.cost_data_through) == ([], {}, None)
    # An offset other than UTC names the same instant.
    admin.get_billing_usage("2026-11-30T12:00:00+02:00", "2026-11-30T11:00:00Z").result(timeout=30)
    assert server.billing_windows[-1] == (HOUR, HOUR + timedelta(hours=1))


def test_billing_from_a_source_and_restated(server):
    asked: list[tuple[datetime, datetime]] = []

    def source(start: datetime, end: datetime) -> list[dict]:
        asked.append((start, end))
        return [usage_event("training", 100 + i, bucket_start=start + timedelta(hours=i)) for i in range(3)]

    server.bill(source=source)
    admin = _admin(server)
    got = admin.get_billing_usage(HOUR, HOUR + timedelta(hours=2)).result(timeout=30)
    assert [e.event_info.token_count for e in got.data] == [100, 101]  # the 12:00 bucket is outside
    assert asked == [(HOUR, HOUR + timedelta(hours=2))]

    server.bill([usage_event("training", 10, bucket_start=HOUR, session_id="s", estimated_cost_usd=0.5)])
    first = admin.get_billing_usage(HOUR, HOUR + timedelta(hours=1)).result(timeout=30)
    assert server.restate(lambda e: e["session_id"] == "s", estimated_cost_usd=0.75) == 1
    assert server.restate(lambda e: e["session_id"] == "nobody", estimated_cost_usd=1.0) == 0
    second = admin.get_billing_usage(HOUR, HOUR + timedelta(hours=1)).result(timeout=30)
    assert [e.estimated_cost_usd for e in first.data] == [0.5]
    assert [e.estimated_cost_usd for e in second.data] == [0.75]
    assert second.data[0].event_info.token_count == 10
    assert asked == [(HOUR, HOUR + timedelta(hours=2))]  # bill() replaced the source


def test_billing_needs_the_api_key_and_retries_5xx(server):
    server.fail_next("billing/usage/events", status=503)
    got = _admin(server).get_billing_usage(HOUR, HOUR + timedelta(hours=1)).result(timeout=30)
    assert got.data == []
    assert [r.status for r in server.served("billing/usage/events")] == [503, 200]
    with pytest.raises(tinker.AuthenticationError):  # the client asks for its config at once
        tinker.AdminClient(base_url=server.base_url, api_key="tml-not-the-key")
    assert server.requests[-1].status == 401
