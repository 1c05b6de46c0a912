"""Series pages of the views: a run's recorded steps, column-wise, a page at a time.

The series view holds one row per recorded batch: its run, attempt, step range, what superseded it
and the position of its event. The batch's columns (steps, tokens, cost, metrics) are stored once,
in that event: a page joins the rows it needs with the log by position and decodes only their
columns, so a step costs its event's bytes and no more, and a page costs the same however many
superseded steps lie behind it. A page is bounded in count and in bytes (PAGE_BYTES_MAX).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterator
from itertools import repeat
from operator import itemgetter
from typing import Any

import msgspec

from ledger.domain.limits import PAGE_BYTES_MAX
from ledger.views.models import MetricColumn, SeriesPage
from ledger.views.store import Query, ReadCursor

__all__ = ["BatchColumns", "SeriesReads", "decode_batch", "decode_metric"]


class BatchColumns(msgspec.Struct):
    """The columns of a StepsRecorded event as the log stores them (ledger.storage.transcoder);
    its other fields are skipped unread."""

    steps: list[int]
    tokens: list[int] | None = None
    usd_micro: list[int] | None = None
    metrics: dict[str, msgspec.Raw] = {}


class MetricColumnStored(msgspec.Struct):
    values: list[float]
    index: list[int] | None = None


def _no_extension(code: int, data: memoryview) -> None:
    return None  # Only fields left unread hold extensions (ids, times).


decode_batch = msgspec.msgpack.Decoder(BatchColumns, ext_hook=_no_extension).decode
decode_metric = msgspec.msgpack.Decoder(MetricColumnStored).decode
# One step of a series page: step, attempt, tokens, usd_micro, superseded, metric values.
Record = tuple[int, int, int, int, bool, dict[str, float]]
_STEP_ATTEMPT = itemgetter(0, 1)


def _unpack_batch(
    attempt: int, floor: int | None, state: bytes, from_step: int, wanted: set[str], include_superseded: bool
) -> list[Record]:
    batch = decode_batch(state)
    # Steps increase within a batch: those from `from_step` on are its tail, from `first`.
    first = bisect_left(batch.steps, from_step)
    steps = batch.steps[first:]
    count = len(steps)
    dense: list[tuple[str, list[float]]] = []
    sparse: list[tuple[str, list[int], list[float]]] = []
    for name, raw in batch.metrics.items():
        if wanted and name not in wanted:
            continue
        column = decode_metric(raw)
        if column.index is None:
            dense.append((name, column.values[first:]))
        else:
            at = bisect_left(column.index, first)
            sparse.append((name, [i - first for i in column.index[at:]], column.values[at:]))
    per_step: list[dict[str, float]]
    if len(dense) == 1 and len(dense[0][1]) == count:
        name, values = dense[0]
        per_step = [{name: value} for value in values]
    elif dense and all(len(values) == count for _, values in dense):
        names = [name for name, _ in dense]
        per_step = [dict(zip(names, row, strict=True)) for row in zip(*(values for _, values in dense), strict=True)]
    else:
        per_step = [{} for _ in range(count)]
        sparse = [(name, list(range(count)), values) for name, values in dense] + sparse
    for name, index, values in sparse:
        for at, value in zip(index, values, strict=False):
            per_step[at][name] = value
    tokens = batch.tokens[first:] if batch.tokens else [0] * count
    usd = batch.usd_micro[first:] if batch.usd_micro else [0] * count
    if floor is None or not steps or steps[-1] <= floor:
        return list(zip(steps, repeat(attempt), tokens, usd, repeat(False), per_step, strict=False))
    out = []
    for step, token, cost, values_of in zip(steps, tokens, usd, per_step, strict=False):
        superseded = step > floor
        if include_superseded or not superseded:
            out.append((step, attempt, token, cost, superseded, values_of))
    return out


def _record_bytes(values: dict[str, float], names: set[str]) -> int:
    """About what one record of a series page takes on the wire: its step, attempt, tokens, cost
    and flag, 12 bytes a metric value with its index, and each metric's name the first time the
    page holds it."""
    size = 32 + 12 * len(values)
    for name in values:
        if name not in names:
            names.add(name)
            size += len(name.encode()) + 16
    return size


_VALUES = itemgetter(5)


def _new_names_bytes(records: list[Record], names: set[str]) -> int:
    """What the names of `records` not in `names` add to a page (adding them to `names`)."""
    found = set[str]().union(*map(_VALUES, records)) - names
    names |= found
    return sum(len(name.encode()) + 16 for name in found)


def _records_bytes(records: list[Record], names: set[str]) -> int:
    """The sum of _record_bytes over `records` (`names` as it goes)."""
    return 32 * len(records) + 12 * sum(map(len, map(_VALUES, records))) + _new_names_bytes(records, names)


def _page_end(records: list[Record], limit: int) -> int:
    """How many of the sorted `records` a page holds: at most `limit`, and no more than fit in
    PAGE_BYTES_MAX (but at least one)."""
    head = records[:limit]
    if _records_bytes(head, set()) > PAGE_BYTES_MAX:
        size, names = 0, set[str]()
        for at, record in enumerate(head):
            size += _record_bytes(record[5], names)
            if size > PAGE_BYTES_MAX:
                return max(1, at)
    return min(limit, len(records))


def _metric_columns(records: list[Record]) -> tuple[MetricColumn, ...]:
    """The metric values of a page's records as columns, by name; a column that does not hold
    a value for every record has its index into the page. A few names are gathered a name at a
    time over the page, many in one pass over every value."""
    held = [record[5] for record in records]
    names = set[str]().union(*held)
    columns: dict[str, tuple[list[float], list[int]]] = {}
    if len(names) <= 8:
        for name in names:
            index = [at for at, values in enumerate(held) if name in values]
            columns[name] = ([held[at][name] for at in index], index)
    else:
        for at, values_of in enumerate(held):
            for name, value in values_of.items():
                values, index = columns.setdefault(name, ([], []))
                values.append(value)
                index.append(at)
    return tuple(
        MetricColumn(name=name, values=tuple(values), index=() if len(index) == len(records) else tuple(index))
        for name, (values, index) in sorted(columns.items())
    )


class SeriesReads:
    """Series pages, read by `query`."""

    def __init__(self, query: Query) -> None:
        self.query = query

    def series(
        self,
        run_id: str,
        *,
        from_step: int = 0,
        limit: int,
        metrics: tuple[str, ...] = (),
        include_superseded: bool = False,
    ) -> SeriesPage:
        """A page of the series from `from_step`, ordered by step (then attempt), column-wise
        (see SeriesPage; metrics by name, sparse ones with their index into the page). A page
        holds at most `limit` steps and about PAGE_BYTES_MAX bytes on the wire (at least one step);
        `next_from_step` continues it."""
        wanted = set(metrics)
        records: list[Record] = []
        estimate, names = 0, set[str]()
        cursor = self.query.cursor()
        try:
            # Rows come in first-step order, so once the page is full and the next batch starts
            # after the first step left out of it, no later batch can hold a step of the page.
            for first, attempt, floor, state in self._series_rows(cursor, run_id, from_step, include_superseded):
                if len(records) > limit or estimate > PAGE_BYTES_MAX:
                    records.sort(key=_STEP_ATTEMPT)
                    end = _page_end(records, limit)
                    if end < len(records) and first > records[end][0]:
                        break
                batch = _unpack_batch(attempt, floor, state, from_step, wanted, include_superseded)
                records.extend(batch)
                estimate += _records_bytes(batch, names)
        finally:
            cursor.close()
        records.sort(key=_STEP_ATTEMPT)
        end = _page_end(records, limit)
        # A page never splits the records of one step (several attempts' when superseded ones
        # are included), so next_from_step resumes exactly after it.
        while 0 < end < len(records) and records[end][0] == records[end - 1][0]:
            end += 1
        more = end < len(records)
        records = records[:end]
        # Column by column: zip(*records) would make an iterator per record.
        steps, attempts, tokens, usd_micro, superseded = (tuple(map(itemgetter(at), records)) for at in range(5))
        return SeriesPage(
            steps=steps,
            attempts=attempts,
            tokens=tokens,
            usd_micro=usd_micro,
            superseded=superseded,
            metrics=_metric_columns(records),
            next_from_step=records[-1][0] + 1 if more and records else None,
        )

    def _series_rows(self, cursor: ReadCursor, run_id: str, from_step: int, include_superseded: bool) -> Iterator[Any]:
        """The batch rows a page from `from_step` may need, in (first_step, attempt) order. With
        superseded steps left out, a row whose steps are all superseded is never read: the page
        comes from the rows that nothing superseded (their step ranges are disjoint, so the one
        holding `from_step` is found by an index seek) and the few that straddle a resume point."""
        columns = "SELECT s.first_step, s.attempt, s.superseded_above FROM view_series s"
        if include_superseded:
            cursor.execute(
                self.query.with_columns(
                    f"{columns} WHERE s.run_id = ? AND s.last_step >= ? ORDER BY s.first_step, s.attempt"
                ),
                (run_id, from_step),
            )
            return iter(cursor)
        straddling = self.query.rows(
            self.query.with_columns(
                "SELECT s.first_step, s.attempt, s.superseded_above FROM view_series s"
                " JOIN (SELECT DISTINCT resumed_from_step AS floor FROM view_attempts WHERE run_id = ?"
                " AND resumed_from_step IS NOT NULL) f ON s.run_id = ?"
                " AND s.superseded_above = f.floor AND s.first_step <= f.floor WHERE s.last_step >= ?"
            ),
            (run_id, run_id, from_step),
        )
        straddling.sort(key=lambda row: (row[0], row[1]))
        start = self.query.row(
            "SELECT first_step FROM view_series WHERE run_id = ? AND superseded_above IS NULL"
            " AND first_step <= ? ORDER BY first_step DESC LIMIT 1",
            (run_id, from_step),
        )
        cursor.execute(
            self.query.with_columns(
                f"{columns} WHERE s.run_id = ? AND s.superseded_above IS NULL"
                " AND s.first_step >= ? AND s.last_step >= ? ORDER BY s.first_step, s.attempt"
            ),
            (run_id, from_step if start is None else start[0], from_step),
        )
        return heapq.merge(straddling, cursor, key=lambda row: (row[0], row[1]))
