"""The cells of one row of a bill file made into a BilledLine: text, times, amounts, quantities
and tags read strictly (see clients.billing.files for the format), every problem of the row
collected rather than the first; a Modal export's row through clients.billing.modal."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from clients.billing.modal import modal_line
from clients.models.spend import BilledLine
from trainledger.bills import usd_micro_from_text

__all__ = ["cell_text", "cell_time", "parse_json", "line_of", "modal_line_of"]


def cell_text(value: object, name: str) -> str:
    """A cell as text: strings stripped; JSON numbers by their literal; null as empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        raise ValueError(f"{name} must be text, not {str(value).lower()}")
    if isinstance(value, int | Decimal):
        return str(value)
    raise ValueError(f"{name} must be text, not {type(value).__name__}")


def cell_time(value: object, name: str, *, naive_utc: bool = False) -> datetime:
    text = cell_text(value, name)
    if not text:
        raise ValueError(f"{name} is missing")
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name} {text!r} is not an RFC 3339 time or a date") from None
    if moment.tzinfo is None:
        if not naive_utc:
            raise ValueError(f"{name} {text!r} has no UTC offset (write Z or +00:00)")
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _amount(value: object) -> tuple[int | None, str]:
    text = cell_text(value, "amount")
    if not text:
        return None, ""
    try:
        return usd_micro_from_text(text), text
    except ValueError:
        raise ValueError(f"amount {text!r} is not a decimal amount in dollars") from None


def _quantity(value: object, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, not {str(value).lower()}")
    if isinstance(value, int | float | Decimal):
        number = float(value)
    else:
        text = cell_text(value, name)
        try:
            number = float(Decimal(text))
        except ArithmeticError:
            raise ValueError(f"{name} {text!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} {value!s} must be a finite number >= 0")
    return number


def parse_json(text: str) -> Any:
    """A JSON document, its numbers read from their literals (never through a float, and an
    integer of any length as a Decimal, not an int that Python refuses past 4,300 digits).
    Raises ValueError for text that is not JSON or is nested too deeply to read."""
    try:
        return json.loads(text, parse_float=Decimal, parse_int=Decimal)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _tags(value: object) -> dict[str, str]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        if text.startswith("{"):
            try:
                value = parse_json(text)
            except ValueError as error:
                raise ValueError(f"tags {text[:64]!r} is not a JSON object ({error})") from None
        else:
            tags: dict[str, str] = {}
            for pair in text.split(";"):
                if not pair.strip():
                    continue
                key, sep, tag = pair.partition("=")
                if not sep or not key.strip():
                    raise ValueError(f"tags {text!r}: {pair.strip()!r} is not name=value")
                if key.strip() in tags:
                    raise ValueError(f"tags {text!r}: {key.strip()!r} given twice")
                tags[key.strip()] = tag.strip()
            return tags
    if not isinstance(value, Mapping):
        raise ValueError("tags must be an object of names to text values")
    out: dict[str, str] = {}
    for key, tag in value.items():
        if not isinstance(tag, str | int | Decimal) or isinstance(tag, bool):
            raise ValueError(f"tag {key!r} must be text")
        out[str(key)] = str(tag)
    return out


class _Row:
    """Reads the cells of one row, collecting every problem instead of stopping at the first."""

    def __init__(self, cells: Mapping[str, object]) -> None:
        self.cells = cells
        self.problems: list[str] = []

    def get(self, name: str, parse: Callable[[object], Any], default: Any = None) -> Any:
        try:
            return parse(self.cells.get(name))
        except ValueError as error:
            self.problems.append(str(error))
            return default

    def text(self, name: str, label: str = "") -> str:
        text: str = self.get(name, lambda value: cell_text(value, label or name), "")
        return text


def line_of(cells: Mapping[str, object], provider: str | None) -> tuple[BilledLine | None, list[str]]:
    row = _Row(cells)
    line_id = row.text("line_id")
    if not line_id:
        row.problems.append("line_id is missing")
    start = row.get("interval_start", lambda v: cell_time(v, "interval_start"))
    end = row.get("interval_end", lambda v: cell_time(v, "interval_end"))
    if start is not None and end is not None and end <= start:
        row.problems.append(f"interval_end {end.isoformat()} is not after interval_start {start.isoformat()}")
    amount, amount_text = row.get("amount", _amount, (None, ""))
    currency = row.text("currency").upper() or "USD"
    if currency != "USD":
        row.problems.append(f"currency {currency!r} is not USD (only USD bills are recorded)")
    quantities: dict[str, float] = {}
    unit = row.text("unit")
    has_quantity = cells.get("quantity") not in (None, "")
    if has_quantity and not unit:
        row.problems.append("quantity without a unit")
    elif unit and not has_quantity:
        row.problems.append(f"unit {unit!r} without a quantity")
    elif has_quantity:
        quantity = row.get("quantity", lambda v: _quantity(v, "quantity"))
        if quantity is not None:
            quantities[unit] = quantity
    if cells.get("quantities") not in (None, {}):
        given = cells["quantities"]
        if quantities:
            row.problems.append("both quantity/unit and quantities")
        elif not isinstance(given, Mapping):
            row.problems.append("quantities must be an object of units to numbers")
        else:
            for name, value in given.items():
                try:
                    quantities[str(name)] = _quantity(value, f"quantities[{str(name)!r}]")
                except ValueError as error:
                    row.problems.append(str(error))
    own = row.text("provider")
    if own and provider is not None and own != provider:
        row.problems.append(f"provider {own!r} is not {provider!r}")
    texts = {name: row.text(name) for name in ("run_id", "account", "session_id")}
    description = row.text("description")
    tags = row.get("tags", _tags, {})
    if row.problems:
        return None, row.problems
    line = BilledLine(
        line_id=line_id,
        interval_start=start,
        interval_end=end,
        amount_usd_micro=amount,
        amount_text=amount_text,
        currency="USD",
        quantities=quantities,
        tags=tags,
        description=description,
        **texts,
    )
    return line, []


def modal_line_of(cells: Mapping[str, object], resolution: str) -> tuple[BilledLine | None, list[str]]:
    row = _Row(cells)
    object_id = row.text("object_id", "Object ID")
    if not object_id:
        row.problems.append("Object ID is missing")
    start = row.get("interval_start", lambda v: cell_time(v, "Interval Start", naive_utc=True))
    cost = row.text("cost", "Cost")
    if cost:
        try:
            usd_micro_from_text(cost)
        except ValueError:
            row.problems.append(f"Cost {cost!r} is not a decimal amount in dollars")
    else:
        row.problems.append("Cost is missing")
    tags = row.get("tags", _tags, {})
    resource = row.text("resource", "Resource") if "resource" in cells else None
    if "resource" in cells and not resource:
        row.problems.append("Resource is missing")
    texts = {name: row.text(name) for name in ("description", "environment")}
    if row.problems:
        return None, row.problems
    line = modal_line(
        object_id=object_id,
        description=texts["description"],
        environment_name=texts["environment"],
        interval_start=start,
        cost=cost,
        resource=resource,
        tags=tags,
        resolution=resolution,
    )
    return line, []
