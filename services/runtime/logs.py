"""The server's log: text (the default) or JSON, one object per line (`serve --log-format json`).

A JSON line holds `time` (UTC, ISO 8601), `level`, `event` (the message), `logger`, and whichever
of `method`, `code`, `principal`, `reason`, `latency_ms`, `request_id`, `run_id` and `account` the
line is about; a traceback goes in `exception`. Every call that ends with a status other than OK
is one line (`call_ended`, from services.runtime.metrics' wrapper): WARNING for a refused credential or
role, INFO for other refusals (the INTERNAL errors are logged with their traceback by
services.grpc.interceptors). Calls that succeed are not logged, they are counted (services.runtime.metrics).

No secret reaches the log: a bearer token's secret and whatever follows `Bearer ` are replaced
with `<redacted>` in every line, text or JSON, whatever logged it.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

__all__ = ["CALL_ERROR", "PRINCIPAL", "REQUEST_ID", "configure", "call_ended", "redact", "JsonFormatter"]

log = logging.getLogger("trainledger.services.calls")

# The refusal a call ended with (set by the interceptor's error boundary), for its log line.
CALL_ERROR: ContextVar[BaseException | None] = ContextVar("call_error", default=None)

# The call's token once its secret checked out: (its holder, its token id), never the secret. A
# call refused for its role is logged as the token's holder, not as "anonymous".
CALLER: ContextVar[tuple[str, str] | None] = ContextVar("caller", default=None)

# Who the call says it is (the interceptor sets both from its metadata) and its request id.
PRINCIPAL: ContextVar[str] = ContextVar("principal", default="anonymous")
REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="")

FIELDS = ("method", "code", "principal", "token_id", "reason", "latency_ms", "request_id", "run_id", "account")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# A token's shape wherever it is, even glued to other text (no word boundary: `run_tl_…`,
# or `\ntl_…` as JSON escapes a newline, would slip past one).
_TOKEN = re.compile(r"(tl_[0-9A-Za-z]{8,64}_)[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+")
_WARNED_CODES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})


def redact(text: str) -> str:
    """`text` without a bearer token's secret or an authorization value."""
    return _BEARER.sub(r"\1<redacted>", _TOKEN.sub(r"\1<redacted>", text))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(f"{name}={record.__dict__[name]}" for name in FIELDS if name in record.__dict__)
        return redact(f"{line} {extras}" if extras else line)


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            "logger": record.name,
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None and value != "":
                document[name] = value
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(document, default=str, ensure_ascii=False))


def configure(log_format: str = "text", stream: Any = None) -> None:
    """The root logger at INFO, writing `log_format` ("text" or "json") to `stream` (stderr). As
    logging.basicConfig, it leaves a root logger that has handlers already (an embedding program's,
    or a test runner's) as it is."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter(TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def call_ended(method: str, code: str, seconds: float) -> None:
    """One line for a call that ended with `code` (not OK): who, what, why, how long."""
    error = CALL_ERROR.get()
    caller = CALLER.get()
    fields: dict[str, Any] = {
        "method": method,
        "code": code,
        "principal": caller[0] if caller else PRINCIPAL.get(),
        "request_id": REQUEST_ID.get(),
        "latency_ms": round(seconds * 1000, 3),
    }
    if caller:
        fields["token_id"] = caller[1]
    message = f"{method.rsplit('/', 1)[-1]} ended {code}"
    if error is not None:
        fields["reason"] = str(getattr(error, "reason", "") or "")
        metadata = getattr(error, "metadata", None) or {}
        for name, keys in (("run_id", ("run_id", "run")), ("account", ("account",))):
            value = next((metadata[k] for k in keys if isinstance(metadata.get(k), str) and metadata[k]), "")
            if value:
                fields[name] = value[:200]
    level = logging.WARNING if code in _WARNED_CODES else logging.INFO
    log.log(level, message, extra=fields)


def http_refused(method: str, path: str, status: int, reason: str) -> None:
    """One line for a dashboard request refused by authentication or authorization, as a call's
    (call_ended): who (the token's holder and id once its secret checked out), what, why."""
    caller = CALLER.get()
    fields: dict[str, Any] = {
        "method": f"{method} {path}",
        "code": status,
        "principal": caller[0] if caller else "anonymous",
        "reason": reason,
    }
    if caller:
        fields["token_id"] = caller[1]
    log.warning("%s %s refused %d", method, path, status, extra=fields)
