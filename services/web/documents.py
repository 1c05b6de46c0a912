"""The dashboard's JSON documents: the ledger's read models encoded by msgspec (money stays integer
micro-dollars in `*_usd_micro` fields, times are RFC 3339 UTC strings), for the JSON API
(services.web.api), the pages (services.web.pages) and the live streams (services.web.live)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import msgspec
from starlette.responses import Response

from ledger.views import models

__all__ = [
    "encode",
    "json_response",
    "builtins",
    "summary_document",
    "state_document",
    "chart_document",
    "account_document",
    "history_document",
    "event_document",
]


def _hook(value: Any) -> Any:
    if isinstance(value, uuid.UUID | datetime):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


_encoder = msgspec.json.Encoder(enc_hook=_hook)


def encode(document: Any) -> bytes:
    return _encoder.encode(document)


def json_response(document: Any, status: int = 200) -> Response:
    return Response(encode(document), status_code=status, media_type="application/json")


def builtins(value: Any) -> Any:
    """A read model as JSON-ready builtins (datetimes as RFC 3339 strings)."""
    return msgspec.to_builtins(value, enc_hook=_hook)


def summary_document(run: models.RunSummary) -> dict[str, Any]:
    document: dict[str, Any] = builtins(run)
    return document


def state_document(state: models.RunState) -> dict[str, Any]:
    document: dict[str, Any] = builtins(state)
    return document


def chart_document(chart: Any) -> dict[str, Any]:
    document: dict[str, Any] = builtins(chart)
    return document


def account_document(account: models.Account) -> dict[str, Any]:
    return {
        "account": account.account,
        "parent": account.parent,
        "cap_usd_micro": account.cap_usd_micro,
        "committed_usd_micro": account.committed_usd_micro,
        "presumed_usd_micro": account.presumed_usd_micro,
        "pending_usd_micro": account.pending_usd_micro,
        "remaining_usd_micro": account.remaining_usd_micro,
        "overrun_usd_micro": account.overrun_usd_micro,
    }


def history_document(promotion: models.Promotion) -> dict[str, Any]:
    return {
        "kind": promotion.kind,
        "version": promotion.version,
        "from_version": promotion.previous,
        "verdict": builtins(promotion.verdict),
        "reason": promotion.reason,
        "at": builtins(promotion.at),
        "principal": promotion.principal,
        "position": promotion.position,
        "refusal": promotion.refusal,
        "expected_current": promotion.expected_current,
    }


def event_document(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "position": event["position"],
        "type": event["type"],
        "originator_id": event["originator_id"],
        "at": builtins(event["timestamp"]),
        "principal": event["principal"],
        "data": event["data"],
    }
