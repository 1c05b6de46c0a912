"""How each event changes the views (their tables: ledger.views.schema).

`handlers(names)` gives, per view, the handler of each event class it projects; each runs in the
projector's transaction. The SQL is portable between SQLite and PostgreSQL (`?` placeholders are
rewritten by the PostgreSQL connection wrapper). Account and family events carry the aggregate
id, not the name: the Opened/Created handlers record the name in view_names, and `names` (each
projector has its own) keeps those names in memory for the events that follow. A handler may
instead gather a chunk's events and write them once at its end (`Gathered`: the chart view's
rollup, ledger.views.rollup, so a chunk of many batches costs one write per bucket; the spend
view's SpendView, so a chunk's reservation rows go by statement and each account's totals are
written once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol

import msgspec

from ledger.views.leases import lease_handlers
from ledger.views.reports import report_recorded
from ledger.views.rollup import ROLLUP_COLUMNS, ROLLUP_SHIFTS, STEPS_METRIC, Aggregate, ChartRollup, aggregate, merge
from ledger.views.search.tables import search_handlers
from trainledger.pricing import cost_usd_micro

__all__ = [
    "ROLLUP_COLUMNS",
    "ROLLUP_SHIFTS",
    "STEPS_METRIC",
    "Aggregate",
    "Gathered",
    "Handler",
    "Names",
    "aggregate",
    "apply_events",
    "handlers",
    "merge",
    "prepare",
    "to_epoch",
]

_json = msgspec.json.Encoder()
_json_decode = msgspec.json.decode

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


def to_epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def _dump(value: Any) -> str:
    return _json.encode(value).decode()


Cursor = Any
Handler = Callable[[Cursor, Any, int], None]


class Gathered(Protocol):
    """A handler that gathers the events of a chunk (`add`) and writes them once, at the end of the
    chunk (`flush`, in the chunk's transaction). Only a view whose rows no other handler of the
    view reads or writes may have one (its writes come after the view's other handlers')."""

    gathered: bool

    def add(self, event: Any, position: int) -> None: ...

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows of everything added since the last call, and forget it (no storage read)."""
        ...

    def write(self, cursor: Cursor, rows: list[tuple[Any, ...]]) -> None: ...

    def clear(self) -> None: ...


# runs view


def _run_opened(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_runs (run_id, run_key, name, status, spec, summary, error, opened_at, finished_at,"
        " current_attempt, last_step, position) VALUES (?, ?, ?, 'running', ?, '{}', '', ?, NULL, 0, NULL, ?)",
        (str(e.originator_id), e.run_key, e.name, _dump(e.spec), to_epoch(e.timestamp), position),
    )


def _attempt_started(c: Cursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    floor = -1 if e.resumed_from_step is None else e.resumed_from_step
    c.execute("UPDATE view_attempts SET ended = 1 WHERE run_id = ?", (run_id,))
    c.execute(
        "INSERT INTO view_attempts (run_id, number, attempt_id, label, started_at, resumed_from_step, ended)"
        " VALUES (?, ?, ?, ?, ?, ?, 0)",
        (run_id, e.attempt, e.attempt_id, e.label, to_epoch(e.timestamp), e.resumed_from_step),
    )
    c.execute("UPDATE view_checkpoints SET superseded = 1 WHERE run_id = ? AND step > ?", (run_id, floor))
    c.execute(
        "UPDATE view_runs SET current_attempt = ?, last_step = ?, status = 'running', position = ? WHERE run_id = ?",
        (e.attempt, e.resumed_from_step, position, run_id),
    )


def _steps_for_runs(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_runs SET last_step = ?, position = ? WHERE run_id = ?",
        (e.steps[-1], position, str(e.originator_id)),
    )


def _checkpoint_saved(c: Cursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "INSERT INTO view_checkpoints (run_id, attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at,"
        " expires_at, digest, superseded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
        (
            run_id,
            e.attempt,
            e.step,
            e.backend,
            e.uri,
            e.fidelity,
            e.sampler_uri,
            int(e.final),
            to_epoch(e.timestamp),
            to_epoch(e.expires_at),
            e.digest,
        ),
    )
    c.execute("UPDATE view_runs SET position = ? WHERE run_id = ?", (position, run_id))


def _merge_summary(c: Cursor, run_id: str, notes: dict[str, Any]) -> str:
    c.execute("SELECT summary FROM view_runs WHERE run_id = ?", (run_id,))
    row = c.fetchone()
    return _dump({**_json_decode(row[0]), **notes})


def _finished(c: Cursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_runs SET status = ?, summary = ?, error = ?, finished_at = ?, position = ? WHERE run_id = ?",
        (e.status, _merge_summary(c, run_id, e.summary), e.error, to_epoch(e.timestamp), position, run_id),
    )
    c.execute("UPDATE view_attempts SET ended = 1 WHERE run_id = ?", (run_id,))


def _summary_noted(c: Cursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_runs SET summary = ?, position = ? WHERE run_id = ?",
        (_merge_summary(c, run_id, e.summary), position, run_id),
    )


# series view


def _steps_for_series(c: Cursor, e: Any, position: int) -> None:
    # One row per batch, naming the event that holds its columns (a page reads them from the log,
    # ledger.views.series): projecting costs the same for a batch of one step or ten thousand, and
    # the steps are stored once.
    c.execute(
        "INSERT INTO view_series (run_id, first_step, attempt, last_step, superseded_above, count, position)"
        " VALUES (?, ?, ?, ?, NULL, ?, ?)",
        (str(e.originator_id), e.steps[0], e.attempt, e.steps[-1], len(e.steps), position),
    )


def _supersede_series(c: Cursor, e: Any, position: int) -> None:
    # Steps above the new attempt's resume point, recorded by earlier attempts, are superseded:
    # a batch row keeps the lowest such floor, and its steps above it read as superseded.
    floor = -1 if e.resumed_from_step is None else e.resumed_from_step
    c.execute(
        "UPDATE view_series SET superseded_above = ? WHERE run_id = ? AND last_step > ? AND attempt < ?"
        " AND (superseded_above IS NULL OR superseded_above > ?)",
        (floor, str(e.originator_id), floor, e.attempt, floor),
    )


# chart view: the min/max rollup of each metric, gathered per chunk (ledger.views.rollup computes
# and writes it; ledger.views.charts reads it).


# spend view: one gathered handler (SpendView) for every event the view projects.

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
    which leaves the position of the account's last event (a later cap's stays)."""

    gathered = True

    def __init__(self, names: Names, account: Any) -> None:
        self._names = names
        self._rows: list[tuple[Any, ...]] = []
        self._make: dict[type, Callable[[Any, int], None]] = {
            account.Opened: self._opened,
            account.CapSet: self._cap_set,
            account.SpendReserved: self._reserved,
            account.SpendRefused: self._refused,
            account.SpendCommitted: self._committed,
            account.SpendReleased: self._released,
            account.SpendExpired: self._expired,
            account.SpendSettled: self._settled_by_ledger,
            account.SpendCharged: self._charged,
            account.SpendAdjusted: self._adjusted,
            account.SpendRolledUp: self._rolled_up,
            account.PlanReserved: self._plan_reserved,
            account.PlanRefused: self._plan_refused,
            account.PlanDrawn: self._plan_drawn,
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

    def write(self, cursor: Cursor, rows: list[tuple[Any, ...]]) -> None:
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
    def _flush(cursor: Cursor, batches: dict[str, list[tuple[Any, ...]]]) -> None:
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
        after = (e.amount, _dump(e.basis), e.attempt, to_epoch(e.timestamp), to_epoch(e.expires_at), position)
        self._rows.append((_ROW, e.originator_id, _RESERVED_SQL, e.reservation_id, (), after))
        self._totals(e, position, e.amount, 0, 0)

    def _refused(self, e: Any, position: int, sql: str = _REFUSED_SQL) -> None:
        at = to_epoch(e.timestamp)
        # Stored, so its wording never changes: a ledger written by an earlier version must rebuild
        # to the same rows (tests/ledger/test_upgrade_corpus.py). The amount is in micro-dollars.
        reason = f"cap of {e.refused_by} would be crossed: {e.remaining} remained"
        after = (e.amount, _dump(e.basis), reason, e.attempt, at, at, position)
        self._rows.append((_ROW, e.originator_id, sql, e.reservation_id, (), after))

    def _plan_reserved(self, e: Any, position: int) -> None:
        after = (e.amount, _dump(e.basis), e.attempt, to_epoch(e.timestamp), to_epoch(e.expires_at), position)
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
        before = (e.actual, e.overrun, _dump(e.basis) if e.basis else "{}", to_epoch(e.timestamp), reason)
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
        at, basis = to_epoch(e.timestamp), _dump(e.basis)
        after = (e.amount, e.amount, e.overrun, basis, basis, e.reason, at, at, position)
        self._rows.append((_ROW, e.originator_id, _CHARGED_SQL, e.charge_id, (), after))
        self._totals(e, position, 0, e.amount, e.overrun)

    def _adjusted(self, e: Any, position: int) -> None:
        at = to_epoch(e.timestamp)
        after = (
            e.amount,
            e.amount,
            e.overrun,
            _dump({"bill": e.bill}),
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


# bill view: providers' bill lines, runs' sessions, and the spend the trainers committed by hour
# and token class (what a bill is compared with over the time it covers).

HOUR_S = 3_600
_LINE_COLUMNS = (
    "provider, line_id, start, end_at, amount, amount_text, quantities, run_id, account, session_id, tags,"
    " description, restated, position"
)


def hour_of(moment: datetime) -> int:
    """The start of the UTC hour of `moment`, in epoch seconds."""
    return int(moment.timestamp()) // HOUR_S * HOUR_S


def _bill_opened(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_bill_providers (provider, lines, restatements, cost_data_through, first_start, last_end,"
        " position) VALUES (?, 0, 0, NULL, NULL, NULL, ?) ON CONFLICT (provider) DO NOTHING",
        (e.provider, position),
    )


def _line_payload(line: dict[str, Any]) -> tuple[Any, ...]:
    """What a restatement may change: the columns of view_bill_lines from amount to description."""
    return (
        line["amount"],
        line["amount_text"],
        _dump(line["quantities"]),
        line["run_id"],
        line["account"],
        line["session_id"],
        _dump(line["tags"]),
        line["description"],
    )


def _line_key(provider: str, line: dict[str, Any]) -> tuple[Any, ...]:
    return provider, line["line_id"], line["start"].timestamp(), line["end"].timestamp()


def _lines_billed(c: Cursor, e: Any, position: int, provider: str) -> None:
    if e.lines:
        c.executemany(
            f"INSERT INTO view_bill_lines ({_LINE_COLUMNS}) VALUES ({', '.join('?' * 14)})"
            " ON CONFLICT (provider, line_id, start, end_at) DO NOTHING",
            [(*_line_key(provider, line), *_line_payload(line), 0, position) for line in e.lines],
        )
    first = min((line["start"].timestamp() for line in e.lines), default=None)
    last = max((line["end"].timestamp() for line in e.lines), default=None)
    c.execute(
        "UPDATE view_bill_providers SET lines = lines + ?, cost_data_through = COALESCE(?, cost_data_through),"
        " first_start = CASE WHEN first_start IS NULL OR ? < first_start THEN ? ELSE first_start END,"
        " last_end = CASE WHEN last_end IS NULL OR ? > last_end THEN ? ELSE last_end END,"
        " position = ? WHERE provider = ?",
        (len(e.lines), to_epoch(e.cost_data_through), first, first, last, last, position, provider),
    )


def _lines_restated(c: Cursor, e: Any, position: int, provider: str) -> None:
    c.executemany(
        "UPDATE view_bill_lines SET amount = ?, amount_text = ?, quantities = ?, run_id = ?, account = ?,"
        " session_id = ?, tags = ?, description = ?, restated = restated + 1, position = ?"
        " WHERE provider = ? AND line_id = ? AND start = ? AND end_at = ?",
        [(*_line_payload(line), position, *_line_key(provider, line)) for line in e.lines],
    )
    c.execute(
        "UPDATE view_bill_providers SET restatements = restatements + ?, position = ? WHERE provider = ?",
        (len(e.lines), position, provider),
    )


def _ignore(c: Cursor, e: Any, position: int) -> None:
    """Nothing to change (the event only names its aggregate)."""


def _session_linked(c: Cursor, e: Any, position: int) -> None:
    # The first run linked to a session keeps it.
    c.execute(
        "INSERT INTO view_run_sessions (provider, session_id, run_id, attempt, position) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (provider, session_id) DO NOTHING",
        (e.provider, e.session_id, str(e.originator_id), e.attempt, position),
    )


def _spent_in_hour(
    c: Cursor, account: str, moment: datetime, committed: int, adjusted: int, basis: dict[str, Any]
) -> None:
    hour = hour_of(moment)
    c.execute(
        "INSERT INTO view_spend_hours (account, hour, committed, adjusted) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (account, hour) DO UPDATE SET committed = view_spend_hours.committed + excluded.committed,"
        " adjusted = view_spend_hours.adjusted + excluded.adjusted",
        (account, hour, committed, adjusted),
    )
    tokens: dict[str, int] = {}
    for line in basis.get("tokens") or ():
        tokens[line["token_class"]] = tokens.get(line["token_class"], 0) + int(line.get("tokens", 0))
    if tokens:
        c.executemany(
            "INSERT INTO view_spend_tokens (account, hour, token_class, tokens) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (account, hour, token_class)"
            " DO UPDATE SET tokens = view_spend_tokens.tokens + excluded.tokens",
            [(account, hour, token_class, count) for token_class, count in tokens.items()],
        )


def _real_basis(basis: dict[str, Any], amount: int) -> dict[str, Any]:
    """The basis when it is the usage the amount was for (it works out to the amount, as the
    ledger now requires of every basis), else none: a commit that older clients stored with a
    copy of its reservation's estimate counts no tokens, so tokens by class are only real ones."""
    return basis if basis and cost_usd_micro(basis) == amount else {}


def _committed_in_hour(c: Cursor, e: Any, position: int, account: str) -> None:
    # A late commit replaces what the ledger had presumed for its hold: the estimate is the actual.
    _spent_in_hour(c, account, e.timestamp, e.actual - e.replaced, 0, _real_basis(e.basis, e.actual))


def _settled_in_hour(c: Cursor, e: Any, position: int, account: str) -> None:
    # What the ledger presumed spent for an abandoned hold is an estimate like a commit's: the
    # bill is compared with it (no token counts: the hold's basis was only an estimate).
    _spent_in_hour(c, account, e.timestamp, e.amount, 0, {})


def _charged_in_hour(c: Cursor, e: Any, position: int, account: str) -> None:
    _spent_in_hour(c, account, e.timestamp, e.amount, 0, _real_basis(e.basis, e.amount))


def _adjusted_in_hour(c: Cursor, e: Any, position: int, account: str) -> None:
    _spent_in_hour(c, account, e.timestamp, 0, e.amount, {})


# registry view


def _family_created(c: Cursor, e: Any, position: int) -> None:
    c.execute("INSERT INTO view_families (family, current, position) VALUES (?, 0, ?)", (e.name, position))


def _version_registered(c: Cursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_versions (family, version, artifact_uri, digest, source_run_id, source_step, metadata,"
        " registered_at, principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            family,
            e.version,
            e.artifact_uri,
            e.digest,
            e.source_run_id,
            e.source_step,
            _dump(e.metadata),
            to_epoch(e.timestamp),
            e.principal,
        ),
    )


def _version_promoted(c: Cursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_promotions (family, position, version, previous, kind, verdict, reason, at, principal)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            family,
            position,
            e.version,
            e.previous,
            e.kind,
            _dump(e.verdict),
            e.reason,
            to_epoch(e.timestamp),
            e.principal,
        ),
    )
    c.execute("UPDATE view_families SET current = ?, position = ? WHERE family = ?", (e.version, position, family))


def _promotion_refused(c: Cursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_promotions (family, position, version, previous, kind, verdict, reason, at, principal)"
        " VALUES (?, ?, ?, ?, 'refused', ?, ?, ?, ?)",
        (family, position, e.version, e.current, _dump(e.verdict), e.message, to_epoch(e.timestamp), e.principal),
    )
    c.execute(
        "INSERT INTO view_refusals (family, position, refusal, expected_current) VALUES (?, ?, ?, ?)",
        (family, position, e.refusal, e.expected_current),
    )


def _alias_moved(c: Cursor, e: Any, position: int, family: str) -> None:
    c.execute("DELETE FROM view_aliases WHERE family = ? AND alias = ?", (family, e.alias))
    if e.version:
        c.execute(
            "INSERT INTO view_aliases (family, alias, version, moved_at, principal, position)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (family, e.alias, e.version, to_epoch(e.timestamp), e.principal, position),
        )


def _family_retired(c: Cursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_retirements (family, reason, at, principal, position) VALUES (?, ?, ?, ?, ?)",
        (family, e.reason, to_epoch(e.timestamp), e.principal, position),
    )


# provenance view: runs' objectives, plans, retractions and progress anchors, checkpoints' scores
# and deletions, datasets, and the checkpoints registry versions were made from.

#: How old the newer progress anchor gets before it becomes the older one: the recent step rate
#: spans roughly one to two of these (ledger.views.provenance.progress).
PROGRESS_WINDOW_S = 60.0


def _plan_opened(c: Cursor, e: Any, position: int) -> None:
    objective = getattr(e, "objective", None) or {}
    c.execute(
        "INSERT INTO view_run_plans (run_id, metric, mode, max_steps, retraction_reason, retraction_principal,"
        " retracted_at, anchor_time, anchor_step, recent_time, recent_step, last_time, last_step, position)"
        " VALUES (?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?)",
        (
            str(e.originator_id),
            objective.get("metric", ""),
            objective.get("mode", ""),
            getattr(e, "max_steps", None),
            position,
        ),
    )


def _plan_changed(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_run_plans SET max_steps = ?, position = ? WHERE run_id = ?",
        (e.max_steps, position, str(e.originator_id)),
    )


def _plan_attempt(c: Cursor, e: Any, position: int) -> None:
    # A new attempt's rate starts from its own first batch.
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_run_plans SET anchor_time = NULL, anchor_step = NULL, recent_time = NULL, recent_step = NULL,"
        " last_time = NULL, last_step = NULL, position = ? WHERE run_id = ?",
        (position, run_id),
    )
    if getattr(e, "max_steps", None) is not None:
        c.execute("UPDATE view_run_plans SET max_steps = ? WHERE run_id = ?", (e.max_steps, run_id))


def _plan_steps(c: Cursor, e: Any, position: int) -> None:
    # One statement (every right-hand side reads the row as it was): the first batch of an
    # attempt sets both anchors; a batch a window after the newer anchor makes it the older one
    # and itself the newer; every batch is the last.
    t, step = to_epoch(e.timestamp), e.steps[-1]
    moved = "recent_time IS NULL OR ? - recent_time >= ?"
    c.execute(
        f"UPDATE view_run_plans SET"
        f" anchor_time = CASE WHEN recent_time IS NULL THEN ? WHEN ? - recent_time >= ? THEN recent_time"
        f" ELSE anchor_time END,"
        f" anchor_step = CASE WHEN recent_time IS NULL THEN ? WHEN ? - recent_time >= ? THEN recent_step"
        f" ELSE anchor_step END,"
        f" recent_time = CASE WHEN {moved} THEN ? ELSE recent_time END,"
        f" recent_step = CASE WHEN {moved} THEN ? ELSE recent_step END,"
        f" last_time = ?, last_step = ?, position = ? WHERE run_id = ?",
        (
            *(t, t, PROGRESS_WINDOW_S),
            *(step, t, PROGRESS_WINDOW_S),
            *(t, PROGRESS_WINDOW_S, t),
            *(t, PROGRESS_WINDOW_S, step),
            *(t, step, position, str(e.originator_id)),
        ),
    )


def _plan_retracted(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_run_plans SET retraction_reason = ?, retraction_principal = ?, retracted_at = ?, position = ?"
        " WHERE run_id = ?",
        (e.reason, e.principal, to_epoch(e.timestamp), position, str(e.originator_id)),
    )


def _checkpoint_scored(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_checkpoint_marks (run_id, attempt, step, scores, deleted_at, deleted_reason)"
        " VALUES (?, ?, ?, ?, NULL, NULL)",
        (str(e.originator_id), e.attempt, e.step, _dump(getattr(e, "scores", None) or {})),
    )


def _checkpoint_deleted(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_checkpoint_marks SET deleted_at = ?, deleted_reason = ? WHERE run_id = ? AND attempt = ?"
        " AND step = ?",
        (to_epoch(e.timestamp), e.reason, str(e.originator_id), e.attempt, e.step),
    )


def _checkpoint_registered(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_registered_points (run_id, family, version, attempt, step) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (run_id, family, version) DO NOTHING",
        (str(e.originator_id), e.family, e.version, e.attempt, e.step),
    )


def _dataset_recorded(c: Cursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_datasets (run_id, role, digest, format, rows, tokens, source_uri, report, recorded_at,"
        " position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(e.originator_id),
            e.role,
            e.digest,
            e.format,
            e.rows,
            e.tokens,
            e.source_uri,
            _dump(e.report),
            to_epoch(e.timestamp),
            position,
        ),
    )


def _version_source(c: Cursor, e: Any, position: int, family: str) -> None:
    source = getattr(e, "source_checkpoint", None)
    if source:
        c.execute(
            "INSERT INTO view_version_sources (family, version, run_id, step, attempt, checkpoint_digest)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (family, e.version, source["run_id"], source["step"], source["attempt"], source["checkpoint_digest"]),
        )


class Names:
    """Account and family names by aggregate id, read from view_names once and kept in memory
    (by the id itself: its text form is made only to write or read view_names)."""

    def __init__(self) -> None:
        self._cached: dict[Any, str] = {}

    def remember(self, c: Cursor, originator_id: Any, name: str) -> None:
        c.execute(
            "INSERT INTO view_names (id, name) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", (str(originator_id), name)
        )
        self._cached[originator_id] = name

    def lookup(self, c: Cursor, originator_id: Any) -> str:
        name = self._cached.get(originator_id)
        if name is None:
            key = str(originator_id)
            c.execute("SELECT name FROM view_names WHERE id = ?", (key,))
            row = c.fetchone()
            if row is None:
                raise LookupError(f"no name recorded for aggregate {key}")
            name = self._cached[originator_id] = row[0]
        return name


def _both(first: Handler, then: Handler) -> Handler:
    def both(c: Cursor, e: Any, position: int) -> None:
        first(c, e, position)
        then(c, e, position)

    return both


def handlers(names: Names) -> dict[str, dict[type, Handler | Gathered]]:
    """view -> event class -> handler(cursor, event, position); account and family names are
    recorded in and looked up through `names`."""
    from ledger.domain.accounts import Account
    from ledger.domain.bills import Bill
    from ledger.domain.registry import Family
    from ledger.domain.runs import Run

    def named(handler: Callable[[Cursor, Any, int, str], None]) -> Handler:
        return lambda c, e, position: handler(c, e, position, names.lookup(c, e.originator_id))

    def providing(handler: Handler) -> Handler:
        def first(c: Cursor, e: Any, position: int) -> None:
            names.remember(c, e.originator_id, e.provider)
            handler(c, e, position)

        return first

    def naming(handler: Handler) -> Handler:
        def first(c: Cursor, e: Any, position: int) -> None:
            names.remember(c, e.originator_id, e.name)
            handler(c, e, position)

        return first

    spend = SpendView(names, Account)
    runs: dict[type, Handler | Gathered] = {
        Run.Opened: _run_opened,
        Run.AttemptStarted: _attempt_started,
        Run.StepsRecorded: _steps_for_runs,
        Run.CheckpointSaved: _checkpoint_saved,
        Run.Finished: _finished,
        Run.SummaryNoted: _summary_noted,
    }
    for event_class, lease_handler in lease_handlers(Run).items():
        known = runs.get(event_class)
        runs[event_class] = lease_handler if known is None else _both(known, lease_handler)  # type: ignore[arg-type]
    return {
        "runs": runs,
        "series": {Run.StepsRecorded: _steps_for_series, Run.AttemptStarted: _supersede_series},
        "chart": {Run.StepsRecorded: ChartRollup()},
        "spend": dict.fromkeys(spend.events(), spend),
        "bill": {
            Account.Opened: naming(_ignore),
            Account.SpendCommitted: named(_committed_in_hour),
            Account.SpendSettled: named(_settled_in_hour),
            Account.SpendCharged: named(_charged_in_hour),
            Account.SpendAdjusted: named(_adjusted_in_hour),
            Run.SessionLinked: _session_linked,
            Bill.Opened: providing(_bill_opened),
            Bill.LinesBilled: named(_lines_billed),
            Bill.LinesRestated: named(_lines_restated),
        },
        "registry": {
            Family.Created: naming(_family_created),
            Family.VersionRegistered: named(_version_registered),
            Family.VersionPromoted: named(_version_promoted),
            Family.PromotionRefused: named(_promotion_refused),
            Family.AliasMoved: named(_alias_moved),
            Family.Retired: named(_family_retired),
        },
        "provenance": {
            Run.Opened: _plan_opened,
            Run.PlanChanged: _plan_changed,
            Run.AttemptStarted: _plan_attempt,
            Run.StepsRecorded: _plan_steps,
            Run.Retracted: _plan_retracted,
            Run.CheckpointSaved: _checkpoint_scored,
            Run.CheckpointDeleted: _checkpoint_deleted,
            Run.CheckpointRegistered: _checkpoint_registered,
            Run.DatasetRecorded: _dataset_recorded,
            Family.Created: naming(_ignore),
            Family.VersionRegistered: named(_version_source),
        },
        "reports": {Run.ReportRecorded: report_recorded},
        "search": search_handlers(Run),
    }


def apply_events(
    cursor: Cursor,
    view_handlers: dict[type, Handler | Gathered],
    events: Iterable[tuple[int, Any]],
    prepared: dict[int, list[tuple[Any, ...]]] | None = None,
) -> None:
    """Apply (position, event) pairs to one view inside the caller's transaction; gathered
    handlers write once, after the rest. `prepared` holds, by id of a gathered handler, the rows
    it already made of these same events (`prepare`, before the transaction): it only writes them."""
    gathering: list[Gathered] = []
    try:
        for position, event in events:
            handler = view_handlers.get(type(event))
            if handler is None:
                continue
            if getattr(handler, "gathered", False):
                gathered: Gathered = handler  # type: ignore[assignment]
                if prepared is None or id(gathered) not in prepared:
                    gathered.add(event, position)
                if gathered not in gathering:
                    gathering.append(gathered)
            else:
                handler(cursor, event, position)  # type: ignore[operator]
        for gathered in gathering:
            rows = prepared.get(id(gathered)) if prepared is not None else None
            gathered.write(cursor, gathered.rows() if rows is None else rows)
    finally:
        for gathered in gathering:
            gathered.clear()


def prepare(view_handlers: dict[type, Handler | Gathered], events: Iterable[tuple[int, Any]]) -> dict[int, list[Any]]:
    """The rows each gathered handler of one view makes of `events`, computed without storage (so
    outside the transaction that writes them: `apply_events(..., prepared=...)`)."""
    gathering: list[Gathered] = []
    try:
        for position, event in events:
            handler = view_handlers.get(type(event))
            if getattr(handler, "gathered", False):
                gathered: Gathered = handler  # type: ignore[assignment]
                gathered.add(event, position)
                if gathered not in gathering:
                    gathering.append(gathered)
        return {id(gathered): gathered.rows() for gathered in gathering}
    finally:
        for gathered in gathering:
            gathered.clear()
