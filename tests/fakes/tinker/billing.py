"""Tinker's bill as the fake serves it: hourly usage buckets in the wire shape of
``BillingUsageEvent`` (``usage_event``), and the query window checked as Tinker checks it."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from tests.fakes.tinker.records import BASE_MODEL, HTTPError

BILLING = "billing/usage/events"
BILLING_WINDOW_MAX = _dt.timedelta(days=14)
TOKEN_KINDS = ("training", "sampling_prefill", "sampling_sample")
USAGE_KINDS = (*TOKEN_KINDS, "checkpoint", "storage")

BillSource = Callable[[_dt.datetime, _dt.datetime], Iterable[dict[str, Any]]]


def usage_event(
    kind: str,
    quantity: float,
    *,
    bucket_start: _dt.datetime,
    session_id: str | None = None,
    base_model: str | None = BASE_MODEL,
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
        "bucket_start": rfc3339(start),
        "bucket_end": rfc3339(start + _dt.timedelta(hours=1)),
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


def check_event(event: dict[str, Any]) -> dict[str, Any]:
    start = parse_time(event["bucket_start"])
    if (start.minute, start.second, start.microsecond) != (0, 0, 0):
        raise ValueError(f"a bucket starts on a UTC hour: {event['bucket_start']!r}")
    if event["event_info"]["type"] not in USAGE_KINDS:
        raise ValueError(f"unknown usage kind {event['event_info']['type']!r}")
    return dict(event)


def quantity(event: dict[str, Any]) -> float:
    info = event["event_info"]
    return float(info.get("token_count", info.get("count", info.get("gigabyte_hours", 0))))


def parse_time(text: str) -> _dt.datetime:
    value = _dt.datetime.fromisoformat(text)
    return value.replace(tzinfo=_dt.UTC) if value.tzinfo is None else value.astimezone(_dt.UTC)


def rfc3339(value: _dt.datetime) -> str:
    return value.astimezone(_dt.UTC).isoformat().replace("+00:00", "Z")


def window(path: str, now: Callable[[], _dt.datetime]) -> tuple[_dt.datetime, _dt.datetime]:
    """starting_on and ending_before of a billing query, checked as Tinker checks them."""
    query = parse_qs(path.split("?", 1)[1] if "?" in path else "")
    times: list[_dt.datetime] = []
    for name in ("starting_on", "ending_before"):
        values = query.get(name)
        if not values:
            raise HTTPError(400, f"{name} is required")
        try:
            value = parse_time(values[0])
        except ValueError:
            raise HTTPError(400, f"{name} is not an RFC 3339 time: {values[0]!r}") from None
        if (value.minute, value.second, value.microsecond) != (0, 0, 0):
            raise HTTPError(400, f"{name} must be aligned to a UTC hour boundary: {values[0]!r}")
        times.append(value)
    starting_on, ending_before = times
    if starting_on > now():
        raise HTTPError(400, "starting_on must not be in the future")
    if ending_before <= starting_on:
        raise HTTPError(400, "ending_before must be after starting_on")
    if ending_before - starting_on > BILLING_WINDOW_MAX:
        raise HTTPError(400, "the window must be at most 14 days")
    return starting_on, ending_before
