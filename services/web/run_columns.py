"""The runs page's columns that tell runs of one name apart, as a W&B runs table does: each
run's tags (the first TAGS_SHOWN as chips, the rest counted, all of them in the cell's title),
then a column per spec key whose value differs among the runs listed (at most DIFFERING_SHOWN,
by key), or instead the keys `columns=` names (`spec.lr,summary.eval_loss,tags.team`: at most
COLUMNS_MAX keys under spec., summary. or tags., each at most KEY_BYTES_MAX bytes; more is 400
INVALID_PARAMETER naming `columns`). The values are the search view's (ledger.views.search),
read once for the page (bounded: FIELD_ROWS_MAX)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request

from ledger.views import models
from ledger.views.search.tables import KEY_BYTES_MAX
from services.web.access import invalid
from services.web.markup import e

__all__ = ["COLUMNS_MAX", "DIFFERING_SHOWN", "TAGS_SHOWN", "chosen_columns", "column_cells", "columns_of", "tags_cell"]

COLUMNS_MAX = 6
DIFFERING_SHOWN = 3
TAGS_SHOWN = 3
PREFIXES = ("spec.", "summary.", "tags.")

Fields = Mapping[str, Mapping[str, float | str]]


def chosen_columns(request: Request) -> list[str]:
    """The keys `columns=` names (comma-separated), checked; [] when it names none."""
    given = request.query_params.get("columns", "")
    keys = [key.strip() for key in given.split(",") if key.strip()]
    if len(keys) > COLUMNS_MAX:
        raise invalid("columns", f"columns names at most {COLUMNS_MAX} keys, not {len(keys)}")
    for key in keys:
        if len(key.encode()) > KEY_BYTES_MAX:
            raise invalid("columns", f"a column key is at most {KEY_BYTES_MAX} bytes")
        if not key.startswith(PREFIXES) or key in PREFIXES:
            raise invalid("columns", f"a column is a key under spec., summary. or tags. (spec.lr), not {key!r}")
    return list(dict.fromkeys(keys))


def columns_of(ledger: Any, runs: Sequence[models.RunSummary], chosen: Sequence[str]) -> tuple[list[str], Fields]:
    """The column keys and the listed runs' values of them: `chosen`, else the spec keys whose
    values differ among `runs`. Runs in a worker thread (it reads the ledger)."""
    ids = [run.run_id for run in runs]
    if not ids:
        return list(chosen), {}
    if chosen:
        return list(chosen), ledger.run_fields(ids, keys=list(chosen))
    fields = ledger.run_fields(ids, prefix="spec.")
    keys = sorted({key for values in fields.values() for key in values})
    differing = [key for key in keys if len({repr(fields.get(i, {}).get(key)) for i in ids}) > 1]
    shown = differing[:DIFFERING_SHOWN]
    return shown, {i: {key: value for key, value in fields.get(i, {}).items() if key in shown} for i in ids}


def _value(value: float | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def column_cells(run_id: str, keys: Sequence[str], fields: Fields) -> str:
    values = fields.get(run_id, {})
    return "".join(
        f'<td data-field="column" data-key="{e(key)}" class="column">{e(_value(values.get(key)))}</td>' for key in keys
    )


def tags_cell(tags: Mapping[str, str]) -> str:
    """A run's tags, compact: the first TAGS_SHOWN by key as chips, "+N" for the rest."""
    if not tags:
        return '<td data-field="tags" class="tags">-</td>'
    pairs = [f"{key}={value}" for key, value in sorted(tags.items())]
    chips = "".join(f'<span class="tag">{e(pair)}</span> ' for pair in pairs[:TAGS_SHOWN])
    more = f'<span class="tag more">+{len(pairs) - TAGS_SHOWN}</span>' if len(pairs) > TAGS_SHOWN else ""
    return f'<td data-field="tags" class="tags" title="{e(" ".join(pairs))}">{chips}{more}</td>'
