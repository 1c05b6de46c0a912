"""A loopback stand-in for Tinker's HTTP API, good enough for the real ``tinker`` SDK (0.38.x):
what a dry run of a Tinker training loop talks to (examples/tinker_lora.py --dry-run) and what
the integration's tests run the real SDK against.

The real SDK talks real HTTP to this server on 127.0.0.1 (no mocks inside the SDK, no httpx
MockTransport). Stdlib only, plus the SDK's own protobuf module for the forward_backward
request/response bodies. Nothing is trained: losses are made up, checkpoints are names in
memory, and everything is gone when the server stops.

    server = FakeTinkerServer().start()
    client = tinker.ServiceClient(base_url=server.base_url, api_key=FakeTinkerServer.API_KEY,
                                  user_metadata={"ledger_run_id": "run-1"})
    tc = client.create_lora_training_client("fake/base-model", rank=8).result()
    ...
    assert server.count("forward_backward") == 3
    assert server.sessions[0].user_metadata == {"ledger_run_id": "run-1"}
    server.stop()

Endpoints (all under /api/v1):
    POST client/config, client/dynamic_config, create_session, session_heartbeat, telemetry,
         create_model, get_info, forward_backward (protobuf), optim_step, save_weights,
         save_weights_for_sampler, load_weights, retrieve_future, sessions/{id}/finish
    GET  healthz, get_server_capabilities, training_runs/{run}/checkpoints
    GET  billing/usage/events (AdminClient.get_billing_usage; see "The bill" below)

Asynchronous work follows Tinker's shape: a POST returns ``{"request_id": ...}`` and the SDK
polls ``retrieve_future`` for the result (``try_again_polls`` makes it poll more than once).

The bill (GET billing/usage/events?starting_on=...&ending_before=..., what
``tinker.AdminClient(base_url=..., api_key=...).get_billing_usage(start, end)`` asks): the test
says what Tinker billed, as hourly buckets in the wire shape of ``BillingUsageEvent``, made with
``usage_event`` (one bucket of one kind: training, sampling_prefill cached or not, sampling_sample,
checkpoint (never priced), storage (gigabyte_hours, paid or free)):

    server.bill([usage_event("training", 1200, bucket_start=hour, session_id=sid, estimated_cost_usd=0.0036),
                 usage_event("checkpoint", 2, bucket_start=hour, session_id=sid)],
                cost_data_through=hour + timedelta(hours=1))
    server.bill(source=lambda start, end: [...])                 # or a function of the window asked
    server.restate(lambda e: e["session_id"] == sid, estimated_cost_usd=0.0041)  # a bucket re-priced
    server.bill_sessions["sess-x"] = None                        # a session's user_metadata, by hand

Each answer holds the buckets whose bucket_start lies in the window, ordered by bucket then by
descending quantity, ``sessions`` ({session_id: {"user_metadata": ...}} for every session in
``data``: the user_metadata the session was really created with here (None when it had none),
unless ``bill_sessions``, or the ``sessions=`` of bill(), says otherwise; None for a session
nobody knows), and ``cost_data_through`` as configured. The parameters are checked as Tinker
does: both required, RFC 3339, aligned to a UTC hour, starting_on not in the future (``now=``
sets the clock), ending_before after starting_on and at most 14 days after it; anything else is a
400 (tinker.BadRequestError). A datetime without an offset is read as UTC. Every window served is
in ``server.billing_windows``.

Failure injection:
    server.fail_next("forward_backward", status=500)           # HTTP error (the SDK retries 5xx)
    server.fail_next("forward_backward", status=400)           # HTTP error the SDK does not retry
    server.fail_next("forward_backward", error="boom")         # accepted, then the future fails:
                                                               #   SDK raises tinker.RequestFailedError
    server.fail_next("billing/usage/events", status=503)       # a GET fails with its status only

Everything served is recorded in ``server.requests`` (list of ``Served``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

__all__ = ["FakeTinkerServer", "Served", "FakeSession", "FakeModel", "FakeCheckpoint", "Failure", "usage_event"]

API = "/api/v1/"
BILLING = "billing/usage/events"
BILLING_WINDOW_MAX = _dt.timedelta(days=14)
TOKEN_KINDS = ("training", "sampling_prefill", "sampling_sample")
USAGE_KINDS = (*TOKEN_KINDS, "checkpoint", "storage")

BillSource = Callable[[_dt.datetime, _dt.datetime], Iterable[dict[str, Any]]]


@dataclasses.dataclass
class Served:
    """One request the server answered."""

    endpoint: str  # path after /api/v1/, with ids replaced: e.g. "forward_backward", "sessions/{id}/finish"
    method: str
    path: str
    status: int
    session_id: str | None = None
    model_id: str | None = None
    user_metadata: dict[str, Any] | None = None
    body: dict[str, Any] | None = None  # JSON body; for forward_backward a summary of the protobuf
    request_id: str | None = None  # the future id handed out, if any
    api_key: str | None = None
    injected: bool = False  # True when the answer came from fail_next
    time: float = dataclasses.field(default_factory=time.time)


@dataclasses.dataclass
class FakeSession:
    session_id: str
    user_metadata: dict[str, Any]
    tags: list[str]
    project_id: str | None
    display_name: str | None
    sdk_version: str | None
    heartbeats: int = 0
    finished: dict[str, Any] | None = None  # {"reason": {"type": ...}, "detail": ...}
    telemetry_events: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class FakeModel:
    model_id: str
    session_id: str
    base_model: str
    lora_rank: int | None
    user_metadata: dict[str, Any] | None
    step: int = 0  # optimizer steps applied to these weights (restored by load_weights)
    pending_fwdbwd: int = 0  # forward_backward calls since the last optim_step
    tokens_seen: int = 0
    loaded_from: str | None = None
    optimizer_loaded: bool = False


@dataclasses.dataclass
class FakeCheckpoint:
    path: str  # tinker://<run>/weights/<name> or tinker://<run>/sampler_weights/<name>
    kind: str  # "training" | "sampler"
    model_id: str
    name: str
    step: int
    base_model: str
    lora_rank: int | None
    ttl_seconds: int | None
    user_metadata: dict[str, str] | None
    created: _dt.datetime


@dataclasses.dataclass
class Failure:
    status: int | None = None  # HTTP status to answer the POST with
    error: str | None = None  # or: accept, then fail the future with this message
    category: str = "user"  # RequestErrorCategory: "user" | "server" | "unknown"
    body: Any = None
    headers: dict[str, str] | None = None


def _loss_per_token(step: int) -> float:
    """Deterministic, decreasing 'loss' so tests can see training progress and resumes."""
    return 0.1 + 2.0 * (0.8**step)


class FakeTinkerServer:
    API_KEY = "tml-fake-key"
    BASE_MODEL = "fake/tiny-llama"

    def __init__(
        self,
        *,
        try_again_polls: int = 0,
        use_pyqwest_transport: bool = True,
        require_api_key: bool = True,
        now: Callable[[], _dt.datetime] | None = None,
    ):
        """``try_again_polls``: how many retrieve_future polls answer try_again before the result.
        ``use_pyqwest_transport``: the client-config flag (the SDK's default transport is pyqwest).
        ``now``: the clock the billing endpoint checks "not in the future" against (UTC now)."""
        self.try_again_polls = try_again_polls
        self.use_pyqwest_transport = use_pyqwest_transport
        self.require_api_key = require_api_key
        self.requests: list[Served] = []
        self.sessions: list[FakeSession] = []
        self.models: dict[str, FakeModel] = {}
        self.checkpoints: dict[str, FakeCheckpoint] = {}
        self.errors: list[BaseException] = []  # bugs in the fake itself (answered as 500)
        self._futures: dict[str, dict[str, Any]] = {}
        self._failures: dict[str, list[Failure]] = {}
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.now = now or (lambda: _dt.datetime.now(_dt.UTC))
        self.bill_events: list[dict[str, Any]] = []  # what bill() configured (restate() changes it)
        self.bill_source: BillSource | None = None
        self.bill_sessions: dict[str, dict[str, str] | None] = {}  # session_id -> user_metadata served
        self.cost_data_through: _dt.datetime | None = None
        self.billing_windows: list[tuple[_dt.datetime, _dt.datetime]] = []  # every window served

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> FakeTinkerServer:
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-tinker", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeTinkerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- test helpers
    def fail_next(
        self,
        endpoint: str,
        status: int | None = None,
        *,
        error: str | None = None,
        category: str = "user",
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` requests to ``endpoint`` (e.g. "forward_backward") fail.

        With ``status``: answer the POST itself with that HTTP status (JSON ``body``, default
        ``{"detail": ...}``). The SDK retries 408/409/429/5xx on its own, so use e.g. 400 for an
        error that surfaces at once. With ``error``: accept the request, then answer its
        retrieve_future with Tinker's failure payload ``{"error": ..., "category": ...}``, which
        the SDK raises as ``tinker.RequestFailedError`` (not retried).
        """
        if (status is None) == (error is None):
            raise ValueError("give exactly one of status= or error=")
        with self._lock:
            self._failures.setdefault(endpoint, []).extend(
                Failure(status=status, error=error, category=category, body=body, headers=headers) for _ in range(times)
            )

    def served(self, endpoint: str | None = None, *, ok_only: bool = False) -> list[Served]:
        with self._lock:
            out = [r for r in self.requests if endpoint is None or r.endpoint == endpoint]
        return [r for r in out if r.status < 400] if ok_only else out

    def count(self, endpoint: str, *, ok_only: bool = False) -> int:
        return len(self.served(endpoint, ok_only=ok_only))

    def endpoints(self) -> list[str]:
        """Endpoints in the order they were served (with repeats)."""
        with self._lock:
            return [r.endpoint for r in self.requests]

    def session(self, session_id: str) -> FakeSession:
        with self._lock:
            for s in self.sessions:
                if s.session_id == session_id:
                    return s
        raise KeyError(session_id)

    def reset_records(self) -> None:
        with self._lock:
            self.requests.clear()

    # ---------------------------------------------------------------- the bill
    def bill(
        self,
        events: Iterable[dict[str, Any]] = (),
        *,
        cost_data_through: _dt.datetime | None = None,
        sessions: dict[str, dict[str, str] | None] | None = None,
        source: BillSource | None = None,
    ) -> None:
        """Say what Tinker billed: these buckets (``usage_event``'s dicts), or ``source(start, end)``
        called for every window asked; replaces the bill configured before. ``cost_data_through``
        is served as given; ``sessions`` adds or overrides the user_metadata served per session."""
        with self._lock:
            self.bill_events = [_check_event(event) for event in events]
            self.bill_source = source
            self.cost_data_through = cost_data_through
            if sessions:
                self.bill_sessions.update(sessions)

    def restate(self, where: Callable[[dict[str, Any]], bool], **changes: Any) -> int:
        """Change the configured buckets ``where`` selects (e.g. ``estimated_cost_usd=0.0041``), as
        Tinker does when it re-prices a bucket; the number of buckets changed."""
        changed = 0
        with self._lock:
            for index, event in enumerate(self.bill_events):
                if where(event):
                    self.bill_events[index] = _check_event({**event, **changes})
                    changed += 1
        return changed

    def billing_usage(self, starting_on: _dt.datetime, ending_before: _dt.datetime) -> dict[str, Any]:
        """The JSON body served for a window (already checked)."""
        with self._lock:
            source, configured = self.bill_source, list(self.bill_events)
            cost_data_through = self.cost_data_through
            created = {s.session_id: (dict(s.user_metadata) or None) for s in self.sessions}
            overrides = dict(self.bill_sessions)
        events = configured + [_check_event(e) for e in (source(starting_on, ending_before) if source else ())]
        data = [e for e in events if starting_on <= _parse_time(e["bucket_start"]) < ending_before]
        data.sort(key=lambda e: (_parse_time(e["bucket_start"]), -_quantity(e)))
        sessions: dict[str, dict[str, Any]] = {}
        for event in data:
            sid = event.get("session_id")
            if sid is not None and sid not in sessions:
                metadata = overrides[sid] if sid in overrides else created.get(sid)
                sessions[sid] = {"user_metadata": metadata}
        return {
            "data": data,
            "sessions": sessions,
            "cost_data_through": None if cost_data_through is None else _rfc3339(cost_data_through),
        }

    # ---------------------------------------------------------------- internals
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    def _take_failure(self, endpoint: str) -> Failure | None:
        with self._lock:
            queue = self._failures.get(endpoint)
            return queue.pop(0) if queue else None

    def _future(
        self,
        result: dict[str, Any] | None = None,
        *,
        proto: bytes | None = None,
        failure: Failure | None = None,
        model_id: str | None = None,
    ) -> dict[str, Any]:
        request_id = self._new_id("req")
        if failure is not None and failure.error is not None:
            payload: dict[str, Any] = {"kind": "json", "data": {"error": failure.error, "category": failure.category}}
        elif proto is not None:
            payload = {"kind": "proto", "data": proto}
        else:
            payload = {"kind": "json", "data": result}
        payload["polls_left"] = self.try_again_polls
        with self._lock:
            self._futures[request_id] = payload
        out: dict[str, Any] = {"request_id": request_id}
        if model_id is not None:
            out["model_id"] = model_id
        return out

    def _model(self, model_id: str) -> FakeModel:
        with self._lock:
            model = self.models.get(model_id)
        if model is None:
            raise _HTTPError(404, f"unknown model_id {model_id!r}")
        return model

    def _add_model(
        self, session_id: str, seq: int, base_model: str, rank: int | None, user_metadata: dict[str, Any] | None
    ) -> FakeModel:
        # Same id the SDK derives client-side for load_weights: f"{session_id}:train:{model_seq_id}".
        model = FakeModel(
            model_id=f"{session_id}:train:{seq}",
            session_id=session_id,
            base_model=base_model,
            lora_rank=rank,
            user_metadata=user_metadata,
        )
        with self._lock:
            self.models[model.model_id] = model
        return model

    def _save(self, body: dict[str, Any], kind: str, failure: Failure | None) -> tuple[dict[str, Any], Served]:
        model = self._model(body["model_id"])
        name = body.get("path") or self._new_id("sampler")
        segment = "weights" if kind == "training" else "sampler_weights"
        path = f"tinker://{model.model_id}/{segment}/{name}"
        with self._lock:
            exists = path in self.checkpoints
            if failure is None and exists and kind == "training" and not body.get("overwrite"):
                failure = Failure(error=f"checkpoint {path} already exists (pass overwrite=True)")
            if failure is None:
                self.checkpoints[path] = FakeCheckpoint(
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
            result = {
                "sampling_session_id": self._new_id(f"{model.session_id}:sample"),
                "type": "save_weights_for_sampler",
            }
        fut = self._future(result, failure=failure, model_id=model.model_id)
        return fut, Served(
            "",
            "POST",
            "",
            200,
            session_id=model.session_id,
            model_id=model.model_id,
            body=body,
            request_id=fut["request_id"],
        )

    # The handlers below return (status, json-or-bytes, content-type, Served-template).
    def handle(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, bytes, str, dict[str, str]]:
        if not path.startswith(API):
            return self._finish(method, path, path, 404, {"detail": "not found"}, headers)
        endpoint = path[len(API) :].split("?", 1)[0]
        pattern = re.sub(r"^(sessions|training_runs)/[^/]+", r"\1/{id}", endpoint)
        api_key = headers.get("x-api-key")
        if self.require_api_key and api_key != self.API_KEY:
            return self._finish(method, path, pattern, 401, {"detail": "invalid api key"}, headers)

        failure = self._take_failure(pattern)
        if failure is not None and method != "POST" and failure.status is None:
            failure = Failure(status=500, body={"detail": failure.error})  # a GET has no future to fail
        if failure is not None and failure.status is not None:
            body = failure.body if failure.body is not None else {"detail": f"injected failure on {pattern}"}
            rec = Served(pattern, method, path, failure.status, injected=True, api_key=api_key)
            self._fill_from_body(rec, raw, headers)
            return self._reply(rec, body, extra_headers=failure.headers)

        try:
            return self._dispatch(method, path, pattern, headers, raw, failure, api_key)
        except _HTTPError as e:
            rec = Served(pattern, method, path, e.status, api_key=api_key)
            self._fill_from_body(rec, raw, headers)
            return self._reply(rec, {"detail": e.detail})

    def _fill_from_body(self, rec: Served, raw: bytes, headers: dict[str, str]) -> None:
        try:
            if "protobuf" in headers.get("content-type", ""):
                rec.body = _summarize_fwdbwd(_decode_body(raw, headers))
            elif raw:
                rec.body = json.loads(raw)
        except Exception:  # noqa: BLE001 - a record must never break the reply
            rec.body = None
        if isinstance(rec.body, dict):
            rec.model_id = rec.body.get("model_id")
            rec.session_id = rec.body.get("session_id")
            if rec.session_id is None and rec.model_id:
                rec.session_id = str(rec.model_id).split(":", 1)[0]

    def _finish(
        self, method: str, path: str, pattern: str, status: int, body: Any, headers: dict[str, str]
    ) -> tuple[int, bytes, str, dict[str, str]]:
        return self._reply(Served(pattern, method, path, status, api_key=headers.get("x-api-key")), body)

    def _reply(
        self,
        rec: Served,
        body: Any,
        *,
        content_type: str = "application/json",
        extra_headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes, str, dict[str, str]]:
        with self._lock:
            self.requests.append(rec)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return rec.status, data, content_type, dict(extra_headers or {})

    def _dispatch(
        self,
        method: str,
        path: str,
        ep: str,
        headers: dict[str, str],
        raw: bytes,
        failure: Failure | None,
        api_key: str | None,
    ) -> tuple[int, bytes, str, dict[str, str]]:
        rec = Served(ep, method, path, 200, api_key=api_key)
        if method == "GET":
            if ep == "healthz":
                return self._reply(rec, {"status": "ok"})
            if ep == "get_server_capabilities":
                return self._reply(
                    rec,
                    {
                        "supported_models": [
                            {
                                "model_name": self.BASE_MODEL,
                                "max_context_length": 4096,
                                "trainable": True,
                                "sampleable": False,
                            }
                        ]
                    },
                )
            if ep == BILLING:
                starting_on, ending_before = self._billing_window(path)
                with self._lock:
                    self.billing_windows.append((starting_on, ending_before))
                return self._reply(rec, self.billing_usage(starting_on, ending_before))
            m = re.fullmatch(r"training_runs/([^/]+)/checkpoints", path[len(API) :])
            if m:
                run = m.group(1)
                with self._lock:
                    cks = [c for c in self.checkpoints.values() if c.model_id == run]
                rec.model_id = run
                return self._reply(rec, {"checkpoints": [_checkpoint_json(c) for c in cks]})
            raise _HTTPError(404, f"fake Tinker does not implement GET {ep}")

        if method != "POST":
            raise _HTTPError(405, f"{method} not allowed")

        if ep == "forward_backward":
            req = _decode_fwdbwd(_decode_body(raw, headers))
            summary = _summarize_fwdbwd(req)
            rec.body = summary
            model = self._model(req.model_id)
            rec.model_id, rec.session_id = model.model_id, model.session_id
            proto = None
            if failure is None:
                with self._lock:
                    model.pending_fwdbwd += 1
                    if not req.forward_only:
                        model.tokens_seen += summary["n_tokens"]
                    step = model.step
                proto = _fwdbwd_output(req, _loss_per_token(step))
            fut = self._future(proto=proto, failure=failure, model_id=model.model_id)
            rec.request_id = fut["request_id"]
            return self._reply(rec, fut)

        body: dict[str, Any] = json.loads(raw) if raw else {}
        rec.body = body
        rec.session_id = body.get("session_id")
        rec.model_id = body.get("model_id")
        rec.user_metadata = body.get("user_metadata")

        if ep == "client/config":
            return self._reply(
                rec,
                {
                    "pjwt_auth_enabled": False,
                    "use_pyqwest_transport": self.use_pyqwest_transport,
                    "parallel_fwdbwd_chunks": True,
                    "proto_compress_fwdbwd": False,
                },
            )
        if ep == "client/dynamic_config":
            return self._reply(rec, {"refresh_interval_sec": 300})
        if ep == "create_session":
            sess = FakeSession(
                session_id=self._new_id("fake-session"),
                user_metadata=body.get("user_metadata") or {},
                tags=list(body.get("tags") or []),
                project_id=body.get("project_id"),
                display_name=body.get("display_name"),
                sdk_version=body.get("sdk_version"),
            )
            with self._lock:
                self.sessions.append(sess)
            rec.session_id = sess.session_id
            rec.user_metadata = sess.user_metadata
            return self._reply(rec, {"type": "create_session", "session_id": sess.session_id})
        if ep == "session_heartbeat":
            sess = self._session_or_404(body.get("session_id"))
            if sess.finished is not None:
                rec.status = 410
                return self._reply(rec, {"detail": "session finished"})
            sess.heartbeats += 1
            return self._reply(rec, {"type": "session_heartbeat"})
        if ep == "telemetry":
            rec.session_id = body.get("session_id")
            with self._lock:
                for s in self.sessions:
                    if s.session_id == rec.session_id:
                        s.telemetry_events.extend(body.get("events") or [])
            return self._reply(rec, {"status": "accepted"})
        if ep == "sessions/{id}/finish":
            session_id = path[len(API) :].split("/")[1]
            rec.session_id = session_id
            sess = self._session_or_404(session_id)
            if sess.finished is None:  # first reason wins
                sess.finished = body
            return self._reply(rec, {})
        if ep == "create_model":
            self._session_or_404(body.get("session_id"))
            lora = body.get("lora_config") or {}
            model = self._add_model(
                body["session_id"],
                int(body["model_seq_id"]),
                body["base_model"],
                lora.get("rank"),
                body.get("user_metadata"),
            )
            rec.model_id = model.model_id
            fut = self._future(
                {"model_id": model.model_id, "type": "create_model"}, failure=failure, model_id=model.model_id
            )
            rec.request_id = fut["request_id"]
            return self._reply(rec, fut)
        if ep == "get_info":
            model = self._model(body["model_id"])
            rec.session_id = model.session_id
            return self._reply(
                rec,
                {
                    "type": "get_info",
                    "model_id": model.model_id,
                    "model_name": model.base_model,
                    "is_lora": model.lora_rank is not None,
                    "lora_rank": model.lora_rank,
                    "model_data": {"arch": "llama", "model_name": model.base_model, "tokenizer_id": None},
                },
            )
        if ep == "optim_step":
            model = self._model(body["model_id"])
            rec.session_id = model.session_id
            if failure is None:
                with self._lock:
                    model.step += 1
                    model.pending_fwdbwd = 0
            fut = self._future({"type": "optim_step", "metrics": {}}, failure=failure, model_id=model.model_id)
            rec.request_id = fut["request_id"]
            return self._reply(rec, fut)
        if ep in ("save_weights", "save_weights_for_sampler"):
            fut, tmpl = self._save(body, "training" if ep == "save_weights" else "sampler", failure)
            rec.session_id, rec.model_id, rec.request_id = tmpl.session_id, tmpl.model_id, tmpl.request_id
            return self._reply(rec, fut)
        if ep == "load_weights":
            return self._load_weights(rec, body, failure)
        if ep == "retrieve_future":
            return self._retrieve(rec, body)
        raise _HTTPError(404, f"fake Tinker does not implement POST {ep}")

    def _billing_window(self, path: str) -> tuple[_dt.datetime, _dt.datetime]:
        """starting_on and ending_before of a billing query, checked as Tinker checks them."""
        query = parse_qs(path.split("?", 1)[1] if "?" in path else "")
        times: list[_dt.datetime] = []
        for name in ("starting_on", "ending_before"):
            values = query.get(name)
            if not values:
                raise _HTTPError(400, f"{name} is required")
            try:
                value = _parse_time(values[0])
            except ValueError:
                raise _HTTPError(400, f"{name} is not an RFC 3339 time: {values[0]!r}") from None
            if (value.minute, value.second, value.microsecond) != (0, 0, 0):
                raise _HTTPError(400, f"{name} must be aligned to a UTC hour boundary: {values[0]!r}")
            times.append(value)
        starting_on, ending_before = times
        if starting_on > self.now():
            raise _HTTPError(400, "starting_on must not be in the future")
        if ending_before <= starting_on:
            raise _HTTPError(400, "ending_before must be after starting_on")
        if ending_before - starting_on > BILLING_WINDOW_MAX:
            raise _HTTPError(400, "the window must be at most 14 days")
        return starting_on, ending_before

    def _session_or_404(self, session_id: str | None) -> FakeSession:
        try:
            return self.session(str(session_id))
        except KeyError:
            raise _HTTPError(404, f"unknown session {session_id!r}") from None

    def _load_weights(
        self, rec: Served, body: dict[str, Any], failure: Failure | None
    ) -> tuple[int, bytes, str, dict[str, str]]:
        path = body["path"]
        with self._lock:
            ckpt = self.checkpoints.get(path)
        if failure is None and (ckpt is None or ckpt.kind != "training"):
            failure = Failure(error=f"training checkpoint not found: {path}")
        if body.get("model_id"):  # TrainingClient.load_state*: load into an existing model
            model = self._model(body["model_id"])
        else:  # ServiceClient.create_training_client_from_state*: a new model in this session
            self._session_or_404(body.get("session_id"))
            base = body.get("base_model") or (ckpt.base_model if ckpt else self.BASE_MODEL)
            model = self._add_model(
                body["session_id"],
                int(body["model_seq_id"]),
                base,
                ckpt.lora_rank if ckpt else None,
                body.get("user_metadata"),
            )
        if failure is None and ckpt is not None:
            with self._lock:
                model.step = ckpt.step
                model.loaded_from = path
                model.optimizer_loaded = bool(body.get("optimizer"))
        rec.session_id, rec.model_id = model.session_id, model.model_id
        fut = self._future(
            {"type": "load_weights", "path": path, "model_id": model.model_id}, failure=failure, model_id=model.model_id
        )
        rec.request_id = fut["request_id"]
        return self._reply(rec, fut)

    def _retrieve(self, rec: Served, body: dict[str, Any]) -> tuple[int, bytes, str, dict[str, str]]:
        request_id = body.get("request_id")
        with self._lock:
            fut = self._futures.get(str(request_id))
            if fut is not None and fut["polls_left"] > 0:
                fut["polls_left"] -= 1
                return self._reply(rec, {"type": "try_again", "request_id": request_id, "queue_state": "active"})
        rec.request_id = request_id
        if fut is None:
            raise _HTTPError(404, f"unknown request_id {request_id!r}")
        if fut["kind"] == "proto":
            return self._reply(rec, fut["data"], content_type="application/x-protobuf")
        return self._reply(rec, fut["data"])


def usage_event(
    kind: str,
    quantity: float,
    *,
    bucket_start: _dt.datetime,
    session_id: str | None = None,
    base_model: str | None = FakeTinkerServer.BASE_MODEL,
    estimated_cost_usd: float | None = None,
    rate: float | None = None,
    cached: bool = False,
    free: bool = False,
    user_id: str | None = "org-user-1",
    user_name: str | None = "Fake User",
    project_id: str | None = None,
) -> dict[str, Any]:
    """One hourly bucket of usage in the wire shape of tinker.types.BillingUsageEvent. ``kind``:
    training, sampling_prefill (``cached``), sampling_sample (``quantity`` tokens), checkpoint
    (``quantity`` checkpoints, never priced) or storage (``quantity`` GB-hours, ``free``). ``rate``:
    the effective rate, USD per million tokens or per GB-month; without ``estimated_cost_usd`` the
    cost is computed from it as Tinker does (rate x tokens / 1e6, rate x GB-hours / 720)."""
    if kind not in USAGE_KINDS:
        raise ValueError(f"unknown usage kind {kind!r}")
    info: dict[str, Any] = {"type": kind}
    token_rate = storage_rate = None
    if kind in TOKEN_KINDS:
        info["token_count"] = int(quantity)
        token_rate = rate
        if estimated_cost_usd is None and rate is not None:
            estimated_cost_usd = rate * int(quantity) / 1_000_000
    elif kind == "checkpoint":
        info["count"] = int(quantity)
        estimated_cost_usd = None
    else:
        info["gigabyte_hours"], info["free"] = float(quantity), free
        storage_rate = rate
        if estimated_cost_usd is None and rate is not None:
            estimated_cost_usd = rate * float(quantity) / 720
    if kind == "sampling_prefill":
        info["cached"] = cached
    start = bucket_start.astimezone(_dt.UTC)
    return {
        "bucket_start": _rfc3339(start),
        "bucket_end": _rfc3339(start + _dt.timedelta(hours=1)),
        "base_model": base_model,
        "user_id": user_id,
        "user_name": user_name,
        "session_id": session_id,
        "project_id": project_id,
        "estimated_cost_usd": estimated_cost_usd,
        "effective_rate_usd_per_million_tokens": token_rate,
        "effective_rate_usd_per_gigabyte_month": storage_rate,
        "event_info": info,
    }


def _check_event(event: dict[str, Any]) -> dict[str, Any]:
    start = _parse_time(event["bucket_start"])
    if (start.minute, start.second, start.microsecond) != (0, 0, 0):
        raise ValueError(f"a bucket starts on a UTC hour: {event['bucket_start']!r}")
    if event["event_info"]["type"] not in USAGE_KINDS:
        raise ValueError(f"unknown usage kind {event['event_info']['type']!r}")
    return dict(event)


def _quantity(event: dict[str, Any]) -> float:
    info = event["event_info"]
    return float(info.get("token_count", info.get("count", info.get("gigabyte_hours", 0))))


def _parse_time(text: str) -> _dt.datetime:
    value = _dt.datetime.fromisoformat(text)
    return value.replace(tzinfo=_dt.UTC) if value.tzinfo is None else value.astimezone(_dt.UTC)


def _rfc3339(value: _dt.datetime) -> str:
    return value.astimezone(_dt.UTC).isoformat().replace("+00:00", "Z")


class _HTTPError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeTinkerServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            status, data, ctype, extra = self.fake.handle(self.command, self.path, headers, raw)
        except Exception as e:  # noqa: BLE001 - report a bug in the fake as a 500, not a hang
            self.fake.errors.append(e)
            status, data, ctype = 500, json.dumps({"detail": f"fake server bug: {e!r}"}).encode(), "application/json"
            extra = {"x-should-retry": "false"}
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve


# ---------------------------------------------------------------- protobuf helpers (the SDK's own types)
def _decode_body(raw: bytes, headers: dict[str, str]) -> bytes:
    if headers.get("content-encoding") == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return raw


def _decode_fwdbwd(raw: bytes) -> Any:
    from tinker.proto import tinker_public_pb2 as pb

    msg = pb.ForwardBackwardRequest()
    msg.ParseFromString(raw)
    return msg


def _datum_tokens(datum: Any) -> int:
    n = 0
    for chunk in datum.model_input:
        if chunk.WhichOneof("chunk") == "encoded_text":
            n += len(chunk.encoded_text.tokens) // 4  # int32
    return n


def _target_count(datum: Any) -> int:
    import numpy as np

    if "target_tokens" in datum.loss_fn_inputs:
        t = datum.loss_fn_inputs["target_tokens"]
        if t.shape:
            return int(np.prod(list(t.shape)))
        return len(t.dense) // 8
    return _datum_tokens(datum)


def _summarize_fwdbwd(req: Any) -> dict[str, Any]:
    if isinstance(req, (bytes, bytearray)):
        req = _decode_fwdbwd(bytes(req))
    return {
        "model_id": req.model_id,
        "seq_id": req.seq_id,
        "loss_fn": req.loss_fn,
        "forward_only": bool(req.forward_only),
        "n_datums": len(req.data),
        "n_tokens": sum(_datum_tokens(d) for d in req.data),
        "n_targets": sum(_target_count(d) for d in req.data),
    }


def _fwdbwd_output(req: Any, loss_per_token: float) -> bytes:
    """ForwardBackwardOutput proto: metrics loss:sum, and per-datum 'logprobs' (float32)."""
    import numpy as np
    from tinker.proto import tinker_public_pb2 as pb

    counts = [_target_count(d) for d in req.data]
    out = pb.ForwardBackwardOutput()
    out.loss_fn_output_type = "ArrayRecord"
    out.metrics["loss:sum"] = float(loss_per_token * sum(counts))
    record = out.loss_fn_outputs.add()
    record.type_tag = "ArrayRecord"
    record.num_datums = len(counts)
    values = np.full(sum(counts), -loss_per_token, dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64) * 4
    bt = record.fields["logprobs"]
    bt.data = values.tobytes()
    bt.offsets = offsets.tobytes()
    bt.dtype = pb.DTYPE_FLOAT32
    return out.SerializeToString()


def _checkpoint_json(c: FakeCheckpoint) -> dict[str, Any]:
    expires = None if c.ttl_seconds is None else (c.created + _dt.timedelta(seconds=c.ttl_seconds)).isoformat()
    segment = "weights" if c.kind == "training" else "sampler_weights"
    return {
        "checkpoint_id": f"{segment}/{c.name}",
        "checkpoint_type": c.kind,
        "time": c.created.isoformat(),
        "tinker_path": c.path,
        "size_bytes": 1024,
        "public": False,
        "user_metadata": c.user_metadata,
        "expires_at": expires,
    }
