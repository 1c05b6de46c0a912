"""Runs and series as tables: the rows `runs_frame` and `trainledger runs list --format` give (plain
Python, no extra needed), and the pandas DataFrames made of them (the `frames` extra: pandas and
pyarrow, imported only when a frame is asked for). docs/frames.md describes the columns.

A run's row names its columns as a run search names its fields (docs/search.md), so a column can
be pasted into `where=`: run_id, name, status, account, attempts, last_step, started, finished,
spend_committed_usd_micro, spend_presumed_usd_micro, cap_usd_micro (money as integer
micro-dollars), then `tags.KEY`, `spec.a.b` and `summary.KEY` (a nested key dotted, a key that is
not letters, digits and `_` quoted in backticks; a list as its JSON text).

A series frame is wide: one row per (step, attempt) in the server's order, superseded steps (of an
attempt a later one resumed before them) included and flagged, one float column per metric, NaN
where a sparse metric has no value at that step.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from clients.integrations.extras import extra
from trainledger.fields import shown_segment

__all__ = [
    "RUN_COLUMNS",
    "SERIES_COLUMNS",
    "FrameTooLarge",
    "RunsGathered",
    "SeriesGathered",
    "columns_of",
    "document_columns",
    "run_record",
    "parquet_bytes",
    "runs_frame_of",
]

#: The columns every run's row has, in order; tags.*, spec.* and summary.* follow, each sorted.
RUN_COLUMNS = (
    "run_id",
    "name",
    "status",
    "account",
    "attempts",
    "last_step",
    "started",
    "finished",
    "spend_committed_usd_micro",
    "spend_presumed_usd_micro",
    "cap_usd_micro",
)
#: The columns of a series frame before its metrics.
SERIES_COLUMNS = ("step", "attempt", "superseded")
# The documents whose keys become columns, in the order their columns come.
DOCUMENTS = ("tags", "spec", "summary")


class FrameTooLarge(ValueError):
    """A frame would hold more rows than its `max_rows`: narrow the read (where=, metrics=, limit=)
    or raise max_rows. Nothing is cut off silently."""

    def __init__(self, what: str, max_rows: int) -> None:
        super().__init__(f"{what} has more than max_rows={max_rows:,} rows: narrow it, or raise max_rows")
        self.max_rows = max_rows


def document_columns(prefix: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """A document (spec, summary, tags) as columns: `prefix.key`, nested keys dotted, a key that is
    not letters, digits and `_` in backticks, a list as its JSON text."""
    columns: dict[str, Any] = {}
    for key, value in document.items():
        name = f"{prefix}.{shown_segment(str(key))}"
        if isinstance(value, Mapping):
            columns.update(document_columns(name, value))
        elif isinstance(value, list | tuple):
            columns[name] = json.dumps(value, separators=(",", ":"))
        else:
            columns[name] = value
    return columns


def run_record(summary: Any, state: Any) -> dict[str, Any]:
    """A run's row: `summary` a RunSummary of a list or search (client or ledger model alike),
    `state` its RunState (for finished, spec and summary)."""
    record: dict[str, Any] = {
        "run_id": summary.run_id,
        "name": summary.name,
        "status": summary.status,
        "account": summary.parent_account or None,
        "attempts": summary.current_attempt,
        "last_step": summary.last_step,
        "started": summary.opened_at,
        "finished": state.run.finished_at,
        "spend_committed_usd_micro": summary.committed_usd_micro,
        "spend_presumed_usd_micro": summary.presumed_usd_micro,
        "cap_usd_micro": summary.cap_usd_micro,
    }
    record.update(document_columns("tags", summary.tags))
    record.update(document_columns("spec", state.run.spec))
    record.update(document_columns("summary", state.run.summary))
    return record


def columns_of(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every column of `records` in a stable order: RUN_COLUMNS, then tags, spec and summary
    columns, each sorted."""
    found: set[str] = set()
    for record in records:
        found.update(record)
    documents = sorted(found - set(RUN_COLUMNS), key=lambda name: (DOCUMENTS.index(name.partition(".")[0]), name))
    return [*RUN_COLUMNS, *documents]


class RunsGathered:
    """The runs of a runs frame as their pages come: how many to ask for next, and the check that
    the whole search fits max_rows (or is cut at `limit`, when asked)."""

    def __init__(self, *, limit: int | None, max_rows: int, page_size_max: int) -> None:
        if max_rows < 1 or (limit is not None and limit < 1):
            raise ValueError("limit and max_rows are at least 1")
        self.limit, self.max_rows, self.page_size_max = limit, max_rows, page_size_max
        self.runs: list[Any] = []

    def page_size(self) -> int:
        # One more than max_rows is asked for in all: that one says the search is too large.
        wanted = self.limit if self.limit is not None and self.limit <= self.max_rows else self.max_rows + 1
        return max(1, min(self.page_size_max, wanted - len(self.runs)))

    def add(self, runs: Sequence[Any], next_page_token: str) -> str:
        """Take a page's runs; the token of the next page to read, "" when done."""
        self.runs += runs
        if self.limit is not None and len(self.runs) >= self.limit and self.limit <= self.max_rows:
            del self.runs[self.limit :]
            return ""
        if len(self.runs) > self.max_rows:
            raise FrameTooLarge("the runs search", self.max_rows)
        return next_page_token


class SeriesGathered:
    """A run's series as its pages come, column by column: step, attempt, superseded and one list
    of floats per metric (NaN where a step has no value of it), at most `max_rows` rows."""

    def __init__(self, *, max_rows: int) -> None:
        if max_rows < 1:
            raise ValueError("max_rows is at least 1")
        self.max_rows = max_rows
        self.steps: list[int] = []
        self.attempts: list[int] = []
        self.superseded: list[bool] = []
        self.metrics: dict[str, list[float]] = {}

    def add(self, page: Any) -> None:
        """Take a SeriesPage (its metric columns indexed into its steps as on the wire)."""
        offset, count = len(self.steps), len(page.steps)
        if offset + count > self.max_rows:
            raise FrameTooLarge("the run's series", self.max_rows)
        self.steps += page.steps
        self.attempts += page.attempts
        self.superseded += page.superseded or [False] * count
        for column in self.metrics.values():
            column += [math.nan] * count
        for metric in page.metrics:
            if metric.name in SERIES_COLUMNS:
                raise ValueError(f"metric {metric.name!r} has the name of a series column: read it with get_series")
            values = self.metrics.setdefault(metric.name, [math.nan] * (offset + count))
            places = metric.index or range(len(metric.values))
            for place, value in zip(places, metric.values, strict=True):
                values[offset + place] = value

    def frame(self) -> Any:
        """The series as a pandas DataFrame (see the module's docstring)."""
        with extra("frames"):
            import pandas

        columns: dict[str, Any] = {
            "step": pandas.array(self.steps, dtype="int64"),
            "attempt": pandas.array(self.attempts, dtype="int64"),
            "superseded": pandas.array(self.superseded, dtype="bool"),
        }
        for name in sorted(self.metrics):
            columns[name] = pandas.array(self.metrics[name], dtype="float64")
        return pandas.DataFrame(columns)


# The dtypes of RUN_COLUMNS; a document column's is _dtype_of its values.
_RUN_DTYPES = {
    "run_id": "string",
    "name": "string",
    "status": "string",
    "account": "string",
    "attempts": "int64",
    "last_step": "Int64",
    "spend_committed_usd_micro": "int64",
    "spend_presumed_usd_micro": "int64",
    "cap_usd_micro": "Int64",
}


def runs_frame_of(records: Sequence[Mapping[str, Any]]) -> Any:
    """Run records (run_record) as a pandas DataFrame, one row per run in their order: integer
    columns int64 (Int64 where a run may lack the value: last_step, cap_usd_micro), started and
    finished datetime64[ns, UTC] (NaT while running), text as pandas' string dtype."""
    with extra("frames"):
        import pandas

    names = columns_of(records)
    columns: dict[str, Any] = {}
    for name in names:
        values = [record.get(name) for record in records]
        if name in ("started", "finished"):
            columns[name] = pandas.to_datetime(
                [value if isinstance(value, datetime) else None for value in values], utc=True
            ).as_unit("ns")
        elif name in _RUN_DTYPES:
            columns[name] = pandas.array(values, dtype=_RUN_DTYPES[name])
        else:
            columns[name] = pandas.array(values, dtype=_dtype_of(values))
    return pandas.DataFrame(columns, columns=names)


def _dtype_of(values: Sequence[Any]) -> str:
    """The dtype of a column by the kinds of value in it: text "string", true/false "boolean",
    integers "Int64" (that fit 64 bits), numbers "float64", else (mixed kinds, or only nulls) "object"."""
    kinds = {type(value) for value in values if value is not None}
    if kinds == {str}:
        return "string"
    if kinds == {bool}:
        return "boolean"
    if kinds == {int} and all(-(2**63) <= value < 2**63 for value in values if value is not None):
        return "Int64"
    if kinds and kinds <= {int, float}:
        return "float64"
    return "object"


def parquet_bytes(frame: Any) -> bytes:
    """A runs frame as Parquet: a column of mixed kinds (a spec key that is a number in one run
    and text in another) is written as the JSON text of its values."""
    with extra("frames"):
        import pyarrow  # noqa: F401  (pandas writes Parquet through it)

    frame = frame.copy()
    for name in frame.columns:
        if frame[name].dtype == object:
            frame[name] = [None if value is None else json.dumps(value) for value in frame[name]]
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()
