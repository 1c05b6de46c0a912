"""The kinds of value the read models share: an aware UTC moment, and the literal names of a run's
status, an objective's direction and a dataset's role."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

__all__ = ["DatasetRole", "Moment", "ObjectiveMode", "RunStatus"]

#: An aware datetime (UTC as read from the views).
Moment = Annotated[datetime, msgspec.Meta(tz=True)]
RunStatus = Literal["running", "done", "failed", "stopped"]
ObjectiveMode = Literal["min", "max"]
DatasetRole = Literal["train", "eval"]
