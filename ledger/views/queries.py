"""Reads of the views: RunState, series pages, accounts and their audit trail, the registry.

Every answer is plain data (dicts, lists, ints, datetimes). Each method runs a handful of
indexed queries, so a RunState costs the same for a run of a thousand steps or a million, or of a
thousand checkpoints, and a series page the same however many superseded steps lie behind it.
What can grow without end comes in pages bounded in count and in bytes (PAGE_BYTES_MAX).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import msgspec

from ledger.domain.limits import EXPIRED_CHECKPOINTS_LISTED, PAGE_BYTES_MAX

__all__ = ["ViewReader"]

_decode = msgspec.json.decode
_unpack = msgspec.msgpack.decode
# One step of a series page: step, attempt, tokens, usd_micro, superseded, metric values.
Record = tuple[int, int, int, int, bool, dict[str, float]]


def _unpack_batch(attempt: int, floor: int | None, columns: list[bytes], from_step: int, wanted: set[str],
                  include_superseded: bool) -> list[Record]:
    steps, tokens, usd, metrics = (_unpack(column) for column in columns)
    count = len(steps)
    per_step: list[dict[str, float]] = [{} for _ in range(count)]
    for name, column in metrics.items():
        if wanted and name not in wanted:
            continue
        index = column["index"] if column["index"] is not None else range(count)
        for at, value in zip(index, column["values"]):
            per_step[at][name] = value
    tokens = tokens or [0] * count
    usd = usd or [0] * count
    out = []
    for step, token, cost, values in zip(steps, tokens, usd, per_step):
        superseded = floor is not None and step > floor
        if step >= from_step and (include_superseded or not superseded):
            out.append((step, attempt, token, cost, superseded, values))
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


def _page_end(records: list[Record], limit: int) -> int:
    """How many of the sorted `records` a page holds: at most `limit`, and no more than fit in
    PAGE_BYTES_MAX (but at least one)."""
    size, names = 0, set()
    for at, record in enumerate(records[:limit]):
        size += _record_bytes(record[5], names)
        if size > PAGE_BYTES_MAX:
            return max(1, at)
    return min(limit, len(records))


def _time(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc)


def _spend(row: Any) -> dict[str, Any]:
    cap, committed, pending, overrun = row
    remaining = None if cap is None else max(0, cap - committed - pending)
    return {"cap": cap, "committed": committed, "pending": pending, "remaining": remaining, "overrun": overrun}


def _promotion(row: Any) -> dict[str, Any]:
    version, previous, kind, verdict, reason, at, principal, position = row
    return {"version": version, "previous": previous, "kind": kind, "verdict": _decode(verdict), "reason": reason,
            "at": _time(at), "principal": principal, "position": position}


_CHECKPOINT_COLUMNS = "attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at, expires_at, digest"


def _checkpoint(row: Any) -> dict[str, Any]:
    attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at, expires_at, digest = row
    return {"attempt": attempt, "step": step, "handle": {"backend": backend, "uri": uri, "fidelity": fidelity},
            "sampler_uri": sampler_uri, "final": bool(final), "saved_at": _time(saved_at),
            "expires_at": _time(expires_at), "digest": digest}


class ViewReader:
    """Queries over the view tables; `connect()` gives this thread's connection."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self.connect = connect

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        cursor = self.connect().cursor()
        try:
            cursor.execute(sql, params)
            return cursor.fetchall()
        finally:
            cursor.close()

    def _row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def position(self, view: str) -> int:
        row = self._row("SELECT position FROM view_tracking WHERE view = ?", (view,))
        return int(row[0]) if row else 0

    # Runs.

    def run_state(self, run_id: str, now: datetime) -> dict[str, Any] | None:
        """What a resuming trainer needs, or None for an unknown run."""
        row = self._row(
            "SELECT run_id, run_key, name, status, spec, summary, error, opened_at, finished_at, current_attempt,"
            " last_step FROM view_runs WHERE run_id = ?", (run_id,))
        if row is None:
            return None
        run_id, run_key, name, status, spec, summary, error, opened_at, finished_at, current, last_step = row
        attempts = [
            {"number": number, "attempt_id": attempt_id, "label": label, "started_at": _time(started_at),
             "resumed_from_step": resumed, "ended": bool(ended)}
            for number, attempt_id, label, started_at, resumed, ended in self._rows(
                "SELECT number, attempt_id, label, started_at, resumed_from_step, ended FROM view_attempts"
                " WHERE run_id = ? ORDER BY number", (run_id,))
        ]
        checkpoint, expired, expired_count = self._checkpoints(run_id, now.timestamp())
        spend_row = self._row("SELECT cap, committed, pending, overrun FROM view_accounts WHERE account = ?", (run_id,))
        spend = _spend(spend_row) if spend_row else _spend((None, 0, 0, 0))
        resume = {"available": checkpoint is not None, "from_step": checkpoint["step"] if checkpoint else 0,
                  "handle": checkpoint["handle"] if checkpoint else None,
                  "sampler_uri": checkpoint["sampler_uri"] if checkpoint else "",
                  "spend_committed_usd_micro": spend["committed"]}
        return {
            "run": {"run_id": run_id, "run_key": run_key, "name": name, "status": status, "spec": _decode(spec),
                    "summary": _decode(summary), "error": error, "opened_at": _time(opened_at),
                    "finished_at": _time(finished_at)},
            "attempts": attempts,
            "current_attempt": current,
            "checkpoint": checkpoint,
            "expired_checkpoints": expired,
            "expired_checkpoint_count": expired_count,
            "resume": resume,
            "last_step": last_step,
            "spend": spend,
            "position": self.position("runs"),
        }

    def _checkpoints(self, run_id: str, moment: float) -> tuple[dict[str, Any] | None, list[dict[str, Any]], int]:
        """The most progressed usable checkpoint, the EXPIRED_CHECKPOINTS_LISTED that expired most
        recently (in step order), and how many expired in all; superseded checkpoints are neither.
        Indexed: the best is found walking down from the highest step (past only the expired ones
        above it), and only once an index seek has shown that a usable one exists; the count is
        an index range."""
        live = "FROM view_checkpoints WHERE run_id = ? AND superseded = 0"
        checkpoint = None
        if self._row(f"SELECT 1 {live} AND expires_at IS NULL UNION ALL SELECT 1 {live} AND expires_at > ?"
                     " LIMIT 1", (run_id, run_id, moment)):
            row = self._row(f"SELECT {_CHECKPOINT_COLUMNS} {live} AND (expires_at IS NULL OR expires_at > ?)"
                            " ORDER BY step DESC, attempt DESC LIMIT 1", (run_id, moment))
            checkpoint = _checkpoint(row) if row else None
        expired = [_checkpoint(r) for r in self._rows(
            f"SELECT {_CHECKPOINT_COLUMNS} {live} AND expires_at <= ? ORDER BY expires_at DESC, step DESC,"
            " attempt DESC LIMIT ?", (run_id, moment, EXPIRED_CHECKPOINTS_LISTED))]
        expired.sort(key=lambda c: (c["step"], c["attempt"]))
        count = len(expired)
        if count == EXPIRED_CHECKPOINTS_LISTED:
            count = int(self._row(f"SELECT COUNT(*) {live} AND expires_at <= ?", (run_id, moment))[0])
        return checkpoint, expired, count

    def list_runs(self, *, limit: int, after: tuple[float, str] | None = None, status: str = "") -> list[dict[str, Any]]:
        """Runs, newest first, `after` the (opened_at, run_id) of the previous page's last one."""
        where, params = [], []
        if status:
            where.append("r.status = ?")
            params.append(status)
        if after is not None:
            where.append("(r.opened_at < ? OR (r.opened_at = ? AND r.run_id < ?))")
            params += [after[0], after[0], after[1]]
        sql = ("SELECT r.run_id, r.name, r.status, r.current_attempt, r.last_step, r.opened_at,"
               " COALESCE(a.committed, 0) FROM view_runs r LEFT JOIN view_accounts a ON a.account = r.run_id")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.opened_at DESC, r.run_id DESC LIMIT ?"
        return [
            {"run_id": run_id, "name": name, "status": status, "current_attempt": current, "last_step": last_step,
             "opened_at": _time(opened_at), "opened_epoch": opened_at, "committed": committed}
            for run_id, name, status, current, last_step, opened_at, committed in self._rows(sql, (*params, limit))
        ]

    def series(self, run_id: str, *, from_step: int = 0, limit: int, metrics: tuple[str, ...] = (),
               include_superseded: bool = False) -> dict[str, Any]:
        """A page of the series from `from_step`, ordered by step (then attempt), column-wise:
        steps, attempts, tokens, usd_micro, superseded, and each metric as
        {"values": [...], "index": [...] | None} (index into the page for sparse metrics). A page
        holds at most `limit` steps and about PAGE_BYTES_MAX bytes on the wire (at least one step);
        `next_from_step` continues it."""
        wanted = set(metrics)
        records: list[Record] = []
        estimate, names = 0, set()
        cursor = self.connect().cursor()
        try:
            # Rows come in first-step order, so once the page is full and the next batch starts
            # after the first step left out of it, no later batch can hold a step of the page.
            for first, attempt, floor, *columns in self._series_rows(cursor, run_id, from_step, include_superseded):
                if len(records) > limit or estimate > PAGE_BYTES_MAX:
                    records.sort(key=lambda record: (record[0], record[1]))
                    end = _page_end(records, limit)
                    if end < len(records) and first > records[end][0]:
                        break
                batch = _unpack_batch(attempt, floor, columns, from_step, wanted, include_superseded)
                records.extend(batch)
                estimate += sum(_record_bytes(record[5], names) for record in batch)
        finally:
            cursor.close()
        records.sort(key=lambda record: (record[0], record[1]))
        end = _page_end(records, limit)
        # A page never splits the records of one step (several attempts' when superseded ones
        # are included), so next_from_step resumes exactly after it.
        while 0 < end < len(records) and records[end][0] == records[end - 1][0]:
            end += 1
        more = end < len(records)
        records = records[:end]
        columns_out: dict[str, dict[str, Any]] = {}
        for at, record in enumerate(records):
            for name, value in record[5].items():
                column = columns_out.setdefault(name, {"values": [], "index": []})
                column["values"].append(value)
                column["index"].append(at)
        for column in columns_out.values():
            if len(column["index"]) == len(records):
                column["index"] = None
        return {
            "steps": [r[0] for r in records],
            "attempts": [r[1] for r in records],
            "tokens": [r[2] for r in records],
            "usd_micro": [r[3] for r in records],
            "superseded": [r[4] for r in records],
            "metrics": columns_out,
            "next_from_step": records[-1][0] + 1 if more and records else None,
        }

    def _series_rows(self, cursor: Any, run_id: str, from_step: int, include_superseded: bool) -> Iterator[Any]:
        """The batch rows a page from `from_step` may need, in (first_step, attempt) order. With
        superseded steps left out, a row whose steps are all superseded is never read: the page
        comes from the rows that nothing superseded (their step ranges are disjoint, so the one
        holding `from_step` is found by an index seek) and the few that straddle a resume point."""
        columns = "first_step, attempt, superseded_above, steps, tokens, usd_micro, metrics"
        if include_superseded:
            cursor.execute(f"SELECT {columns} FROM view_series WHERE run_id = ? AND last_step >= ?"
                           " ORDER BY first_step, attempt", (run_id, from_step))
            return iter(cursor)
        straddling = self._rows(
            "SELECT s.first_step, s.attempt, s.superseded_above, s.steps, s.tokens, s.usd_micro, s.metrics"
            " FROM (SELECT DISTINCT resumed_from_step AS floor FROM view_attempts WHERE run_id = ?"
            " AND resumed_from_step IS NOT NULL) f JOIN view_series s ON s.run_id = ?"
            " AND s.superseded_above = f.floor AND s.first_step <= f.floor WHERE s.last_step >= ?",
            (run_id, run_id, from_step))
        straddling.sort(key=lambda row: (row[0], row[1]))
        start = self._row("SELECT first_step FROM view_series WHERE run_id = ? AND superseded_above IS NULL"
                          " AND first_step <= ? ORDER BY first_step DESC LIMIT 1", (run_id, from_step))
        cursor.execute(f"SELECT {columns} FROM view_series WHERE run_id = ? AND superseded_above IS NULL"
                       " AND first_step >= ? AND last_step >= ? ORDER BY first_step, attempt",
                       (run_id, from_step if start is None else start[0], from_step))
        return heapq.merge(straddling, cursor, key=lambda row: (row[0], row[1]))

    # Spend.

    def account(self, name: str) -> dict[str, Any] | None:
        row = self._row("SELECT account, parent, cap, committed, pending, overrun FROM view_accounts WHERE account = ?",
                        (name,))
        if row is None:
            return None
        return {"account": row[0], "parent": row[1], **_spend(row[2:])}

    def reservations(self, account: str, *, limit: int, after_position: int = 0) -> list[dict[str, Any]]:
        """The account's audit trail in log order: reservations, refusals and charges."""
        rows = self._rows(
            "SELECT reservation_id, kind, state, amount, actual, overrun, basis, actual_basis, reason, attempt,"
            " reserved_at, settled_at, expires_at, position FROM view_reservations WHERE account = ?"
            " AND position > ? ORDER BY position LIMIT ?", (account, after_position, limit))
        return [
            {"reservation_id": r[0], "kind": r[1], "state": r[2], "amount": r[3], "actual": r[4], "overrun": r[5],
             "basis": _decode(r[6]), "actual_basis": _decode(r[7]), "reason": r[8], "attempt": r[9],
             "reserved_at": _time(r[10]), "settled_at": _time(r[11]), "expires_at": _time(r[12]), "position": r[13]}
            for r in rows
        ]

    def accounts_with_overdue_holds(self, now: datetime) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT DISTINCT account FROM view_reservations WHERE state = 'pending' AND expires_at <= ?",
            (now.timestamp(),))]

    # Registry.

    def _version(self, row: Any) -> dict[str, Any]:
        family, version, uri, digest, run_id, step, metadata, registered_at = row
        return {"family": family, "version": version, "artifact_uri": uri, "digest": digest, "source_run_id": run_id,
                "source_step": step, "metadata": _decode(metadata), "registered_at": _time(registered_at)}

    _VERSION_COLUMNS = "family, version, artifact_uri, digest, source_run_id, source_step, metadata, registered_at"

    def family(self, family: str) -> dict[str, Any] | None:
        """{current, versions, history} of a family, or None if unknown."""
        row = self._row("SELECT current FROM view_families WHERE family = ?", (family,))
        if row is None:
            return None
        versions = [self._version(r) for r in self._rows(
            f"SELECT {self._VERSION_COLUMNS} FROM view_versions WHERE family = ? ORDER BY version", (family,))]
        history = [_promotion(r) for r in self._rows("SELECT version, previous, kind, verdict, reason, at, principal,"
                                                     " position FROM view_promotions WHERE family = ? ORDER BY position",
                                                     (family,))]
        return {"family": family, "current": row[0], "versions": versions, "history": history}

    def family_page(self, family: str, *, after_version: int = 0, after_position: int = 0,
                    limit: int) -> dict[str, Any] | None:
        """A page of a family: {current, versions after `after_version`, history (promotions)
        after `after_position`, more}, each list at most `limit` long and the page within about
        PAGE_BYTES_MAX on the wire (documents counted at six times their JSON, what a Struct of
        small numbers takes at most), holding at least one item while any is left. None if the
        family is unknown."""
        row = self._row("SELECT current FROM view_families WHERE family = ?", (family,))
        if row is None:
            return None
        versions, more_versions, used = self._bounded(
            f"SELECT {self._VERSION_COLUMNS} FROM view_versions WHERE family = ? AND version > ? ORDER BY version"
            " LIMIT ?", (family, after_version, limit + 1), limit, 0,
            lambda r: 64 + len(r[2]) + len(r[3]) + len(r[4] or "") + 6 * len(r[6]))
        history, more_history, _ = self._bounded(
            "SELECT version, previous, kind, verdict, reason, at, principal, position FROM view_promotions"
            " WHERE family = ? AND position > ? ORDER BY position LIMIT ?", (family, after_position, limit + 1),
            limit, used, lambda r: 64 + 6 * len(r[3]) + len(r[4] or "") + len(r[6] or ""))
        return {"family": family, "current": row[0], "versions": [self._version(r) for r in versions],
                "history": [_promotion(r) for r in history], "more": more_versions or more_history}

    def _bounded(self, sql: str, params: tuple[Any, ...], limit: int, used: int,
                 size_of: Callable[[Any], int]) -> tuple[list[Any], bool, int]:
        """Rows of `sql` (which selects limit + 1) while they fit in PAGE_BYTES_MAX after `used`
        bytes (the first row always, when nothing was used): (rows, whether more are left, bytes
        used). Rows are streamed, so a page of large rows reads no more of them than it holds."""
        rows: list[Any] = []
        cursor = self.connect().cursor()
        try:
            for row in cursor.execute(sql, params):
                size = size_of(row)
                if len(rows) == limit or (used + size > PAGE_BYTES_MAX and (rows or used)):
                    return rows, True, used
                rows.append(row)
                used += size
        finally:
            cursor.close()
        return rows, False, used

    def families(self) -> list[dict[str, Any]]:
        return [{"family": r[0], "current": r[1], "versions": r[2]} for r in self._rows(
            "SELECT f.family, f.current, (SELECT COUNT(*) FROM view_versions v WHERE v.family = f.family)"
            " FROM view_families f ORDER BY f.family")]
