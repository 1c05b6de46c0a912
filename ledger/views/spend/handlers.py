"""How Account events change the spend view (its tables: ledger.views.spend.schema): one gathered
handler, SpendView, for every event the view projects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ledger.views.handling import Names, ViewHandlers, dump, to_epoch
from ledger.views.store import ViewCursor

__all__ = ["SpendView", "spend_handlers"]

# A log written before ids were indexed for good may hold a second event for an id: its row then
# shows the latest event (the totals count both, as the aggregate did), so the log still projects.
_RESERVATION_UPSERT = (
    " ON CONFLICT (account, reservation_id) DO UPDATE SET kind = excluded.kind, state = excluded.state,"
    " amount = excluded.amount, actual = excluded.actual, overrun = excluded.overrun, basis = excluded.basis,"
    " actual_basis = excluded.actual_basis, reason = excluded.reason, attempt = excluded.attempt,"
    " reserved_at = excluded.reserved_at, settled_at = excluded.settled_at, expires_at = excluded.expires_at,"
    " position = excluded.position"
)


# The reservation rows' statements, made once (not concatenated on every event).
_INSERT_RESERVATION = (
    "INSERT INTO view_reservations (account, reservation_id, kind, state, amount, actual, overrun, basis,"
    " actual_basis, reason, attempt, reserved_at, settled_at, expires_at, position)"
)
_RESERVED_SQL = _INSERT_RESERVATION + (
    " VALUES (?, ?, 'reservation', 'pending', ?, 0, 0, ?, '{}', '', ?, ?, NULL, ?, ?)" + _RESERVATION_UPSERT
)
_REFUSED_SQL = _INSERT_RESERVATION + (
    " VALUES (?, ?, 'reservation', 'refused', ?, 0, 0, ?, '{}', ?, ?, ?, ?, NULL, ?)" + _RESERVATION_UPSERT
)
_PLANNED_SQL = _RESERVED_SQL.replace("'reservation'", "'plan'", 1)
_PLAN_REFUSED_SQL = _REFUSED_SQL.replace("'reservation'", "'plan'", 1)
# A plan's row counts what its holds drew in `actual`.
_DRAWN_SQL = "UPDATE view_reservations SET actual = actual + ? WHERE account = ? AND reservation_id = ?"
_CHARGED_SQL = _INSERT_RESERVATION + (
    " VALUES (?, ?, 'charge', 'charged', ?, ?, ?, ?, ?, ?, 0, ?, ?, NULL, ?)" + _RESERVATION_UPSERT
)
_ADJUSTED_SQL = _INSERT_RESERVATION + (
    " VALUES (?, ?, 'adjustment', 'adjusted', ?, ?, ?, ?, '{}', ?, 0, ?, ?, NULL, ?)" + _RESERVATION_UPSERT
)


_TOTALS_SQL = (
    "UPDATE view_accounts SET pending = pending + ?, committed = committed + ?, overrun = overrun + ?,"
    " position = CASE WHEN position > ? THEN position ELSE ? END WHERE account = ?"
)
# What the ledger presumed spent for abandoned holds, summed per account like the totals.
_PRESUMED_SQL = (
    "INSERT INTO view_presumed (account, presumed) VALUES (?, ?)"
    " ON CONFLICT (account) DO UPDATE SET presumed = view_presumed.presumed + excluded.presumed"
)
# An abandoned hold the ledger settled: its charge stands as the actual until a late commit.
_SETTLED_BY_LEDGER_SQL = (
    "UPDATE view_reservations SET state = 'settled', actual = ?, settled_at = ?, reason = ? WHERE account = ?"
    " AND reservation_id = ?"
)
_OPENED_SQL = (
    "INSERT INTO view_accounts (account, parent, cap, committed, pending, overrun, position)"
    " VALUES (?, ?, ?, 0, 0, 0, ?)"
)
_CAP_SQL = "UPDATE view_accounts SET cap = ?, position = ? WHERE account = ?"
_COMMITTED_SQL = (
    "UPDATE view_reservations SET state = 'committed', actual = ?, overrun = ?, actual_basis = ?, settled_at = ?,"
    " reason = ? WHERE account = ? AND reservation_id = ?"
)
_SETTLED_SQL = {
    state: f"UPDATE view_reservations SET state = '{state}', settled_at = ?, reason = ? WHERE account = ?"
    " AND reservation_id = ?"
    for state in ("released", "expired")
}
# The kinds of the spend view's rows (SpendView.rows).
_ROW, _TOTALS, _OPENED, _CAP = range(4)


class SpendView:
    """The spend view (accounts, and every reservation, refusal, charge and adjustment): one
    gathered handler for every event the view projects, so a chunk's writes keep its order and
    go in batches. `add` makes each event's rows (what to write, the account still named by its
    aggregate id) with no storage read, so the projector makes them before its transaction;
    `write` writes a chunk's rows: reservation rows by statement, one executemany each (a
    reservation met again under another statement first writes what is batched, so each one's
    writes keep their order), and each account's totals summed over the chunk into one update,
    which leaves the position of the account's last event (a later cap's stays). `aggregate` is
    the Account aggregate, whose events it projects."""

    gathered = True

    def __init__(self, names: Names, aggregate: Any) -> None:
        self._names = names
        self._rows: list[tuple[Any, ...]] = []
        self._make: dict[type, Callable[[Any, int], None]] = {
            aggregate.Opened: self._opened,
            aggregate.CapSet: self._cap_set,
            aggregate.SpendReserved: self._reserved,
            aggregate.SpendRefused: self._refused,
            aggregate.SpendCommitted: self._committed,
            aggregate.SpendReleased: self._released,
            aggregate.SpendExpired: self._expired,
            aggregate.SpendSettled: self._settled_by_ledger,
            aggregate.SpendCharged: self._charged,
            aggregate.SpendAdjusted: self._adjusted,
            aggregate.SpendRolledUp: self._rolled_up,
            aggregate.PlanReserved: self._plan_reserved,
            aggregate.PlanRefused: self._plan_refused,
            aggregate.PlanDrawn: self._plan_drawn,
        }

    def events(self) -> tuple[type, ...]:
        """The event classes the view projects."""
        return tuple(self._make)

    def add(self, event: Any, position: int) -> None:
        self._make[type(event)](event, position)

    def rows(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def clear(self) -> None:
        self._rows = []

    def write(self, cursor: ViewCursor, rows: list[tuple[Any, ...]]) -> None:
        lookup = self._names.lookup
        batches: dict[str, list[tuple[Any, ...]]] = {}
        batched: dict[tuple[str, str], str] = {}  # (account, reservation id) -> its statement
        # account's aggregate id -> [pending, committed, overrun, position, presumed, presumed rows]
        totals: dict[Any, list[int]] = {}
        for row in rows:
            kind = row[0]
            if kind == _ROW:
                _, originator_id, sql, key, before, after = row
                account = lookup(cursor, originator_id)
                if batched.setdefault((account, key), sql) != sql:
                    self._flush(cursor, batches)
                    batched.clear()
                    batched[account, key] = sql
                batches.setdefault(sql, []).append((*before, account, key, *after))
            elif kind == _TOTALS:
                _, originator_id, pending, committed, overrun, position, presumed = row
                summed = totals.get(originator_id)
                if summed is None:
                    totals[originator_id] = [pending, committed, overrun, position, presumed or 0, presumed is not None]
                else:
                    summed[0] += pending
                    summed[1] += committed
                    summed[2] += overrun
                    summed[3] = position
                    summed[4] += presumed or 0
                    summed[5] |= presumed is not None
            elif kind == _OPENED:
                _, originator_id, name, parent, cap, position = row
                self._names.remember(cursor, originator_id, name)
                cursor.execute(_OPENED_SQL, (name, parent, cap, position))
            else:
                _, originator_id, cap, position = row
                cursor.execute(_CAP_SQL, (cap, position, lookup(cursor, originator_id)))
        self._flush(cursor, batches)
        if totals:
            cursor.executemany(
                _TOTALS_SQL,
                [
                    (pending, committed, overrun, position, position, lookup(cursor, originator_id))
                    for originator_id, (pending, committed, overrun, position, *_) in totals.items()
                ],
            )
            presumed = [(lookup(cursor, key), summed[4]) for key, summed in totals.items() if summed[5]]
            if presumed:
                cursor.executemany(_PRESUMED_SQL, presumed)

    @staticmethod
    def _flush(cursor: ViewCursor, batches: dict[str, list[tuple[Any, ...]]]) -> None:
        for sql, params in batches.items():
            if len(params) == 1:
                cursor.execute(sql, params[0])
            else:
                cursor.executemany(sql, params)
        batches.clear()

    # Each event's rows.

    def _totals(
        self, e: Any, position: int, pending: int, committed: int, overrun: int, presumed: int | None = None
    ) -> None:
        """`presumed`: the change to what the ledger presumed spent (None: the event has none)."""
        self._rows.append((_TOTALS, e.originator_id, pending, committed, overrun, position, presumed))

    def _opened(self, e: Any, position: int) -> None:
        self._rows.append((_OPENED, e.originator_id, e.name, e.parent, e.cap, position))

    def _cap_set(self, e: Any, position: int) -> None:
        self._rows.append((_CAP, e.originator_id, e.cap, position))

    def _reserved(self, e: Any, position: int) -> None:
        after = (e.amount, dump(e.basis), e.attempt, to_epoch(e.timestamp), to_epoch(e.expires_at), position)
        self._rows.append((_ROW, e.originator_id, _RESERVED_SQL, e.reservation_id, (), after))
        self._totals(e, position, e.amount, 0, 0)

    def _refused(self, e: Any, position: int, sql: str = _REFUSED_SQL) -> None:
        at = to_epoch(e.timestamp)
        # Stored, so its wording never changes: a ledger written by an earlier version must rebuild
        # to the same rows (tests/ledger/test_upgrade_corpus.py). The amount is in micro-dollars.
        reason = f"cap of {e.refused_by} would be crossed: {e.remaining} remained"
        after = (e.amount, dump(e.basis), reason, e.attempt, at, at, position)
        self._rows.append((_ROW, e.originator_id, sql, e.reservation_id, (), after))

    def _plan_reserved(self, e: Any, position: int) -> None:
        after = (e.amount, dump(e.basis), e.attempt, to_epoch(e.timestamp), to_epoch(e.expires_at), position)
        self._rows.append((_ROW, e.originator_id, _PLANNED_SQL, e.reservation_id, (), after))
        self._totals(e, position, e.amount, 0, 0)

    def _plan_refused(self, e: Any, position: int) -> None:
        self._refused(e, position, _PLAN_REFUSED_SQL)

    def _plan_drawn(self, e: Any, position: int) -> None:
        self._rows.append((_ROW, e.originator_id, _DRAWN_SQL, e.plan_id, (e.amount,), ()))
        self._totals(e, position, -e.amount, 0, 0)

    def _committed(self, e: Any, position: int) -> None:
        replaced = e.replaced
        reason = "committed late, replacing the ledger's settlement" if replaced else ""
        reason = reason or ("committed after expiry" if e.late else "")
        before = (e.actual, e.overrun, dump(e.basis) if e.basis else "{}", to_epoch(e.timestamp), reason)
        self._rows.append((_ROW, e.originator_id, _COMMITTED_SQL, e.reservation_id, before, ()))
        self._totals(e, position, -e.reserved, e.actual, e.overrun, -replaced if replaced else None)

    def _settled_by_ledger(self, e: Any, position: int) -> None:
        how = "pro rata to the last sign of life" if e.method == "pro_rata" else "presumed spent as reserved"
        before = (e.amount, to_epoch(e.timestamp), f"{e.reason}: {how}")
        self._rows.append((_ROW, e.originator_id, _SETTLED_BY_LEDGER_SQL, e.reservation_id, before, ()))
        self._totals(e, position, -e.reserved, 0, 0, e.amount)

    def _released(self, e: Any, position: int) -> None:
        self._settled(e, position, _SETTLED_SQL["released"], e.reason)

    def _expired(self, e: Any, position: int) -> None:
        self._settled(e, position, _SETTLED_SQL["expired"], "")

    def _settled(self, e: Any, position: int, sql: str, reason: str) -> None:
        self._rows.append((_ROW, e.originator_id, sql, e.reservation_id, (to_epoch(e.timestamp), reason), ()))
        self._totals(e, position, -e.amount, 0, 0)

    def _charged(self, e: Any, position: int) -> None:
        at, basis = to_epoch(e.timestamp), dump(e.basis)
        after = (e.amount, e.amount, e.overrun, basis, basis, e.reason, at, at, position)
        self._rows.append((_ROW, e.originator_id, _CHARGED_SQL, e.charge_id, (), after))
        self._totals(e, position, 0, e.amount, e.overrun)

    def _adjusted(self, e: Any, position: int) -> None:
        at = to_epoch(e.timestamp)
        after = (
            e.amount,
            e.amount,
            e.overrun,
            dump({"bill": e.bill}),
            "brought to the provider's bill",
            at,
            at,
            position,
        )
        self._rows.append((_ROW, e.originator_id, _ADJUSTED_SQL, e.adjustment_id, (), after))
        self._totals(e, position, 0, e.amount - e.presumed, e.overrun, e.presumed or None)

    def _rolled_up(self, e: Any, position: int) -> None:
        presumed = e.presumed_delta if e.presumed_delta or e.kind in ("settle", "late_commit") else None
        self._totals(e, position, e.pending_delta, e.committed_delta, e.overrun_delta, presumed)


def spend_handlers(names: Names) -> ViewHandlers:
    """The spend view's handler of each event class it projects: one SpendView for them all."""
    from ledger.domain.accounts import Account

    spend = SpendView(names, Account)
    return dict.fromkeys(spend.events(), spend)
