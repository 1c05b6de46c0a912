"""Limits on everything that comes in, and the validators that enforce them.

Every command checks its input here before anything is recorded, so a refused command leaves the
log unchanged. The numbers are deliberately generous for real trainers and small enough that no
single request can hurt the server.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ledger.errors import InvalidArgumentError

__all__ = [
    "BATCH_STEPS_MAX",
    "METRICS_PER_BATCH_MAX",
    "STRING_LENGTH_MAX",
    "ID_LENGTH_MAX",
    "MAP_ENTRIES_MAX",
    "ERROR_LENGTH_MAX",
    "USD_MICRO_MAX",
    "PAGE_SIZE_MAX",
    "PARENT_DEPTH_MAX",
    "DOCUMENT_DEPTH_MAX",
    "REQUEST_BYTES_MAX",
    "DOCUMENT_REQUEST_BYTES_MAX",
    "REQUEST_BYTES_IN_FLIGHT_MAX",
    "check_id",
    "check_text",
    "check_usd_micro",
    "check_int",
    "check_document",
]

BATCH_STEPS_MAX = 10_000
METRICS_PER_BATCH_MAX = 256
STRING_LENGTH_MAX = 4_096
ID_LENGTH_MAX = 256
MAP_ENTRIES_MAX = 256
DOCUMENT_DEPTH_MAX = 8
ERROR_LENGTH_MAX = 2_000
# Ten million dollars in one amount is far above any single training call and far below int64.
USD_MICRO_MAX = 10_000_000 * 1_000_000
STEP_MAX = 2**53
PAGE_SIZE_MAX = 10_000
PARENT_DEPTH_MAX = 8
# One request on the wire: a batch of 1,000 steps with 256 metrics is about 2 MiB.
REQUEST_BYTES_MAX = 8 * 1024 * 1024
# A request that carries a document (spec, summary, metadata, gate stats): protobuf decodes a
# Struct's maps in time that grows faster than their size, so these are held far lower.
DOCUMENT_REQUEST_BYTES_MAX = 256 * 1024
# All requests the server holds at once: decoding and recording one costs about ten times its
# bytes on the wire in memory.
REQUEST_BYTES_IN_FLIGHT_MAX = 64 * 1024 * 1024
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def check_id(value: Any, field: str, *, required: bool = True) -> str:
    """An identifier: a non-empty string of at most ID_LENGTH_MAX characters."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} must be a string", reason="INVALID_FIELD", field=field)
    if not value:
        if required:
            raise InvalidArgumentError(f"{field} is required", reason="MISSING_FIELD", field=field)
        return value
    if len(value) > ID_LENGTH_MAX:
        raise InvalidArgumentError(
            f"{field} is longer than {ID_LENGTH_MAX} characters",
            reason="STRING_TOO_LONG",
            field=field,
            limit=ID_LENGTH_MAX,
        )
    if _CONTROL_CHARACTERS.search(value):
        raise InvalidArgumentError(
            f"{field} contains control characters", reason="INVALID_FIELD", field=field
        )
    return value


def check_text(value: Any, field: str, *, limit: int = STRING_LENGTH_MAX) -> str:
    """Free text of at most `limit` characters (may be empty)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} must be a string", reason="INVALID_FIELD", field=field)
    if "\x00" in value:
        raise InvalidArgumentError(f"{field} contains a NUL character", reason="INVALID_FIELD", field=field)
    if len(value) > limit:
        raise InvalidArgumentError(
            f"{field} is longer than {limit} characters",
            reason="STRING_TOO_LONG",
            field=field,
            limit=limit,
        )
    return value


def check_int(value: Any, field: str, *, minimum: int = 0, maximum: int = STEP_MAX) -> int:
    """An integer within [minimum, maximum]; bools and floats are refused."""
    if type(value) is not int:
        raise InvalidArgumentError(f"{field} must be an integer", reason="INVALID_FIELD", field=field)
    if value < minimum or value > maximum:
        raise InvalidArgumentError(
            f"{field} must be between {minimum} and {maximum}",
            reason="OUT_OF_RANGE",
            field=field,
        )
    return value


def check_usd_micro(value: Any, field: str) -> int:
    """Money: integer micro-dollars, never negative, never a float."""
    if type(value) is not int:
        raise InvalidArgumentError(
            f"{field} must be integer micro-dollars", reason="INVALID_AMOUNT", field=field
        )
    if value < 0:
        raise InvalidArgumentError(f"{field} must not be negative", reason="NEGATIVE_AMOUNT", field=field)
    if value > USD_MICRO_MAX:
        raise InvalidArgumentError(
            f"{field} is above the limit of {USD_MICRO_MAX} micro-dollars",
            reason="AMOUNT_TOO_LARGE",
            field=field,
        )
    return value


def check_document(value: Any, field: str) -> dict[str, Any]:
    """A free-form JSON-like document (spec, summary, metadata): string keys; values None,
    bool, int, finite float, string, or lists and documents of those, bounded in size."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{field} must be a mapping", reason="INVALID_FIELD", field=field)
    return _check_node(value, field, 0)  # type: ignore[no-any-return]


def _check_node(value: Any, field: str, depth: int) -> Any:
    if depth > DOCUMENT_DEPTH_MAX:
        raise InvalidArgumentError(f"{field} is nested too deeply", reason="DOCUMENT_TOO_DEEP", field=field)
    if value is None or isinstance(value, bool | int | str):
        if isinstance(value, str) and len(value) > STRING_LENGTH_MAX:
            raise InvalidArgumentError(
                f"a string in {field} is too long", reason="STRING_TOO_LONG", field=field
            )
        if isinstance(value, str) and "\x00" in value:
            raise InvalidArgumentError(f"a string in {field} contains a NUL character", reason="INVALID_FIELD", field=field)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            raise InvalidArgumentError(f"an integer in {field} is out of range", reason="OUT_OF_RANGE", field=field)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgumentError(
                f"{field} holds a non-finite number", reason="NON_FINITE_VALUE", field=field
            )
        return value
    if isinstance(value, Mapping):
        if len(value) > MAP_ENTRIES_MAX:
            raise InvalidArgumentError(
                f"{field} has more than {MAP_ENTRIES_MAX} entries",
                reason="MAP_TOO_LARGE",
                field=field,
                limit=MAP_ENTRIES_MAX,
            )
        result = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or len(key) > ID_LENGTH_MAX or "\x00" in key:
                raise InvalidArgumentError(f"{field} has an invalid key", reason="INVALID_FIELD", field=field)
            result[key] = _check_node(item, field, depth + 1)
        return result
    if isinstance(value, Sequence):
        if len(value) > MAP_ENTRIES_MAX:
            raise InvalidArgumentError(
                f"a list in {field} has more than {MAP_ENTRIES_MAX} items",
                reason="MAP_TOO_LARGE",
                field=field,
            )
        return [_check_node(item, field, depth + 1) for item in value]
    raise InvalidArgumentError(
        f"{field} holds a value of type {type(value).__name__}", reason="INVALID_FIELD", field=field
    )
