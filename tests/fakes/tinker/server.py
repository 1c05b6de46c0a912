"""The fake Tinker server: its lifecycle on a loopback port, what a test configures and reads
(failures, records, the bill), and the state the handlers (tests.fakes.tinker.handlers) share."""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import re
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.tinker import handlers, wire
from tests.fakes.tinker.billing import BillSource, check_event, parse_time, quantity, rfc3339
from tests.fakes.tinker.records import (
    API,
    API_KEY,
    BASE_MODEL,
    Call,
    Failure,
    FakeCheckpoint,
    FakeModel,
    FakeSession,
    HTTPError,
    Reply,
    Served,
)


class FakeTinkerServer:
    API_KEY = API_KEY
    BASE_MODEL = BASE_MODEL

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
        self.futures: dict[str, dict[str, Any]] = {}
        self.lock = threading.RLock()
        self._failures: dict[str, list[Failure]] = {}
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
        with self.lock:
            self._failures.setdefault(endpoint, []).extend(
                Failure(status=status, error=error, category=category, body=body, headers=headers) for _ in range(times)
            )

    def served(self, endpoint: str | None = None, *, ok_only: bool = False) -> list[Served]:
        with self.lock:
            out = [r for r in self.requests if endpoint is None or r.endpoint == endpoint]
        return [r for r in out if r.status < 400] if ok_only else out

    def count(self, endpoint: str, *, ok_only: bool = False) -> int:
        return len(self.served(endpoint, ok_only=ok_only))

    def endpoints(self) -> list[str]:
        """Endpoints in the order they were served (with repeats)."""
        with self.lock:
            return [r.endpoint for r in self.requests]

    def session(self, session_id: str) -> FakeSession:
        with self.lock:
            for s in self.sessions:
                if s.session_id == session_id:
                    return s
        raise KeyError(session_id)

    def reset_records(self) -> None:
        with self.lock:
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
        with self.lock:
            self.bill_events = [check_event(event) for event in events]
            self.bill_source = source
            self.cost_data_through = cost_data_through
            if sessions:
                self.bill_sessions.update(sessions)

    def restate(self, where: Callable[[dict[str, Any]], bool], **changes: Any) -> int:
        """Change the configured buckets ``where`` selects (e.g. ``estimated_cost_usd=0.0041``), as
        Tinker does when it re-prices a bucket; the number of buckets changed."""
        changed = 0
        with self.lock:
            for index, event in enumerate(self.bill_events):
                if where(event):
                    self.bill_events[index] = check_event({**event, **changes})
                    changed += 1
        return changed

    def billing_usage(self, starting_on: _dt.datetime, ending_before: _dt.datetime) -> dict[str, Any]:
        """The JSON body served for a window (already checked)."""
        with self.lock:
            source, configured = self.bill_source, list(self.bill_events)
            cost_data_through = self.cost_data_through
            created = {s.session_id: (dict(s.user_metadata) or None) for s in self.sessions}
            overrides = dict(self.bill_sessions)
        events = configured + [check_event(e) for e in (source(starting_on, ending_before) if source else ())]
        data = [e for e in events if starting_on <= parse_time(e["bucket_start"]) < ending_before]
        data.sort(key=lambda e: (parse_time(e["bucket_start"]), -quantity(e)))
        sessions: dict[str, dict[str, Any]] = {}
        for event in data:
            sid = event.get("session_id")
            if sid is not None and sid not in sessions:
                metadata = overrides[sid] if sid in overrides else created.get(sid)
                sessions[sid] = {"user_metadata": metadata}
        return {
            "data": data,
            "sessions": sessions,
            "cost_data_through": None if cost_data_through is None else rfc3339(cost_data_through),
        }

    # ---------------------------------------------------------------- what the handlers share
    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    def future(
        self,
        result: dict[str, Any] | None = None,
        *,
        proto: bytes | None = None,
        failure: Failure | None = None,
        model_id: str | None = None,
    ) -> dict[str, Any]:
        request_id = self.new_id("req")
        if failure is not None and failure.error is not None:
            payload: dict[str, Any] = {"kind": "json", "data": {"error": failure.error, "category": failure.category}}
        elif proto is not None:
            payload = {"kind": "proto", "data": proto}
        else:
            payload = {"kind": "json", "data": result}
        payload["polls_left"] = self.try_again_polls
        with self.lock:
            self.futures[request_id] = payload
        out: dict[str, Any] = {"request_id": request_id}
        if model_id is not None:
            out["model_id"] = model_id
        return out

    def model(self, model_id: str) -> FakeModel:
        with self.lock:
            model = self.models.get(model_id)
        if model is None:
            raise HTTPError(404, f"unknown model_id {model_id!r}")
        return model

    def session_or_404(self, session_id: str | None) -> FakeSession:
        try:
            return self.session(str(session_id))
        except KeyError:
            raise HTTPError(404, f"unknown session {session_id!r}") from None

    def add_model(
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
        with self.lock:
            self.models[model.model_id] = model
        return model

    # ---------------------------------------------------------------- answering
    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        api_key = headers.get("x-api-key")
        if not path.startswith(API):
            return self.reply(Served(path, method, path, 404, api_key=api_key), {"detail": "not found"})
        endpoint = path[len(API) :].split("?", 1)[0]
        pattern = re.sub(r"^(sessions|training_runs)/[^/]+", r"\1/{id}", endpoint)
        if self.require_api_key and api_key != self.API_KEY:
            return self.reply(Served(pattern, method, path, 401, api_key=api_key), {"detail": "invalid api key"})

        failure = self._take_failure(pattern)
        if failure is not None and method != "POST" and failure.status is None:
            failure = Failure(status=500, body={"detail": failure.error})  # a GET has no future to fail
        if failure is not None and failure.status is not None:
            body = failure.body if failure.body is not None else {"detail": f"injected failure on {pattern}"}
            rec = Served(pattern, method, path, failure.status, injected=True, api_key=api_key)
            self._fill_from_body(rec, raw, headers)
            return self.reply(rec, body, extra_headers=failure.headers)

        try:
            record = Served(pattern, method, path, 200, api_key=api_key)
            return self.dispatch(Call(method, path, pattern, headers, raw, failure, record))
        except HTTPError as e:
            rec = Served(pattern, method, path, e.status, api_key=api_key)
            self._fill_from_body(rec, raw, headers)
            return self.reply(rec, {"detail": e.detail})

    def dispatch(self, call: Call) -> Reply:
        """The answer of the endpoint `call` asks (a subclass adds endpoints by answering some calls
        itself and handing the others here)."""
        return handlers.dispatch(self, call)

    def reply(
        self,
        rec: Served,
        body: Any,
        *,
        content_type: str = "application/json",
        extra_headers: dict[str, str] | None = None,
    ) -> Reply:
        with self.lock:
            self.requests.append(rec)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return rec.status, data, content_type, dict(extra_headers or {})

    def _take_failure(self, endpoint: str) -> Failure | None:
        with self.lock:
            queue = self._failures.get(endpoint)
            return queue.pop(0) if queue else None

    def _fill_from_body(self, rec: Served, raw: bytes, headers: dict[str, str]) -> None:
        try:
            if "protobuf" in headers.get("content-type", ""):
                rec.body = wire.summarize_fwdbwd(wire.decode_body(raw, headers))
            elif raw:
                rec.body = json.loads(raw)
        except Exception:  # noqa: BLE001 - a record must never break the reply
            rec.body = None
        if isinstance(rec.body, dict):
            rec.model_id = rec.body.get("model_id")
            rec.session_id = rec.body.get("session_id")
            if rec.session_id is None and rec.model_id:
                rec.session_id = str(rec.model_id).split(":", 1)[0]


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
