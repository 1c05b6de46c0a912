"""The rows of a bill file, CSV or JSON, each numbered by where it is in the file (a CSV line, a
JSON object's index), with the problems of the file's columns and of rows that cannot be read:
the file's shape (the columns of clients.billing.files, or Modal's export) is found here."""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from clients.billing.file_cells import parse_json

__all__ = ["COLUMNS", "REQUIRED_COLUMNS", "MODAL_CSV_COLUMNS", "BadRow", "Rows", "csv_rows", "json_rows", "is_json"]

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


def csv_rows(text: str, problems: list[BadRow]) -> tuple[Rows, bool]:
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


def json_rows(text: str, problems: list[BadRow]) -> tuple[Rows, bool]:
    try:
        document = parse_json(text)
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


def is_json(path: Path, text: str) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return True
    if suffix == ".csv":
        return False
    return text.lstrip()[:1] in ("[", "{")
