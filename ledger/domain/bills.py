"""Providers' bills: the Bill aggregate (one per provider) and its events, and the rules a bill
line is held to.

A line is what a provider billed for one interval of one kind of usage (a Tinker hourly bucket of
a session's training tokens, a Modal app's GPU cost for an hour, a row of any provider's export).
Its identity is (provider, line id, interval): the key under which it is indexed for good
(ledger.storage.keys), so the same line sent again at any distance is recognised. Recording a bill:

- a line never seen is recorded (LinesBilled);
- a line seen with the same payload is unchanged: nothing is written;
- a line seen with another payload (the provider restated its amount or quantities) is recorded
  as a restatement (LinesRestated), which names the amount it replaces; nothing is overwritten,
  and the views count the latest payload.

Amounts are integer micro-dollars, negative for a credit, absent while the provider has not priced
the line; the provider's own figure is kept as text beside them and must round (half-even,
trainledger.bills) to the micro-dollars given. The aggregate holds only counters: the lines live in
the events and the views, so loading a provider's bill costs the same after a million lines.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.errors import Invalid
from ledger.domain.limits import (
    ID_LENGTH_MAX,
    STEP_MAX,
    USD_MICRO_MAX,
    check_id,
    check_text,
    texts_pass,
)
from ledger.domain.reasons import Reason
from trainledger.bills import AMOUNT_TEXT_MAX, usd_micro_from_text
from trainledger.text import usd_text

__all__ = [
    "Bill",
    "BILLED_LINES_MAX",
    "LINE_QUANTITIES_MAX",
    "LINE_TAGS_MAX",
    "check_line",
    "checked_lines",
    "line_key",
]

# Lines in one request, and what one line may carry.
BILLED_LINES_MAX = 10_000
LINE_QUANTITIES_MAX = 32
LINE_TAGS_MAX = 64
TAG_VALUE_MAX = 1_024
DESCRIPTION_MAX = 1_024
# The longest interval one line may bill (a monthly invoice line fits; a decade does not).
INTERVAL_MAX = timedelta(days=366)

_encode = msgspec.msgpack.Encoder(order="deterministic").encode


def line_key(line_id: str, start: datetime, end: datetime) -> str:
    """The key of a line in its provider's bill: the line id and the interval, in UTC."""
    return f"line:{line_id}|{_moment(start)[1]}|{_moment(end)[1]}"


# A bill's lines share few times: the epoch seconds of each UTC time and their text in a key are
# computed once (two UTC datetimes are equal when they are the same instant; other zones' may
# be equal across a fold, so they are computed each time).
_MOMENTS: dict[datetime, tuple[float, str]] = {}
_MOMENTS_MAX = 65_536


def _moment(moment: datetime) -> tuple[float, str]:
    """The epoch seconds of an aware datetime and their text in a line's key."""
    found = _MOMENTS.get(moment) if moment.tzinfo is UTC else None
    if found is None:
        epoch = moment.timestamp()
        found = (epoch, f"{epoch:.6f}")
        if moment.tzinfo is UTC:
            if len(_MOMENTS) >= _MOMENTS_MAX:
                _MOMENTS.clear()
            _MOMENTS[moment] = found
    return found


def _time(value: Any, field: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise Invalid(f"{field} is required, with a time zone", reason=Reason.INVALID_INTERVAL, field=field)
    return value


def check_line(raw: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A bill line checked and normalised (the dict stored in the events, with its payload digest).
    Raises Invalid naming the line's index in the request."""
    where = f"lines[{index}]"
    try:
        return _check_line(raw, where)
    except Invalid as error:
        error.metadata.setdefault("line", str(index))
        raise


def _check_line(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    line_id = check_text(raw.get("line_id", ""), f"{where}.line_id", limit=ID_LENGTH_MAX)
    if not line_id:
        raise Invalid(f"{where}.line_id is required", reason=Reason.MISSING_FIELD, field=f"{where}.line_id")
    start = _time(raw.get("interval_start"), f"{where}.interval_start")
    end = _time(raw.get("interval_end"), f"{where}.interval_end")
    if end <= start or end - start > INTERVAL_MAX:
        raise Invalid(
            f"{where} must end after it starts, within {INTERVAL_MAX.days} days",
            reason=Reason.INVALID_INTERVAL,
            field=f"{where}.interval_end",
        )
    currency = raw.get("currency") or "USD"
    if currency != "USD":
        raise Invalid(
            f"{where} is in {str(currency)[:16]!r}: the ledger records US dollars only",
            reason=Reason.CURRENCY_NOT_SUPPORTED,
            field=f"{where}.currency",
        )
    amount, text = _check_amount(raw, where)
    checked = _check_quantities(raw, where)
    tags = raw.get("tags") or {}
    if len(tags) > LINE_TAGS_MAX:
        raise Invalid(f"{where} has more than {LINE_TAGS_MAX} tags", reason=Reason.MAP_TOO_LARGE)
    for key, value in tags.items():
        check_text(key, f"{where}.tags", limit=ID_LENGTH_MAX)
        check_text(value, f"{where}.tags[{key[:64]}]", limit=TAG_VALUE_MAX)
    line = {
        "line_id": line_id,
        "start": start,
        "end": end,
        "amount": amount,
        "amount_text": text,
        "quantities": checked,
        "run_id": check_text(raw.get("run_id", ""), f"{where}.run_id", limit=ID_LENGTH_MAX),
        "account": check_text(raw.get("account", ""), f"{where}.account", limit=ID_LENGTH_MAX),
        "session_id": check_text(raw.get("session_id", ""), f"{where}.session_id", limit=ID_LENGTH_MAX),
        "tags": dict(tags),
        "description": check_text(raw.get("description", ""), f"{where}.description", limit=DESCRIPTION_MAX),
    }
    line["digest"] = line_digest(line)
    return line


def _check_amount(raw: Mapping[str, Any], where: str) -> tuple[int | None, str]:
    """A line's amount in micro-dollars (None: not given) and its decimal text, which must say the
    same amount when given."""
    amount = raw.get("amount_usd_micro")
    text = check_text(raw.get("amount_text", ""), f"{where}.amount_text", limit=AMOUNT_TEXT_MAX)
    if amount is not None:
        if type(amount) is not int:
            raise Invalid(f"{where}.amount_usd_micro must be an integer", reason=Reason.INVALID_AMOUNT)
        if abs(amount) > USD_MICRO_MAX:
            raise Invalid(f"{where}.amount_usd_micro is out of range", reason=Reason.AMOUNT_TOO_LARGE)
    if text:
        try:
            from_text = usd_micro_from_text(text)
        except ValueError:
            raise Invalid(
                f"{where}.amount_text {text!r} is not a decimal amount",
                reason=Reason.INVALID_AMOUNT,
                field=f"{where}.amount_text",
            ) from None
        if amount != from_text:
            given = "no amount" if amount is None else usd_text(amount)
            raise Invalid(
                f"{where}.amount_text {text!r} is {usd_text(from_text)} (to the micro-dollar, half-even), not {given}",
                reason=Reason.AMOUNT_TEXT_MISMATCH,
                field=f"{where}.amount_usd_micro",
            )
    return amount, text


def _check_quantities(raw: Mapping[str, Any], where: str) -> dict[str, float]:
    """A line's quantities by unit, each finite, from 0 to STEP_MAX."""
    quantities = raw.get("quantities") or {}
    if len(quantities) > LINE_QUANTITIES_MAX:
        raise Invalid(f"{where} has more than {LINE_QUANTITIES_MAX} quantities", reason=Reason.MAP_TOO_LARGE)
    checked: dict[str, float] = {}
    for unit, quantity in quantities.items():
        check_id(unit, f"{where}.quantities")
        if type(quantity) not in (int, float) or not math.isfinite(quantity) or quantity < 0 or quantity > STEP_MAX:
            raise Invalid(
                f"{where}.quantities[{unit}] must be a finite quantity from 0 to 2**53",
                reason=Reason.NON_FINITE_VALUE
                if type(quantity) is float and not math.isfinite(quantity)
                else Reason.OUT_OF_RANGE,
                field=f"{where}.quantities",
            )
        checked[unit] = float(quantity)
    return checked


# The text columns of a line and their limits, in the order check_line reads them.
_TEXT_COLUMNS = (
    ("line_id", ID_LENGTH_MAX),
    ("amount_text", AMOUNT_TEXT_MAX),
    ("run_id", ID_LENGTH_MAX),
    ("account", ID_LENGTH_MAX),
    ("session_id", ID_LENGTH_MAX),
    ("description", DESCRIPTION_MAX),
)


def checked_lines(raws: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]] | None:
    """The lines of a request checked once per batch, column by column: (line_key, the dict
    check_line makes) of each line, or None when a column holds anything these checks do not
    settle; the caller then checks line by line (check_line), which names the refusal."""
    columns = {name: [raw.get(name, "") for raw in raws] for name, _ in _TEXT_COLUMNS}
    if not all(columns["line_id"]) or not all(texts_pass(columns[name], limit) for name, limit in _TEXT_COLUMNS):
        return None
    if not all((raw.get("currency") or "USD") == "USD" for raw in raws):
        return None
    units: set[str] = set()
    tag_keys: list[Any] = []
    tag_values: list[Any] = []
    checked: list[tuple[str, dict[str, Any]]] = []
    for raw, line_id, text, run_id, account, session_id, description in zip(raws, *columns.values(), strict=True):
        start, end = raw.get("interval_start"), raw.get("interval_end")
        if not (_aware(start) and _aware(end)) or end <= start or end - start > INTERVAL_MAX:
            return None
        amount = raw.get("amount_usd_micro")
        if amount is not None and (type(amount) is not int or abs(amount) > USD_MICRO_MAX):
            return None
        if text and not _text_says(text, amount):
            return None
        quantities = _quantities_or_none(raw.get("quantities") or {}, units)
        tags = raw.get("tags") or {}
        if quantities is None or type(tags) is not dict or len(tags) > LINE_TAGS_MAX:
            return None
        if tags:
            tag_keys.extend(tags)
            tag_values.extend(tags.values())
        (start_s, start_text), (end_s, end_text) = _moment(start), _moment(end)
        # The payload line_digest digests (times as epoch seconds), then made the line in place.
        line = {
            "line_id": line_id,
            "start": start_s,
            "end": end_s,
            "amount": amount,
            "amount_text": text,
            "quantities": quantities,
            "run_id": run_id,
            "account": account,
            "session_id": session_id,
            "tags": dict(tags),
            "description": description,
        }
        digest = hashlib.blake2b(_encode(line), digest_size=16).hexdigest()
        line["start"], line["end"], line["digest"] = start, end, digest
        checked.append((f"line:{line_id}|{start_text}|{end_text}", line))
    if not (texts_pass(tag_keys, ID_LENGTH_MAX) and texts_pass(tag_values, TAG_VALUE_MAX)):
        return None
    return checked


def _aware(value: Any) -> bool:
    return isinstance(value, datetime) and value.tzinfo is not None


def _text_says(text: str, amount: int | None) -> bool:
    """Whether the amount's text is decimal text of that amount (None: not given)."""
    try:
        return amount == usd_micro_from_text(text)
    except ValueError:
        return False


def _quantities_or_none(quantities: Mapping[str, Any], units: set[str]) -> dict[str, float] | None:
    """_check_quantities' answer when it would pass (`units`: the units already checked), else None."""
    if type(quantities) is not dict or len(quantities) > LINE_QUANTITIES_MAX:
        return None
    checked: dict[str, float] = {}
    for unit, quantity in quantities.items():
        if unit not in units:
            try:
                check_id(unit, "quantities")
            except Invalid:
                return None
            units.add(unit)
        if type(quantity) not in (int, float) or not math.isfinite(quantity) or quantity < 0 or quantity > STEP_MAX:
            return None
        checked[unit] = float(quantity)
    return checked


def line_digest(line: Mapping[str, Any]) -> str:
    """The digest of a line's payload (everything but the digest itself), to tell a line sent
    again from a restatement."""
    payload = {key: value for key, value in line.items() if key not in ("digest", "previous")}
    payload["start"] = payload["start"].timestamp()
    payload["end"] = payload["end"].timestamp()
    return hashlib.blake2b(_encode(payload), digest_size=16).hexdigest()


class Bill(LedgerAggregate):
    """One provider's bill as the ledger has recorded it: counters only."""

    if TYPE_CHECKING:  # Set by the events' apply(): the state, as the type checker sees it.
        provider: str
        lines: int
        restatements: int
        cost_data_through: datetime | None

    def __init__(self) -> None:
        pass

    class Opened(LedgerAggregate.Created):
        provider: str

        def apply(self, bill: Bill) -> None:
            bill.provider = self.provider
            bill.lines = 0
            bill.restatements = 0
            bill.cost_data_through = None

    class LinesBilled(LedgerAggregate.Event):
        lines: list[dict[str, Any]]
        cost_data_through: datetime | None

        def apply(self, bill: Bill) -> None:
            bill.lines += len(self.lines)
            if self.cost_data_through is not None:
                bill.cost_data_through = self.cost_data_through

    class LinesRestated(LedgerAggregate.Event):
        # Each line carries "previous": {"amount", "amount_text", "digest", "version"} of the
        # payload it restates.
        lines: list[dict[str, Any]]

        def apply(self, bill: Bill) -> None:
            bill.restatements += len(self.lines)

    @classmethod
    def scratch(cls) -> Bill:
        bill = cls.__new__(cls)
        bill.__dict__.update(provider="", lines=0, restatements=0, cost_data_through=None)
        return bill

    def record_lines(
        self,
        audit: Audit,
        new: list[dict[str, Any]],
        restated: list[dict[str, Any]],
        cost_data_through: datetime | None,
    ) -> None:
        """Record the new lines and the restatements (each already carries its "previous"); a
        new cost_data_through with nothing else to record is recorded alone."""
        moved = cost_data_through is not None and cost_data_through != self.cost_data_through
        if new or moved:
            self.record(self.LinesBilled, audit, lines=new, cost_data_through=cost_data_through if moved else None)
        if restated:
            self.record(self.LinesRestated, audit, lines=restated)
