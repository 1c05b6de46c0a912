"""Any provider's bill from a file: CSV or JSON lines for RecordBilledUsage, checked whole.

    from clients.billing.files import import_bill_file, read_bill_file
    lines = read_bill_file("acme-2026-11.csv")                       # list[BilledLine], or BillFileError
    result = import_bill_file(ledger, "acme-2026-11.csv", provider="acme")   # read, then send_lines

Every row is checked before anything is returned (or sent): a file with any bad row raises
BillFileError listing every bad row, each with where it is (CSV: the file's line number, the
header being line 1; JSON: the 1-based index of the object in the list) and why. The ledger's
own checks then run on the whole file before any of it is recorded (clients.billing.send): a
line it refuses is a BillFileError naming that line too. So a file is recorded whole or not at
all.

The format
==========

A CSV file with a header row, or a JSON file holding a list of objects (or an object whose
"lines" key holds that list), with these columns / keys:

=============== ======== =================================================================
column          required what it holds
=============== ======== =================================================================
line_id         yes      the provider's id of the line; unique together with its interval
interval_start  yes      start of the billed interval, inclusive: RFC 3339 with an offset
                         ("2026-11-30T10:00:00Z", "2026-11-30T11:00:00+01:00"); a date
                         alone ("2026-11-30") means midnight UTC. A time without an offset
                         is refused (it would be a guess).
interval_end    yes      end of the interval, exclusive, same forms; after interval_start
amount          yes      the amount in dollars as decimal text ("0.0734", "12", "$1,250.00"; a
                         comma only between groups of three digits: "1,5" is refused);
                         an empty amount means the provider has not priced the line yet.
                         Kept as text; micro-dollars are that figure rounded half-even.
                         A JSON number is read from its literal, never through a float.
currency        no       "USD" (any case); empty means USD; anything else is refused
quantity, unit  no       a quantity billed and its unit ("1.5", "gpu_hours"): the line's
                         quantities {unit: quantity}; both or neither; a finite number >= 0.
                         (JSON may give "quantities": {"unit": number, ...} instead.)
run_id          no       the ledger run the line is for (a known run id attributes it)
account         no       the spend account the line is for
session_id      no       the provider's session (runs linked to it with LinkSession)
tags            no       a JSON object ({"team": "nlp"}) or k=v;k=v ("team=nlp;env=prod")
description     no       what was billed
provider        no       the provider of the row; when given, it must be the provider the
                         file is read for (``provider=``)
=============== ======== =================================================================

Any other column is refused (a misspelt column would otherwise be dropped silently). Two rows
with the same line_id and interval are refused. Example (CSV)::

    line_id,interval_start,interval_end,amount,currency,quantity,unit,run_id,account,tags,description
    gpu-7,2026-11-30T10:00:00Z,2026-11-30T11:00:00Z,3.95,USD,1,gpu_hours,run-1,,team=nlp,H100 hour
    storage,2026-11-30,2026-12-01,0.0734,,12.5,gb_days,,acme-research,,bucket ckpt

and the same as JSON::

    {"lines": [
      {"line_id": "gpu-7", "interval_start": "2026-11-30T10:00:00Z", "interval_end": "2026-11-30T11:00:00Z",
       "amount": "3.95", "quantity": 1, "unit": "gpu_hours", "run_id": "run-1", "tags": {"team": "nlp"},
       "description": "H100 hour"},
      {"line_id": "storage", "interval_start": "2026-11-30", "interval_end": "2026-12-01",
       "amount": 0.0734, "quantities": {"gb_days": 12.5}, "account": "acme-research"}
    ]}

Modal's own exports
===================

``modal billing report --csv`` and ``--json`` files are read as they are, recognised by their
columns: "Object ID", "Description", "Environment", "Interval Start", optional "Resource"
(``--show-resources``), "Cost", optional "Tags" (``--tag-names``: the tags as a JSON object);
the JSON export has the same keys in snake_case (object_id, environment, interval_start ...).
Each row becomes the line clients.billing.modal.modal_line makes (line_id the object id, or
"<object id>/<resource>"; run_id and account from the tags trainledger_run_id and
trainledger_account). The export does not say its resolution: pass ``resolution="d"`` for a
daily report (the default "h" is hourly), since interval_end is interval_start plus one
interval. An interval start without an offset is UTC, as the CLI writes it without ``--tz``.
The CLI prints its CSV through a console that wraps each row at 80 characters when the output
goes to a file; those rows are joined back here (each numbered by its first line), but an
export made with a wide console is plainer to read: ``COLUMNS=100000 modal billing report
--for yesterday -r h --show-resources --tag-names '*' --csv > modal.csv``.
Export with ``--tag-names trainledger_run_id,trainledger_account`` (or all the tags you need)
so lines can be attributed to runs.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from clients.billing.modal import PROVIDER as MODAL_PROVIDER
from clients.billing.modal import RESOLUTIONS, modal_line
from clients.models.spend import BilledLine
from trainledger.bills import usd_micro_from_text

if TYPE_CHECKING:
    from clients.billing.send import PullResult
    from clients.client import LedgerClient

__all__ = [
    "COLUMNS",
    "REQUIRED_COLUMNS",
    "MODAL_CSV_COLUMNS",
    "BadRow",
    "BillFileError",
    "BillFile",
    "read_bill_file",
    "load_bill_file",
    "import_bill_file",
]

REQUIRED_COLUMNS = ("line_id", "interval_start", "interval_end", "amount")
COLUMNS = (
    *REQUIRED_COLUMNS,
    "currency",
    "quantity",
    "unit",
    "run_id",
    "account",
    "session_id",
    "tags",
    "description",
    "provider",
)
_JSON_ONLY = ("quantities",)
#: The columns of `modal billing report --csv` (Resource and Tags only with their options).
MODAL_CSV_COLUMNS = ("Object ID", "Description", "Environment", "Interval Start", "Resource", "Cost", "Tags")
_MODAL_REQUIRED = ("Object ID", "Description", "Environment", "Interval Start", "Cost")
_MODAL_KEYS = {column: column.lower().replace(" ", "_") for column in MODAL_CSV_COLUMNS}


@dataclasses.dataclass(frozen=True)
class BadRow:
    """Why one row of a bill file was refused. `number` is the CSV line number (header = 1) or
    the JSON object's 1-based index; None for a problem of the file as a whole."""

    number: int | None
    reason: str
    unit: Literal["line", "object"] = "line"

    def __str__(self) -> str:
        return self.reason if self.number is None else f"{self.unit} {self.number}: {self.reason}"


class BillFileError(ValueError):
    """A bill file that cannot be recorded: `problems` lists every bad row (and the message,
    one per line, says the same). `stage` says what became of the file: "read" when the file
    itself is bad, "recorded" when the ledger refused a row; nothing of it in either case."""

    def __init__(self, path: str, problems: Sequence[BadRow], *, stage: Literal["read", "recorded"] = "read") -> None:
        self.path = path
        self.problems = list(problems)
        self.stage = stage
        rows = sum(1 for problem in self.problems if problem.number is not None)
        head = f"{path}: {rows} bad row{'s' if rows != 1 else ''}" if rows else f"{path}: not a bill file"
        super().__init__("\n  ".join([f"{head}, nothing {stage}:", *map(str, self.problems)]))


@dataclasses.dataclass(frozen=True)
class BillFile:
    """A bill file read whole: its lines, its shape ("lines" for the format above, "modal" for
    Modal's export) and where each line is in the file (`numbers`, one per line: CSV line
    numbers or JSON object indexes, as `unit` says)."""

    lines: list[BilledLine]
    shape: Literal["lines", "modal"]
    numbers: list[int] = dataclasses.field(default_factory=list)
    unit: Literal["line", "object"] = "line"


# -- cells --------------------------------------------------------------------------------------


def _text(value: object, name: str) -> str:
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


def _time(value: object, name: str, *, naive_utc: bool = False) -> datetime:
    text = _text(value, name)
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
    text = _text(value, "amount")
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
        text = _text(value, name)
        try:
            number = float(Decimal(text))
        except ArithmeticError:
            raise ValueError(f"{name} {text!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} {value!s} must be a finite number >= 0")
    return number


def _json(text: str) -> Any:
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
                value = _json(text)
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


# -- rows ---------------------------------------------------------------------------------------


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
        text: str = self.get(name, lambda value: _text(value, label or name), "")
        return text


def _line(cells: Mapping[str, object], provider: str | None) -> tuple[BilledLine | None, list[str]]:
    row = _Row(cells)
    line_id = row.text("line_id")
    if not line_id:
        row.problems.append("line_id is missing")
    start = row.get("interval_start", lambda v: _time(v, "interval_start"))
    end = row.get("interval_end", lambda v: _time(v, "interval_end"))
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


def _modal_line(cells: Mapping[str, object], resolution: str) -> tuple[BilledLine | None, list[str]]:
    row = _Row(cells)
    object_id = row.text("object_id", "Object ID")
    if not object_id:
        row.problems.append("Object ID is missing")
    start = row.get("interval_start", lambda v: _time(v, "Interval Start", naive_utc=True))
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


# -- files --------------------------------------------------------------------------------------


def _columns(names: Sequence[str], modal: bool) -> list[str]:
    """Problems with the columns of a file: missing required ones, unknown or repeated ones."""
    problems: list[str] = []
    known, required = (list(_MODAL_KEYS.values()), [_MODAL_KEYS[c] for c in _MODAL_REQUIRED])
    if not modal:
        known, required = [*COLUMNS, *_JSON_ONLY], list(REQUIRED_COLUMNS)
    missing = [name for name in required if name not in names]
    if missing:
        problems.append(f"missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    unknown = sorted({name for name in names if name not in known})
    if unknown:
        problems.append(
            f"unknown column{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)} (known: {', '.join(known)})"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"column{'s' if len(repeated) > 1 else ''} given twice: {', '.join(repeated)}")
    return problems


def _is_modal_csv(header: Sequence[str]) -> bool:
    return "Object ID" in header and "line_id" not in header


def _is_modal_json(keys: set[str]) -> bool:
    return "object_id" in keys and "line_id" not in keys


Rows = list[tuple[int, dict[str, object]]]


def _csv_rows(text: str, problems: list[BadRow]) -> tuple[Rows, bool]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        problems.append(BadRow(None, "the file is empty (a CSV file needs a header row)"))
        return [], False
    except csv.Error as error:
        problems.append(BadRow(1, f"not CSV: {error}"))
        return [], False
    header = [name.strip() for name in header]
    modal = _is_modal_csv(header)
    keys = [_MODAL_KEYS.get(name, name) for name in header] if modal else header
    for problem in _columns(keys, modal):
        problems.append(BadRow(1, problem))
    if problems:
        return [], modal
    if modal:
        return _modal_csv_rows(text, keys, problems), modal
    rows: Rows = []
    previous = reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            problems.append(BadRow(previous + 1, f"not CSV: {error}"))
            break
        number, previous = previous + 1, reader.line_num
        if not cells or all(not cell.strip() for cell in cells):
            continue
        if len(cells) != len(keys):
            problems.append(BadRow(number, f"has {len(cells)} fields, the header has {len(keys)}"))
            continue
        rows.append((number, dict(zip(keys, cells, strict=True))))
    return rows, modal


def _modal_csv_rows(text: str, keys: list[str], problems: list[BadRow]) -> Rows:
    """The rows of a `modal billing report --csv` export, which the CLI prints through its console:
    redirected to a file, each row is wrapped at the console's width (80 unless COLUMNS says
    otherwise), a break after a space or inside a long word, quoted or not. A row is therefore
    joined back from its physical lines (without the breaks) until it is whole: its quotes
    closed and all its fields there. Numbered by its first physical line."""
    physical = text.splitlines()
    rows: Rows = []
    pending, first = "", 0
    for number, part in enumerate(physical[1:], start=2):
        if not pending:
            if not part.strip():
                continue
            first = number
        pending += part
        if pending.count('"') % 2:
            continue  # a quoted field goes on
        try:
            (cells,) = list(csv.reader([pending]))
        except (csv.Error, ValueError) as error:
            problems.append(BadRow(first, f"not CSV: {error}"))
            pending = ""
            continue
        if len(cells) < len(keys):
            continue  # the rest of the row is on the next line
        pending = ""
        if len(cells) > len(keys):
            problems.append(BadRow(first, f"has {len(cells)} fields, the header has {len(keys)}"))
            continue
        rows.append((first, dict(zip(keys, cells, strict=True))))
    if pending:
        problems.append(BadRow(first, f"the row is cut short: {pending[:80]!r}"))
    return rows


def _json_rows(text: str, problems: list[BadRow]) -> tuple[Rows, bool]:
    try:
        document = _json(text)
    except ValueError as error:
        problems.append(BadRow(None, f"not JSON: {error}"))
        return [], False
    if isinstance(document, Mapping) and isinstance(document.get("lines"), list):
        document = document["lines"]
    if not isinstance(document, list):
        problems.append(BadRow(None, 'a JSON bill is a list of objects, or {"lines": [...]}'))
        return [], False
    keys: set[str] = set()
    for entry in document:
        if isinstance(entry, Mapping):
            keys.update(str(key) for key in entry)
    modal = _is_modal_json(keys)
    rows: Rows = []
    for index, entry in enumerate(document, start=1):
        if not isinstance(entry, Mapping):
            problems.append(BadRow(index, f"is {type(entry).__name__}, not an object", "object"))
            continue
        names = [str(key) for key in entry]
        found = [problem for problem in _columns(names, modal) if not problem.startswith("missing")]
        missing = [name for name in _required(modal) if name not in entry]
        if missing:
            found.insert(0, f"missing {', '.join(missing)}")
        if found:
            problems.append(BadRow(index, "; ".join(found), "object"))
            continue
        rows.append((index, {str(key): value for key, value in entry.items()}))
    return rows, modal


def _required(modal: bool) -> list[str]:
    return [_MODAL_KEYS[c] for c in _MODAL_REQUIRED] if modal else list(REQUIRED_COLUMNS)


def _is_json(path: Path, text: str) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return True
    if suffix == ".csv":
        return False
    return text.lstrip()[:1] in ("[", "{")


def load_bill_file(path: str | os.PathLike[str], *, provider: str | None = None, resolution: str = "h") -> BillFile:
    """Read a bill file whole (see the module docstring): its lines and its shape. Raises
    BillFileError listing every bad row; OSError when the file cannot be read; ValueError for
    an unknown resolution."""
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be 'h' (hourly) or 'd' (daily), not {resolution!r}")
    file = Path(path)
    text = file.read_text(encoding="utf-8-sig")
    problems: list[BadRow] = []
    json_file = _is_json(file, text)
    unit: Literal["line", "object"] = "object" if json_file else "line"
    rows, modal = _json_rows(text, problems) if json_file else _csv_rows(text, problems)
    lines: list[BilledLine] = []
    numbers: list[int] = []
    seen: dict[tuple[str, datetime | None, datetime | None], int] = {}
    for number, cells in rows:
        line, reasons = _modal_line(cells, resolution) if modal else _line(cells, provider)
        if line is not None:
            key = (line.line_id, line.interval_start, line.interval_end)
            if key in seen:
                reasons = [f"repeats {unit} {seen[key]} (the same line_id {line.line_id!r} and interval)"]
            else:
                seen[key] = number
                lines.append(line)
                numbers.append(number)
        if reasons:
            problems.append(BadRow(number, "; ".join(reasons), unit))
    if problems:
        problems.sort(key=lambda problem: -1 if problem.number is None else problem.number)
        raise BillFileError(os.fspath(path), problems)
    return BillFile(lines=lines, shape="modal" if modal else "lines", numbers=numbers, unit=unit)


def read_bill_file(
    path: str | os.PathLike[str], *, provider: str | None = None, resolution: str = "h"
) -> list[BilledLine]:
    """The lines of a bill file (CSV or JSON in the format of the module docstring, or Modal's
    `modal billing report --csv/--json` export), every row checked first. `provider`: rows
    naming another provider are refused. `resolution`: the interval of a Modal export ("h" or
    "d"). Raises BillFileError listing every bad row with its line number (CSV) or index (JSON)."""
    return load_bill_file(path, provider=provider, resolution=resolution).lines


def import_bill_file(
    ledger: LedgerClient,
    path: str | os.PathLike[str],
    *,
    provider: str | None = None,
    resolution: str = "h",
    cost_data_through: datetime | None = None,
) -> PullResult:
    """Read a bill file whole and record its lines under `provider` (clients.billing.send.send_lines);
    a Modal export is recorded as "modal" unless another provider is named. Nothing is recorded
    when any row is bad, by this module's checks or by the ledger's (BillFileError naming the
    row). Raises ValueError when a file of lines names no provider, and LedgerClientError."""
    from clients.billing.send import LineRefused, send_lines

    bill = load_bill_file(path, provider=provider, resolution=resolution)
    name = provider or (MODAL_PROVIDER if bill.shape == "modal" else "")
    if not name:
        raise ValueError(f"{os.fspath(path)}: name the provider of this bill (provider=...)")
    try:
        return send_lines(ledger, name, bill.lines, cost_data_through=cost_data_through)
    except LineRefused as refused:
        problem = BadRow(bill.numbers[refused.index], refused.reason, bill.unit)
        raise BillFileError(os.fspath(path), [problem], stage="recorded") from None
