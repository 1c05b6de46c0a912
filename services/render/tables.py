"""Plain-text output for the CLI: aligned tables, money, times, cost bases, and JSON (a read model
as an object of its fields).

Tables fit the terminal once the CLI asks them to (`fit_to`: the width of COLUMNS or of the
terminal; none when the output is a pipe or file and COLUMNS is unset, so scripts see whole
values): the widest text columns are cut, each keeping a start of its values and ending in "…",
until the table fits; numbers, amounts and times are never cut. `--wide` leaves every value whole.
Times print in UTC with their zone, amounts in dollars (trainledger.bills.usd_text), a metric
named *_bytes in B/KB/MB/GB/TB (`metric_value`, as the dashboard's charts and tables).

Every value a table or a field list shows is escaped where it is not printable (line breaks,
terminal escapes, C1 controls, bidi overrides: `\\n`, `\\x1b`, `\\u202e`), with backslashes doubled,
so no stored text can add a row, move the cursor or reorder what is shown.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from trainledger.bills import usd_text

if TYPE_CHECKING:
    import msgspec

__all__ = [
    "eta_text",
    "metric_value",
    "table",
    "fields",
    "usd",
    "when",
    "basis_text",
    "to_json",
    "printable",
    "fit_to",
    "terminal_width",
    "ELLIPSIS",
]

ELLIPSIS = "…"
# A cut column keeps at least this many characters (its header's, when longer).
CUT_MIN = 8
_width: list[int | None] = [None]  # The width tables fit; None: values whole (the library's default).


def terminal_width() -> int | None:
    """The width to fit: COLUMNS when set, else the terminal's when stdout is one, else None."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout is not None and sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def fit_to(width: int | None) -> None:
    """Fit every later table to `width` characters (None: show values whole)."""
    _width[0] = width


def usd(micro: int | None) -> str:
    """Micro-dollars as dollars, exactly: 1_500 -> "$0.001500"; None -> "-" (no cap)."""
    return "-" if micro is None else usd_text(micro)


def when(moment: datetime | None) -> str:
    """A time in UTC with its zone, to the second: "2026-12-01 06:55:02 UTC"; None -> "-"."""
    if moment is None:
        return "-"
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` with every character that is not printable (and the backslash) escaped."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(
        character if character.isprintable() and character != "\\" else _escape(character) for character in text
    )


def _escape(character: str) -> str:
    if character in _ESCAPES:
        return _ESCAPES[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def eta_text(seconds_left: float, now: datetime) -> str:
    """When a run should reach its last step, as `runs show` and `watch` both print it: the time
    left to its two largest units, then the time of day in UTC it falls at (with the date when
    not today): "14m 30s (07:10 UTC)", "2d 3h (2026-12-03 09:56 UTC)"."""
    left = max(0, int(round(seconds_left)))
    at = (now + timedelta(seconds=left)).astimezone(UTC)
    parts = [(left // 86_400, "d"), (left % 86_400 // 3_600, "h"), (left % 3_600 // 60, "m"), (left % 60, "s")]
    first = next((i for i, (count, _) in enumerate(parts) if count), len(parts) - 1)
    shown = [f"{parts[first][0]}{parts[first][1]}"]
    if first < len(parts) - 1:
        shown.append(f"{parts[first + 1][0]:0{1 if first == 0 else 2}d}{parts[first + 1][1]}")
    day = "" if at.date() == now.astimezone(UTC).date() else f"{at:%Y-%m-%d} "
    return f"{' '.join(shown)} ({day}{at:%H:%M} UTC)"


BYTE_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def metric_value(name: str, value: float) -> str:
    """A metric's value as a table shows it: a metric named *_bytes in B/KB/MB/GB/TB (powers
    of 1000, 4 significant digits: "49.81 MB"), any other to 6 significant digits."""
    if not name.endswith("_bytes") or value != value or value in (float("inf"), float("-inf")):
        return f"{value:.6g}"
    scaled, unit = float(value), 0
    while unit < len(BYTE_UNITS) - 1 and abs(float(f"{scaled:.4g}")) >= 1000:
        scaled, unit = scaled / 1000, unit + 1
    return f"{float(f'{scaled:.4g}'):g} {BYTE_UNITS[unit]}"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, datetime):
        return when(value)
    return printable(str(value))


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    keep: Sequence[int] = (),
    optional: Sequence[int] = (),
    first: Sequence[int] = (),
) -> str:
    """An aligned table; numbers are right-aligned. Fitted to the width `fit_to` set: text
    columns are cut (never those in `keep`, nor numbers, amounts or times; those in `first` as
    far as they go before the others, then the widest first). The `optional` columns are left
    out, in that order, while cutting only the `first` columns cannot make the table fit."""
    width = _width[0]
    shown = list(range(len(headers)))
    for dropped in range(len(optional) + 1):
        shown = [i for i in range(len(headers)) if i not in optional[:dropped]]
        if width is None:
            break
        # Optional columns go before any column but those in `first` is cut.
        whole = [shown.index(i) for i in shown if i not in first]
        if _least_width([headers[i] for i in shown], [[row[i] for i in shown] for row in rows], whole) <= width:
            break
    return _table(
        [headers[i] for i in shown],
        [[row[i] for i in shown] for row in rows],
        [shown.index(i) for i in keep if i in shown],
        [shown.index(i) for i in first if i in shown],
    )


def _layout(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], keep: Sequence[int]
) -> tuple[list[list[str]], list[bool], list[int], list[int]]:
    """The cells, which columns are numeric, their whole widths and the columns that may be cut."""
    cells = [[_cell(value) for value in row] for row in rows]
    numeric = []
    for i in range(len(headers)):
        given = [row[i] for row in rows if row[i] is not None]
        numeric.append(bool(given) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in given))
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    cuttable = [
        i
        for i in range(len(headers))
        if i not in keep and not numeric[i] and not all(_fixed(row[i]) for row in rows if row[i] is not None)
    ]
    return cells, numeric, widths, cuttable


def _least_width(headers: Sequence[str], rows: Sequence[Sequence[Any]], keep: Sequence[int]) -> int:
    """The narrowest the table can be cut to."""
    _, _, widths, cuttable = _layout(headers, rows, keep)
    least = [min(w, max(CUT_MIN, len(headers[i]))) if i in cuttable else w for i, w in enumerate(widths)]
    return sum(least) + 2 * (len(least) - 1)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], keep: Sequence[int], first: Sequence[int]) -> str:
    cells, numeric, widths, cuttable = _layout(headers, rows, keep)
    if _width[0] is not None:
        floors = [len(h) for h in headers]
        widths = _fit(widths, floors, [i for i in first if i in cuttable], _width[0])
        widths = _fit(widths, floors, cuttable, _width[0])
        cells = [[_cut(value, widths[i]) for i, value in enumerate(row)] for row in cells]

    def line(values: Sequence[str]) -> str:
        cells = (v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=False)))
        return "  ".join(cells).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(row) for row in cells)])


def _fixed(value: Any) -> bool:
    """Whether a value is one that is never cut: a time or an amount."""
    if isinstance(value, datetime):
        return True
    return isinstance(value, str) and (value.startswith(("$", "-$")) or value.endswith(" UTC") or value == "-")


def _fit(widths: list[int], headers: list[int], cuttable: list[int], width: int) -> list[int]:
    """Column widths that fit `width` (two spaces between columns), taking from the widest
    cuttable column one character at a time, never below CUT_MIN or its header."""
    widths = list(widths)
    floor = {i: max(CUT_MIN, headers[i]) for i in cuttable}
    total = sum(widths) + 2 * (len(widths) - 1)
    while total > width:
        candidates = [i for i in cuttable if widths[i] > floor[i]]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: widths[i])
        widths[widest] -= 1
        total -= 1
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def fields(pairs: Sequence[tuple[str, Any]]) -> str:
    """Label: value lines, labels aligned."""
    width = max(len(label) for label, _ in pairs)
    return "\n".join(f"{label + ':':<{width + 1}} {_cell(value)}" for label, value in pairs)


def basis_text(basis: Mapping[str, Any] | msgspec.Struct | None) -> str:
    """A cost basis on one line: what was priced, at what price, from which sheet. Takes the
    ledger's (a dict) or the client's (clients.models.CostBasis)."""
    if basis is not None and not isinstance(basis, Mapping):
        import msgspec  # Here: the CLI's parser does not need it.

        return basis_text(msgspec.to_builtins(basis))
    if not basis or not (basis.get("tokens") or basis.get("gpu") or basis.get("price_sheet")):
        return "-"
    parts = [
        f"{line['tokens']:,} {line['token_class']} @ {usd(line['usd_micro_per_million_tokens'])}/M"
        for line in basis.get("tokens") or ()
    ]
    gpu = basis.get("gpu")
    if gpu:
        hours = gpu["gpu_milliseconds"] / 3_600_000
        parts.append(
            f"{hours:.4g} h x {gpu.get('gpu_count') or 1} {gpu.get('gpu_type') or 'GPU'}"
            f" @ {usd(gpu['usd_micro_per_gpu_hour'])}/h"
        )
    sheet = basis.get("price_sheet")
    return "; ".join(parts) + (f" [{sheet}]" if sheet else "")


def _default(value: Any) -> Any:
    import msgspec

    if isinstance(value, msgspec.Struct):  # A read model: its fields by name.
        return msgspec.structs.asdict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # A receipt: its fields by name.
        return dataclasses.asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def to_json(value: Any, *, indent: int | None = 2) -> str:
    return json.dumps(value, default=_default, indent=indent, separators=None if indent else (",", ":"))
