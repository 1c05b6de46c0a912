"""How events change the bill view (its tables: ledger.views.bills.schema): providers' bill lines,
runs' sessions, and the spend the trainers committed by hour and token class (what a bill is
compared with over the time it covers)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.views.handling import Names, ViewHandlers, dump, named, naming, providing, to_epoch
from ledger.views.store import ViewCursor
from trainledger.pricing import cost_usd_micro

__all__ = ["HOUR_S", "bill_handlers", "hour_of"]

HOUR_S = 3_600
_LINE_COLUMNS = (
    "provider, line_id, start, end_at, amount, amount_text, quantities, run_id, account, session_id, tags,"
    " description, restated, position"
)


def hour_of(moment: datetime) -> int:
    """The start of the UTC hour of `moment`, in epoch seconds."""
    return int(moment.timestamp()) // HOUR_S * HOUR_S


def _bill_opened(c: ViewCursor, e: Any, position: int) -> None:
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
        dump(line["quantities"]),
        line["run_id"],
        line["account"],
        line["session_id"],
        dump(line["tags"]),
        line["description"],
    )


def _line_key(provider: str, line: dict[str, Any]) -> tuple[Any, ...]:
    return provider, line["line_id"], line["start"].timestamp(), line["end"].timestamp()


def _lines_billed(c: ViewCursor, e: Any, position: int, provider: str) -> None:
    rows = [(*_line_key(provider, line), *_line_payload(line), 0, position) for line in e.lines]
    if rows:
        c.executemany(
            f"INSERT INTO view_bill_lines ({_LINE_COLUMNS}) VALUES ({', '.join('?' * 14)})"
            " ON CONFLICT (provider, line_id, start, end_at) DO NOTHING",
            rows,
        )
    first = min((row[2] for row in rows), default=None)
    last = max((row[3] for row in rows), default=None)
    c.execute(
        "UPDATE view_bill_providers SET lines = lines + ?, cost_data_through = COALESCE(?, cost_data_through),"
        " first_start = CASE WHEN first_start IS NULL OR ? < first_start THEN ? ELSE first_start END,"
        " last_end = CASE WHEN last_end IS NULL OR ? > last_end THEN ? ELSE last_end END,"
        " position = ? WHERE provider = ?",
        (len(e.lines), to_epoch(e.cost_data_through), first, first, last, last, position, provider),
    )


def _lines_restated(c: ViewCursor, e: Any, position: int, provider: str) -> None:
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


def _session_linked(c: ViewCursor, e: Any, position: int) -> None:
    # The first run linked to a session keeps it.
    c.execute(
        "INSERT INTO view_run_sessions (provider, session_id, run_id, attempt, position) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (provider, session_id) DO NOTHING",
        (e.provider, e.session_id, str(e.originator_id), e.attempt, position),
    )


def _spent_in_hour(
    c: ViewCursor, account: str, moment: datetime, committed: int, adjusted: int, basis: dict[str, Any]
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


def _committed_in_hour(c: ViewCursor, e: Any, position: int, account: str) -> None:
    # A late commit replaces what the ledger had presumed for its hold: the estimate is the actual.
    _spent_in_hour(c, account, e.timestamp, e.actual - e.replaced, 0, _real_basis(e.basis, e.actual))


def _settled_in_hour(c: ViewCursor, e: Any, position: int, account: str) -> None:
    # What the ledger presumed spent for an abandoned hold is an estimate like a commit's: the
    # bill is compared with it (no token counts: the hold's basis was only an estimate).
    _spent_in_hour(c, account, e.timestamp, e.amount, 0, {})


def _charged_in_hour(c: ViewCursor, e: Any, position: int, account: str) -> None:
    _spent_in_hour(c, account, e.timestamp, e.amount, 0, _real_basis(e.basis, e.amount))


def _adjusted_in_hour(c: ViewCursor, e: Any, position: int, account: str) -> None:
    _spent_in_hour(c, account, e.timestamp, 0, e.amount, {})


def bill_handlers(names: Names) -> ViewHandlers:
    """The bill view's handler of each event class it projects, accounts and bills named through
    `names`."""
    from ledger.domain.accounts import Account
    from ledger.domain.bills import Bill
    from ledger.domain.runs import Run

    return {
        Account.Opened: naming(names),
        Account.SpendCommitted: named(names, _committed_in_hour),
        Account.SpendSettled: named(names, _settled_in_hour),
        Account.SpendCharged: named(names, _charged_in_hour),
        Account.SpendAdjusted: named(names, _adjusted_in_hour),
        Run.SessionLinked: _session_linked,
        Bill.Opened: providing(names, _bill_opened),
        Bill.LinesBilled: named(names, _lines_billed),
        Bill.LinesRestated: named(names, _lines_restated),
    }
