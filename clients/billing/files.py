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

import dataclasses
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from clients.billing.file_cells import line_of, modal_line_of
from clients.billing.file_rows import COLUMNS, MODAL_CSV_COLUMNS, REQUIRED_COLUMNS, BadRow, csv_rows, is_json, json_rows
from clients.billing.modal import PROVIDER as MODAL_PROVIDER
from clients.billing.modal import RESOLUTIONS
from clients.models.spend import BilledLine

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


def load_bill_file(path: str | os.PathLike[str], *, provider: str | None = None, resolution: str = "h") -> BillFile:
    """Read a bill file whole (see the module docstring): its lines and its shape. Raises
    BillFileError listing every bad row; OSError when the file cannot be read; ValueError for
    an unknown resolution."""
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be 'h' (hourly) or 'd' (daily), not {resolution!r}")
    file = Path(path)
    text = file.read_text(encoding="utf-8-sig")
    problems: list[BadRow] = []
    json_file = is_json(file, text)
    unit: Literal["line", "object"] = "object" if json_file else "line"
    rows, modal = json_rows(text, problems) if json_file else csv_rows(text, problems)
    lines: list[BilledLine] = []
    numbers: list[int] = []
    seen: dict[tuple[str, datetime | None, datetime | None], int] = {}
    for number, cells in rows:
        line, reasons = modal_line_of(cells, resolution) if modal else line_of(cells, provider)
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
