"""Tinker's bill as ledger lines: `tinker_lines` turns one answer of Tinker's billing API
(tinker.types.BillingUsageResponse, from AdminClient.get_billing_usage) into BilledLines, and
`pull_tinker` asks Tinker for a window of any length and records it on the ledger.

One hourly bucket is one line:

- line_id: "<session>|<base_model>|<kind>", "-" for a missing session or model; the kind is
  Tinker's usage kind ("training", "sampling_prefill", "sampling_sample", "checkpoint",
  "storage"), a prefill bucket "sampling_prefill:cached" or "sampling_prefill:uncached", a free
  storage bucket "storage:free"; a bucket with no session (storage) adds "|<project>|<user>", as
  Tinker keeps one such bucket per project and user. With the bucket's interval it names the same
  bucket in every pull, so a bucket Tinker re-prices later is a restatement on the ledger, never
  a second line.
- interval: bucket_start to bucket_end.
- amount: estimated_cost_usd as its text (repr of the float, e.g. "0.0036" or "1.25e-05") in
  amount_text and, rounded half-even to micro-dollars by trainledger.bills.usd_micro_from_text,
  in amount_usd_micro; a bucket Tinker has not priced (every checkpoint bucket, and groups whose
  day has not reconciled with the invoice yet) has no amount and an empty text.
- quantities: training {"train": tokens}, prefill {"prefill": tokens} (cached or not), sampling
  {"sample": tokens}, checkpoint {"checkpoints": count}, storage {"storage_gb_hours": GB-hours}.
- attribution: run_id and account from the session's user_metadata ("ledger_run_id" and
  "ledger_account", which the Tinker integration puts on every session it opens), session_id the
  Tinker session (the ledger also finds the run of a session linked to it by LinkSession), tags
  the session's user_metadata.
- description: the kind and base model, e.g. "training Qwen/Qwen3-8B", "sampling_prefill cached
  Qwen/Qwen3-8B", "storage free".

Tinker answers at most 14 days per request, on UTC hour boundaries, and nothing that starts in
the future: pull_tinker widens the window to whole hours, ends it no later than the current hour
(inclusive), walks it in chunks of at most 14 days and sends each chunk's lines with
clients.billing.send.send_lines (with that answer's cost_data_through) before asking the next.
Pulling a window again sends the same lines: the ledger counts them unchanged.

The tinker SDK (the `tinker` extra) is imported only by pull_tinker.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from clients.billing.send import PullResult, send_lines
from clients.client import LedgerClient
from clients.models import BilledLine
from trainledger.bills import usd_micro_from_text

if TYPE_CHECKING:
    from tinker.types import BillingUsageResponse

__all__ = [
    "PROVIDER",
    "METADATA_RUN_ID",
    "METADATA_ACCOUNT",
    "WINDOW_MAX",
    "tinker_lines",
    "tinker_windows",
    "pull_tinker",
]

PROVIDER = "tinker"
METADATA_RUN_ID = "ledger_run_id"
METADATA_ACCOUNT = "ledger_account"
WINDOW_MAX = timedelta(days=14)
_HOUR = timedelta(hours=1)
_QUANTITY = {
    "training": "train",
    "sampling_prefill": "prefill",
    "sampling_sample": "sample",
    "checkpoint": "checkpoints",
    "storage": "storage_gb_hours",
}


def tinker_lines(response: BillingUsageResponse) -> tuple[list[BilledLine], datetime | None]:
    """The lines of one answer of Tinker's billing API, one per hourly bucket, in its order, and
    the answer's cost_data_through (None when it gave none)."""
    sessions: Mapping[str, Any] = response.sessions or {}
    lines: list[BilledLine] = []
    seen: set[tuple[str, datetime]] = set()
    for event in response.data:
        info = event.event_info
        kind = str(info.type)
        variant = _variant(info)
        session = event.session_id or ""
        model = event.base_model or ""
        start, end = _utc(event.bucket_start), _utc(event.bucket_end)
        line_id = f"{session or '-'}|{model or '-'}|{kind}{':' + variant if variant else ''}"
        if not session:  # e.g. storage: one bucket per project and user
            line_id = f"{line_id}|{event.project_id or '-'}|{event.user_id or '-'}"
        unique, count = line_id, 2
        while (unique, start) in seen:  # the same dimensions twice: told apart in the answer's order
            unique, count = f"{line_id}#{count}", count + 1
        seen.add((unique, start))
        metadata = _metadata(sessions.get(session)) if session else {}
        cost = event.estimated_cost_usd
        text = "" if cost is None else repr(float(cost))
        lines.append(
            BilledLine(
                line_id=unique,
                interval_start=start,
                interval_end=end,
                amount_usd_micro=None if cost is None else usd_micro_from_text(text),
                amount_text=text,
                quantities=_quantities(kind, info),
                run_id=metadata.get(METADATA_RUN_ID, ""),
                account=metadata.get(METADATA_ACCOUNT, ""),
                session_id=session,
                tags=metadata,
                description=" ".join(part for part in (kind, variant, model) if part),
            )
        )
    through = response.cost_data_through
    return lines, None if through is None else _utc(through)


def tinker_windows(start: datetime, end: datetime, *, now: datetime | None = None) -> list[tuple[datetime, datetime]]:
    """The windows pull_tinker asks for: [start, end) widened to whole UTC hours, ended at the end
    of the current hour at the latest, cut into chunks of at most 14 days (none for an empty
    window). Naive datetimes are UTC."""
    if _utc(end) <= _utc(start):
        return []
    first = _floor_hour(_utc(start))
    last = _floor_hour(_utc(end))
    if last < _utc(end):
        last += _HOUR
    ceiling = _floor_hour(_utc(now or datetime.now(UTC))) + _HOUR
    last = min(last, ceiling)
    windows: list[tuple[datetime, datetime]] = []
    while first < last:
        upto = min(first + WINDOW_MAX, last)
        windows.append((first, upto))
        first = upto
    return windows


def pull_tinker(
    ledger: LedgerClient,
    start: datetime,
    end: datetime,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float | None = None,
) -> PullResult:
    """Ask Tinker for its bill of [start, end) (AdminClient.get_billing_usage; base_url and
    api_key default to TINKER_BASE_URL and TINKER_API_KEY) and record it on the ledger as
    provider "tinker", one chunk of at most 14 days at a time. Tinker's errors (tinker.APIError:
    a missing billing role, a bad window) and the ledger's are raised as they come; the chunks
    sent before stay recorded. `timeout_s`: how long to wait for each of Tinker's answers."""
    import tinker

    admin = tinker.AdminClient(base_url=base_url, api_key=api_key)
    result = PullResult()
    for first, upto in tinker_windows(start, end):
        response = admin.get_billing_usage(first, upto).result(timeout=timeout_s)
        lines, through = tinker_lines(response)
        result = result + send_lines(ledger, PROVIDER, lines, cost_data_through=through)
    return result


def _variant(info: Any) -> str:
    if info.type == "sampling_prefill":
        return "cached" if info.cached else "uncached"
    if info.type == "storage" and getattr(info, "free", False):
        return "free"
    return ""


def _quantities(kind: str, info: Any) -> dict[str, float]:
    name = _QUANTITY.get(kind)
    if name is None:
        return {}
    if kind == "checkpoint":
        return {name: float(info.count)}
    if kind == "storage":
        return {name: float(info.gigabyte_hours)}
    return {name: float(info.token_count)}


def _metadata(session: Any) -> dict[str, str]:
    """A session's user_metadata as string tags (None when it has none)."""
    metadata = getattr(session, "user_metadata", None) or {}
    return {str(key): value for key, value in metadata.items() if isinstance(value, str)}


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _floor_hour(value: datetime) -> datetime:
    return value.replace(minute=0, second=0, microsecond=0)
