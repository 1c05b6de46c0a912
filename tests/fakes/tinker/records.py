"""What the fake Tinker server keeps and answers: the requests it served, its sessions, models,
checkpoints and injected failures, and the HTTP error a handler raises."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
from typing import Any

API = "/api/v1/"
API_KEY = "tml-fake-key"
BASE_MODEL = "fake/tiny-llama"

# What a handler answers: HTTP status, body bytes, content type, extra headers.
Reply = tuple[int, bytes, str, dict[str, str]]


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


@dataclasses.dataclass
class Call:
    """One request as a handler sees it: `endpoint` is the path pattern (ids replaced), `record`
    what will be recorded as served, `body` the JSON body (empty for forward_backward)."""

    method: str
    path: str
    endpoint: str
    headers: dict[str, str]
    raw: bytes
    failure: Failure | None
    record: Served
    body: dict[str, Any] = dataclasses.field(default_factory=dict)


class HTTPError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def loss_per_token(step: int) -> float:
    """Deterministic, decreasing 'loss' so tests can see training progress and resumes."""
    return 0.1 + 2.0 * (0.8**step)


def checkpoint_json(c: FakeCheckpoint) -> dict[str, Any]:
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
