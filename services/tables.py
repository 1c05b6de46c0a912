"""Plain-text output for the CLI: aligned tables, money, times, cost bases, and JSON (a read model
as an object of its fields).

Every value a table or a field list shows is escaped where it is not printable (line breaks,
terminal escapes, C1 controls, bidi overrides: `\\n`, `\\x1b`, `\\u202e`), with backslashes doubled,
so no stored text can add a row, move the cursor or reorder what is shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from trainledger.bills import usd_text

__all__ = ["table", "fields", "usd", "when", "basis_text", "to_json", "printable"]


def usd(micro: int | None) -> str:
    """Micro-dollars as dollars, exactly: 1_500 -> "$0.001500"; None -> "-" (no cap)."""
    return "-" if micro is None else usd_text(micro)


def when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


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


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An aligned table; numbers are right-aligned."""
    cells = [[_cell(value) for value in row] for row in rows]
    numeric = []
    for i in range(len(headers)):
        given = [row[i] for row in rows if row[i] is not None]
        numeric.append(bool(given) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in given))
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        cells = (v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=False)))
        return "  ".join(cells).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(row) for row in cells)])


def fields(pairs: Sequence[tuple[str, Any]]) -> str:
    """Label: value lines, labels aligned."""
    width = max(len(label) for label, _ in pairs)
    return "\n".join(f"{label + ':':<{width + 1}} {_cell(value)}" for label, value in pairs)


def basis_text(basis: Mapping[str, Any] | None) -> str:
    """A cost basis on one line: what was priced, at what price, from which sheet."""
    if not basis:
        return "-"
    parts = [
        f"{line['tokens']:,} {line['token_class']} @ {usd(line['usd_micro_per_million_tokens'])}/M"
        for line in basis.get("tokens") or ()
    ]
    gpu = basis.get("gpu")
    if gpu:
        hours = gpu["gpu_milliseconds"] / 3_600_000
        parts.append(
            f"{hours:.4g} h x {gpu.get('gpu_count', 1)} {gpu.get('gpu_type') or 'GPU'}"
            f" @ {usd(gpu['usd_micro_per_gpu_hour'])}/h"
        )
    sheet = basis.get("price_sheet")
    return "; ".join(parts) + (f" [{sheet}]" if sheet else "")


def _default(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):  # A read model: its fields by name.
        return msgspec.structs.asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def to_json(value: Any, *, indent: int | None = 2) -> str:
    return json.dumps(value, default=_default, indent=indent, separators=None if indent else (",", ":"))
