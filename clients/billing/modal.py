"""Modal's bill in the ledger: the workspace billing report as BilledLines (extra `modal`).

    from clients.billing.modal import pull_modal
    result = pull_modal(ledger, start=datetime(2026, 11, 30, tzinfo=UTC), end=datetime(2026, 12, 1, tzinfo=UTC))

`pull_modal` asks Modal for the workspace's billing report through the real SDK
(``modal.Workspace.from_context().billing.report(start=, end=, resolution=, tag_names=["*"])``,
or ``modal.Environment.from_name(environment).billing.report(...)`` for one environment), turns
it into lines with `modal_lines` and records them with clients.billing.send.send_lines under the
provider "modal". Credentials are the SDK's own (MODAL_TOKEN_ID / MODAL_TOKEN_SECRET, the active
profile, or a container's identity); pass ``client=`` for a modal.Client of your own.

How a report item becomes lines (`modal_lines`, also used for Modal's CSV/JSON exports by
clients.billing.files):

- One line per (object, interval, resource) when the item breaks its cost down by resource
  (``cost_by_resource``: CPU, Memory, a GPU type ...), its line_id ``"<object id>/<resource>"``;
  else one line per (object, interval), its line_id the object id (``ap-...``, ``sb-...``).
  A line is keyed by line_id and interval, so pulling the same hours again sends the same lines:
  the ledger answers them as unchanged, and a figure Modal revised since as a restatement.
- interval_start is Modal's (UTC); interval_end is one hour later for resolution "h" and one day
  later for "d". Modal reports whole intervals only: a report's partial last interval is left
  out, so pull up to an hour boundary.
- amount_text is Modal's decimal figure as text (``str(Decimal)``, e.g. "0.734" or "1E-7") and
  amount_usd_micro that figure in micro-dollars, rounded half-even (trainledger.bills). Money is
  never a float here: a float cost is refused.
- run_id from the tag ``trainledger_run_id`` and account from ``trainledger_account`` (what
  clients.integrations.modal.run_tags puts on the App a run executes in); tags: all of the
  item's tags; description ``"<description> (<environment>)"``.

Items are modal.billing.BillingReportItem objects or mappings with the same keys (object_id,
description, environment_name, interval_start, cost, cost_by_resource (optional), tags).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from clients.models.spend import BilledLine
from trainledger.bills import usd_micro_from_text

if TYPE_CHECKING:
    from clients.billing.send import PullResult
    from clients.client import LedgerClient

__all__ = [
    "PROVIDER",
    "RUN_TAG",
    "ACCOUNT_TAG",
    "RESOLUTIONS",
    "modal_line",
    "modal_lines",
    "pull_modal",
    "report_items",
]

PROVIDER = "modal"
RUN_TAG = "trainledger_run_id"
ACCOUNT_TAG = "trainledger_account"
#: The length of a report interval by resolution.
RESOLUTIONS: dict[str, timedelta] = {"h": timedelta(hours=1), "d": timedelta(days=1)}


def _step(resolution: str) -> timedelta:
    try:
        return RESOLUTIONS[resolution]
    except KeyError:
        raise ValueError(f"resolution must be 'h' (hourly) or 'd' (daily), not {resolution!r}") from None


def _utc(moment: datetime) -> datetime:
    """A naive time is UTC (as Modal means it); an aware one is converted to UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _cost_text(cost: object) -> str:
    if isinstance(cost, bool) or isinstance(cost, float):
        raise ValueError(f"a cost must be a Decimal or decimal text, not {type(cost).__name__} {cost!r}")
    if isinstance(cost, Decimal | int):
        return str(cost)
    if isinstance(cost, str):
        return cost.strip()
    raise ValueError(f"a cost must be a Decimal or decimal text, not {type(cost).__name__}")


def modal_line(
    *,
    object_id: str,
    description: str,
    environment_name: str,
    interval_start: datetime,
    cost: Decimal | str | int,
    resource: str | None = None,
    tags: Mapping[str, str] | None = None,
    resolution: str = "h",
) -> BilledLine:
    """One line of Modal's bill: an object's cost (or one resource's part of it) over one
    interval. Raises ValueError for a cost that is not a finite decimal, an unknown resolution
    or an empty object id."""
    if not object_id:
        raise ValueError("a report item without an object id")
    start = _utc(interval_start)
    text = _cost_text(cost)
    amount = usd_micro_from_text(text)
    tags = {str(key): str(value) for key, value in (tags or {}).items()}
    return BilledLine(
        line_id=f"{object_id}/{resource}" if resource is not None else object_id,
        interval_start=start,
        interval_end=start + _step(resolution),
        amount_usd_micro=amount,
        amount_text=text,
        currency="USD",
        run_id=tags.get(RUN_TAG, ""),
        account=tags.get(ACCOUNT_TAG, ""),
        tags=tags,
        description=f"{description} ({environment_name})" if environment_name else description,
    )


def _field(item: object, key: str, default: Any = None) -> Any:
    if isinstance(item, Mapping):
        return item.get(key, default)
    return getattr(item, key, default)


def _start(value: object) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    raise ValueError(f"interval_start must be a datetime, not {type(value).__name__}")


def _tags(value: object) -> dict[str, str]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):  # the CLI's export writes the tags as a JSON object in text
        value = json.loads(value)
    if not isinstance(value, Mapping):
        raise ValueError(f"tags must be an object of names to values, not {type(value).__name__}")
    return {str(key): str(val) for key, val in value.items()}


def modal_lines(items: Iterable[object], *, resolution: str = "h") -> list[BilledLine]:
    """The lines of a Modal billing report (see the module docstring), in the report's order,
    the resources of an item by name (a proto map, as the report's, has no order). Raises
    ValueError naming the item for an item that cannot be read (a missing object id or
    interval start, a cost that is not a decimal)."""
    _step(resolution)
    lines: list[BilledLine] = []
    for index, item in enumerate(items):
        object_id = str(_field(item, "object_id", "") or "")
        try:
            common: dict[str, Any] = dict(
                object_id=object_id,
                description=str(_field(item, "description", "") or ""),
                environment_name=str(_field(item, "environment_name", "") or ""),
                interval_start=_start(_field(item, "interval_start")),
                tags=_tags(_field(item, "tags")),
                resolution=resolution,
            )
            by_resource = _field(item, "cost_by_resource") or {}
            if by_resource:
                for resource, cost in sorted(by_resource.items()):
                    lines.append(modal_line(**common, cost=cost, resource=str(resource)))
            else:
                lines.append(modal_line(**common, cost=_field(item, "cost", "")))
        except ValueError as error:
            raise ValueError(f"report item {index} ({object_id or 'no object id'}): {error}") from None
    return lines


def report_items(
    start: datetime,
    end: datetime,
    *,
    resolution: str = "h",
    environment: str | None = None,
    client: Any = None,
) -> list[Any]:
    """Modal's billing report with every tag, through the real SDK: the workspace's, or one
    environment's. Naive times are UTC, aware ones are converted to UTC. Raises what the SDK
    raises (modal.exception.AuthError without credentials ...)."""
    import modal

    _step(resolution)
    window: dict[str, Any] = dict(start=_utc(start), end=_utc(end), resolution=resolution, tag_names=["*"])
    if environment:
        return list(modal.Environment.from_name(environment, client=client).billing.report(**window))
    return list(modal.Workspace.from_context(client=client).billing.report(**window))


def pull_modal(
    ledger: LedgerClient,
    start: datetime,
    end: datetime,
    *,
    resolution: str = "h",
    environment: str | None = None,
    client: Any = None,
) -> PullResult:
    """Pull Modal's billing report for [start, end) and record it in the ledger as provider
    "modal" (clients.billing.send.send_lines). Pulling the same window again records nothing
    new; figures Modal revised since are restated. `client`: a modal.Client (default: the SDK's
    client from the environment). Raises ValueError for a report the ledger could not take,
    the SDK's errors, and LedgerClientError."""
    from clients.billing.send import send_lines

    items = report_items(start, end, resolution=resolution, environment=environment, client=client)
    return send_lines(ledger, PROVIDER, modal_lines(items, resolution=resolution))
