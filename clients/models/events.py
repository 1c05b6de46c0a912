"""The typed results of events.proto: one event of the log (its data decoded), the head of the
log's hash chain and the outcome of a verification."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from clients.models.base import Model, empty_dict

__all__ = ["Event", "ChainHead", "Verification"]


class Event(Model, frozen=True, kw_only=True):
    """One event of the log; `data_json` is its data, decoded; `digest` its link in the hash chain."""

    position: int = 0
    type: str = ""
    originator_id: str = ""
    originator_version: int = 0
    recorded_at: datetime | None = None
    principal: str = ""
    request_id: str = ""
    data_json: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    digest: str = ""


class ChainHead(Model, frozen=True, kw_only=True):
    """The head of the log's hash chain: the newest sealed position and its digest (lowercase hex).
    Written down as "POSITION:DIGEST", it is what `trainledger verify --expect-head` takes."""

    position: int = 0
    digest: str = ""


class Verification(Model, frozen=True, kw_only=True):
    """The outcome of Verify: `ok`, the head the chain was recomputed up to, how many events were
    checked and, when not ok, the first position where the log breaks, what broke there (problem)
    and the problem in words (detail)."""

    ok: bool = False
    head: ChainHead | None = None
    checked: int = 0
    broken_at: int | None = None
    problem: str = ""
    detail: str = ""


class VerifyProgress(Model, frozen=True, kw_only=True):
    """One message of VerifyStream: how far the verification got (`stage`: chain, keys, snapshots
    or views; `checked`: events of the chain checked so far), or, on the last message only, its
    `outcome`."""

    stage: str = ""
    checked: int = 0
    outcome: Verification | None = None
