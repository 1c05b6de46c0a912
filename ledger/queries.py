"""Reads of the views: RunState, series pages, accounts and their audit trail, the registry.

Every answer is plain data (dicts, lists, ints, datetimes). Each method runs a handful of
indexed queries, so a RunState costs the same for a run of a thousand steps or a million.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import msgspec

__all__ = ["ViewReader"]

_decode = msgspec.json.decode
_unpack = msgspec.msgpack.decode


def _unpack_batch(attempt: int, floor: int | None, columns: list[bytes], from_step: int, wanted: set[str],
                  include_superseded: bool) -> list[tuple[int, int, int, int, bool, dict[str, float]]]:
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


def _time(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc)


def _spend(row: Any) -> dict[str, Any]:
    cap, committed, pending, overrun = row
    remaining = None if cap is None else max(0, cap - committed - pending)
    return {"cap": cap, "committed": committed, "pending": pending, "remaining": remaining, "overrun": overrun}


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
        live = [_checkpoint(r) for r in self._rows(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM view_checkpoints WHERE run_id = ? AND superseded = 0"
            " ORDER BY step, attempt", (run_id,))]
        moment = now.timestamp()
        usable = [c for c in live if c["expires_at"] is None or c["expires_at"].timestamp() > moment]
        expired = [c for c in live if c not in usable]
        checkpoint = usable[-1] if usable else None
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
            "resume": resume,
            "last_step": last_step,
            "spend": spend,
            "position": self.position("runs"),
        }

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
        {"values": [...], "index": [...] | None} (index into the page for sparse metrics)."""
        wanted = set(metrics)
        records: list[tuple[int, int, int, int, bool, dict[str, float]]] = []
        cursor = self.connect().cursor()
        try:
            # Rows come in first-step order, so once the page is full and the next batch starts
            # after its last step, no later batch can hold an earlier step.
            cursor.execute(
                "SELECT first_step, attempt, superseded_above, steps, tokens, usd_micro, metrics FROM view_series"
                " WHERE run_id = ? AND last_step >= ? ORDER BY first_step, attempt", (run_id, from_step))
            for first, attempt, floor, *columns in cursor:
                if len(records) > limit:
                    records.sort(key=lambda record: (record[0], record[1]))
                    if first > records[limit][0]:
                        break
                records.extend(_unpack_batch(attempt, floor, columns, from_step, wanted, include_superseded))
        finally:
            cursor.close()
        records.sort(key=lambda record: (record[0], record[1]))
        more = len(records) > limit
        if more:
            # A page never splits the records of one step (several attempts' when superseded
            # ones are included), so next_from_step resumes exactly after it.
            end = limit
            while end < len(records) and records[end][0] == records[limit - 1][0]:
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
        history = [
            {"version": r[0], "previous": r[1], "kind": r[2], "verdict": _decode(r[3]), "reason": r[4],
             "at": _time(r[5]), "principal": r[6], "position": r[7]}
            for r in self._rows("SELECT version, previous, kind, verdict, reason, at, principal, position"
                                " FROM view_promotions WHERE family = ? ORDER BY position", (family,))
        ]
        return {"family": family, "current": row[0], "versions": versions, "history": history}

    def families(self) -> list[dict[str, Any]]:
        return [{"family": r[0], "current": r[1], "versions": r[2]} for r in self._rows(
            "SELECT f.family, f.current, (SELECT COUNT(*) FROM view_versions v WHERE v.family = f.family)"
            " FROM view_families f ORDER BY f.family")]
