"""The typed result of events.proto: one event of the log, its data decoded."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from clients.models.base import Model, empty_dict

__all__ = ["Event"]


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
