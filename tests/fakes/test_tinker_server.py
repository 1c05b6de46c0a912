"""The real tinker SDK runs a whole training flow against the loopback FakeTinkerServer."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402

from tests.fakes.tinker_server import FakeTinkerServer  # noqa: E402


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
