"""What every read of the views decodes its rows with: stored JSON, and epochs as aware UTC
datetimes. Each view's own decoders (a row of its tables as a read model) sit beside its reads,
with the column lists they unpack."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

__all__ = ["decode", "optional_utc_time", "utc_time"]

decode = msgspec.json.decode


def optional_utc_time(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def utc_time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)
