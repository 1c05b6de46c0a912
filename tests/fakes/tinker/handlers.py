"""The fake Tinker server's endpoints, one handler each, found by method and path pattern in
GET and POST (forward_backward, a protobuf body, is read before the JSON bodies of the others)."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.tinker import wire
from tests.fakes.tinker.billing import BILLING, window
from tests.fakes.tinker.records import (
    API,
    Call,
    Failure,
    FakeCheckpoint,
    FakeSession,
    HTTPError,
    Reply,
    checkpoint_json,
    loss_per_token,
)

if TYPE_CHECKING:
    from tests.fakes.tinker.server import FakeTinkerServer

Handler = Callable[["FakeTinkerServer", Call], Reply]


def dispatch(fake: FakeTinkerServer, call: Call) -> Reply:
    if call.method == "GET":
        return GET.get(call.endpoint, _not_implemented)(fake, call)
    if call.method != "POST":
        raise HTTPError(405, f"{call.method} not allowed")
    if call.endpoint == "forward_backward":
        return _forward_backward(fake, call)
    call.body = json.loads(call.raw) if call.raw else {}
    rec = call.record
    rec.body = call.body
    rec.session_id = call.body.get("session_id")
    rec.model_id = call.body.get("model_id")
    rec.user_metadata = call.body.get("user_metadata")
    return POST.get(call.endpoint, _not_implemented)(fake, call)


def _not_implemented(fake: FakeTinkerServer, call: Call) -> Reply:
    raise HTTPError(404, f"fake Tinker does not implement {call.method} {call.endpoint}")


# ---------------------------------------------------------------- GET
def _healthz(fake: FakeTinkerServer, call: Call) -> Reply:
    return fake.reply(call.record, {"status": "ok"})


def _capabilities(fake: FakeTinkerServer, call: Call) -> Reply:
    model = {"model_name": fake.BASE_MODEL, "max_context_length": 4096, "trainable": True, "sampleable": False}
    return fake.reply(call.record, {"supported_models": [model]})


def _billing(fake: FakeTinkerServer, call: Call) -> Reply:
    starting_on, ending_before = window(call.path, fake.now)
    with fake.lock:
        fake.billing_windows.append((starting_on, ending_before))
    return fake.reply(call.record, fake.billing_usage(starting_on, ending_before))


def _checkpoints(fake: FakeTinkerServer, call: Call) -> Reply:
    m = re.fullmatch(r"training_runs/([^/]+)/checkpoints", call.path[len(API) :])
    if not m:
        return _not_implemented(fake, call)
    run = m.group(1)
    with fake.lock:
        cks = [c for c in fake.checkpoints.values() if c.model_id == run]
    call.record.model_id = run
    return fake.reply(call.record, {"checkpoints": [checkpoint_json(c) for c in cks]})


GET: dict[str, Handler] = {
    "healthz": _healthz,
    "get_server_capabilities": _capabilities,
    BILLING: _billing,
    "training_runs/{id}/checkpoints": _checkpoints,
}


# ---------------------------------------------------------------- POST
def _forward_backward(fake: FakeTinkerServer, call: Call) -> Reply:
    rec = call.record
    req = wire.decode_fwdbwd(wire.decode_body(call.raw, call.headers))
    summary = wire.summarize_fwdbwd(req)
    rec.body = summary
    model = fake.model(req.model_id)
    rec.model_id, rec.session_id = model.model_id, model.session_id
    proto = None
    if call.failure is None:
        with fake.lock:
            model.pending_fwdbwd += 1
            if not req.forward_only:
                model.tokens_seen += summary["n_tokens"]
            step = model.step
        proto = wire.fwdbwd_output(req, loss_per_token(step))
    fut = fake.future(proto=proto, failure=call.failure, model_id=model.model_id)
    rec.request_id = fut["request_id"]
    return fake.reply(rec, fut)


def _client_config(fake: FakeTinkerServer, call: Call) -> Reply:
    config = {
        "pjwt_auth_enabled": False,
        "use_pyqwest_transport": fake.use_pyqwest_transport,
        "parallel_fwdbwd_chunks": True,
        "proto_compress_fwdbwd": False,
    }
    return fake.reply(call.record, config)


def _dynamic_config(fake: FakeTinkerServer, call: Call) -> Reply:
    return fake.reply(call.record, {"refresh_interval_sec": 300})


def _create_session(fake: FakeTinkerServer, call: Call) -> Reply:
    body = call.body
    sess = FakeSession(
        session_id=fake.new_id("fake-session"),
        user_metadata=body.get("user_metadata") or {},
        tags=list(body.get("tags") or []),
        project_id=body.get("project_id"),
        display_name=body.get("display_name"),
        sdk_version=body.get("sdk_version"),
    )
    with fake.lock:
        fake.sessions.append(sess)
    call.record.session_id = sess.session_id
    call.record.user_metadata = sess.user_metadata
    return fake.reply(call.record, {"type": "create_session", "session_id": sess.session_id})


def _heartbeat(fake: FakeTinkerServer, call: Call) -> Reply:
    sess = fake.session_or_404(call.body.get("session_id"))
    if sess.finished is not None:
        call.record.status = 410
        return fake.reply(call.record, {"detail": "session finished"})
    sess.heartbeats += 1
    return fake.reply(call.record, {"type": "session_heartbeat"})


def _telemetry(fake: FakeTinkerServer, call: Call) -> Reply:
    call.record.session_id = call.body.get("session_id")
    with fake.lock:
        for s in fake.sessions:
            if s.session_id == call.record.session_id:
                s.telemetry_events.extend(call.body.get("events") or [])
    return fake.reply(call.record, {"status": "accepted"})


def _finish(fake: FakeTinkerServer, call: Call) -> Reply:
    session_id = call.path[len(API) :].split("/")[1]
    call.record.session_id = session_id
    sess = fake.session_or_404(session_id)
    if sess.finished is None:  # first reason wins
        sess.finished = call.body
    return fake.reply(call.record, {})


def _create_model(fake: FakeTinkerServer, call: Call) -> Reply:
    body = call.body
    fake.session_or_404(body.get("session_id"))
    lora = body.get("lora_config") or {}
    model = fake.add_model(
        body["session_id"], int(body["model_seq_id"]), body["base_model"], lora.get("rank"), body.get("user_metadata")
    )
    call.record.model_id = model.model_id
    result = {"model_id": model.model_id, "type": "create_model"}
    return _reply_future(fake, call, fake.future(result, failure=call.failure, model_id=model.model_id))


def _get_info(fake: FakeTinkerServer, call: Call) -> Reply:
    model = fake.model(call.body["model_id"])
    call.record.session_id = model.session_id
    info = {
        "type": "get_info",
        "model_id": model.model_id,
        "model_name": model.base_model,
        "is_lora": model.lora_rank is not None,
        "lora_rank": model.lora_rank,
        "model_data": {"arch": "llama", "model_name": model.base_model, "tokenizer_id": None},
    }
    return fake.reply(call.record, info)


def _optim_step(fake: FakeTinkerServer, call: Call) -> Reply:
    model = fake.model(call.body["model_id"])
    call.record.session_id = model.session_id
    if call.failure is None:
        with fake.lock:
            model.step += 1
            model.pending_fwdbwd = 0
    result = {"type": "optim_step", "metrics": {}}
    return _reply_future(fake, call, fake.future(result, failure=call.failure, model_id=model.model_id))


def _save_weights(fake: FakeTinkerServer, call: Call) -> Reply:
    body, failure = call.body, call.failure
    kind = "training" if call.endpoint == "save_weights" else "sampler"
    model = fake.model(body["model_id"])
    name = body.get("path") or fake.new_id("sampler")
    segment = "weights" if kind == "training" else "sampler_weights"
    path = f"tinker://{model.model_id}/{segment}/{name}"
    with fake.lock:
        exists = path in fake.checkpoints
        if failure is None and exists and kind == "training" and not body.get("overwrite"):
            failure = Failure(error=f"checkpoint {path} already exists (pass overwrite=True)")
        if failure is None:
            fake.checkpoints[path] = FakeCheckpoint(
                path=path,
                kind=kind,
                model_id=model.model_id,
                name=name,
                step=model.step,
                base_model=model.base_model,
                lora_rank=model.lora_rank,
                ttl_seconds=body.get("ttl_seconds"),
                user_metadata=body.get("user_metadata"),
                created=_dt.datetime.now(_dt.UTC),
            )
    if kind == "training":
        result: dict[str, Any] = {"path": path, "type": "save_weights"}
    elif body.get("path"):
        result = {"path": path, "type": "save_weights_for_sampler"}
    else:  # save_weights_and_get_sampling_client: a sampling session id instead of a path
        result = {"sampling_session_id": fake.new_id(f"{model.session_id}:sample"), "type": "save_weights_for_sampler"}
    call.record.session_id, call.record.model_id = model.session_id, model.model_id
    return _reply_future(fake, call, fake.future(result, failure=failure, model_id=model.model_id))


def _load_weights(fake: FakeTinkerServer, call: Call) -> Reply:
    body, failure = call.body, call.failure
    path = body["path"]
    with fake.lock:
        ckpt = fake.checkpoints.get(path)
    if failure is None and (ckpt is None or ckpt.kind != "training"):
        failure = Failure(error=f"training checkpoint not found: {path}")
    if body.get("model_id"):  # TrainingClient.load_state*: load into an existing model
        model = fake.model(body["model_id"])
    else:  # ServiceClient.create_training_client_from_state*: a new model in this session
        fake.session_or_404(body.get("session_id"))
        base = body.get("base_model") or (ckpt.base_model if ckpt else fake.BASE_MODEL)
        rank = ckpt.lora_rank if ckpt else None
        model = fake.add_model(body["session_id"], int(body["model_seq_id"]), base, rank, body.get("user_metadata"))
    if failure is None and ckpt is not None:
        with fake.lock:
            model.step = ckpt.step
            model.loaded_from = path
            model.optimizer_loaded = bool(body.get("optimizer"))
    call.record.session_id, call.record.model_id = model.session_id, model.model_id
    result = {"type": "load_weights", "path": path, "model_id": model.model_id}
    return _reply_future(fake, call, fake.future(result, failure=failure, model_id=model.model_id))


def _retrieve_future(fake: FakeTinkerServer, call: Call) -> Reply:
    rec = call.record
    request_id = call.body.get("request_id")
    with fake.lock:
        fut = fake.futures.get(str(request_id))
        if fut is not None and fut["polls_left"] > 0:
            fut["polls_left"] -= 1
            return fake.reply(rec, {"type": "try_again", "request_id": request_id, "queue_state": "active"})
    rec.request_id = request_id
    if fut is None:
        raise HTTPError(404, f"unknown request_id {request_id!r}")
    if fut["kind"] == "proto":
        return fake.reply(rec, fut["data"], content_type="application/x-protobuf")
    return fake.reply(rec, fut["data"])


def _reply_future(fake: FakeTinkerServer, call: Call, fut: dict[str, Any]) -> Reply:
    call.record.request_id = fut["request_id"]
    return fake.reply(call.record, fut)


POST: dict[str, Handler] = {
    "client/config": _client_config,
    "client/dynamic_config": _dynamic_config,
    "create_session": _create_session,
    "session_heartbeat": _heartbeat,
    "telemetry": _telemetry,
    "sessions/{id}/finish": _finish,
    "create_model": _create_model,
    "get_info": _get_info,
    "optim_step": _optim_step,
    "save_weights": _save_weights,
    "save_weights_for_sampler": _save_weights,
    "load_weights": _load_weights,
    "retrieve_future": _retrieve_future,
}
