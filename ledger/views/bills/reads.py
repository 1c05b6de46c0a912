"""Reads of the bill view: the reconciliation (see ledger.views.bills for its rules and figures),
an account's bill beside its estimate, and an account's spend by hour."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from ledger.views.bills.figures import (
    DEFAULT_THRESHOLD_PERCENT,
    TOKEN_CLASSES,
    Coverage,
    Coverages,
    Figures,
    provider_bills,
    reconciliation,
    rolled_up,
    totals,
)
from ledger.views.bills.handlers import HOUR_S
from ledger.views.models import (
    BillTotals,
    ReconcileReport,
    SpendHour,
)
from ledger.views.rows import utc_time
from ledger.views.store import Query

__all__ = ["ANY_BILL", "BillReads"]

# Whether any bill was recorded at all (the common answer, none, ends a totals read).
ANY_BILL = "SELECT 1 FROM view_bill_providers LIMIT 1"
_decode_quantities = msgspec.json.Decoder(dict[str, float]).decode
_LINES = (
    "SELECT provider, line_id, start, end_at, amount, quantities, run_id, account, session_id, description"
    " FROM view_bill_lines"
)
_LINES_OF_SESSIONS = (
    "SELECT l.provider, l.line_id, l.start, l.end_at, l.amount, l.quantities, l.run_id, l.account, l.session_id,"
    " l.description FROM view_bill_lines l JOIN view_run_sessions s ON s.provider = l.provider"
    " AND s.session_id = l.session_id"
)


class BillReads:
    """The reconciliation queries over the bill view, run by `query`."""

    def __init__(self, query: Query) -> None:
        self.query = query

    # What each provider's bill covers.

    def _coverage(self) -> Coverages:
        return {
            provider: Coverage(through if through is not None else last, through, first, last, lines, restatements)
            for provider, through, first, last, lines, restatements in self.query.rows(
                "SELECT provider, cost_data_through, first_start, last_end, lines, restatements"
                " FROM view_bill_providers"
            )
        }

    # Attribution.

    def _attributed(self, rows: Iterable[Any]) -> list[tuple[str, Any]]:
        """(target account or "", row) for line rows, by the rules of the module's docstring."""
        rows = list(rows)
        run_ids = {row[6] for row in rows if row[6]}
        accounts = {row[7] for row in rows if row[7]}
        sessions = {(row[0], row[8]) for row in rows if row[8]}
        known_runs = self._known("SELECT run_id FROM view_runs WHERE run_id IN ({})", run_ids)
        known_accounts = self._known("SELECT account FROM view_accounts WHERE account IN ({})", accounts)
        linked: dict[tuple[str, str], str] = {}
        for provider in {provider for provider, _ in sessions}:
            ids = {session for p, session in sessions if p == provider}
            for chunk in _chunks(sorted(ids)):
                for session, run_id in self.query.rows(
                    "SELECT session_id, run_id FROM view_run_sessions WHERE provider = ? AND session_id IN"
                    f" ({', '.join('?' * len(chunk))})",
                    (provider, *chunk),
                ):
                    linked[(provider, session)] = run_id
        attributed = []
        for row in rows:
            run_id, account, session = row[6], row[7], row[8]
            if run_id in known_runs:
                target = run_id
            elif session and (row[0], session) in linked:
                target = linked[(row[0], session)]
            elif account in known_accounts:
                target = account
            else:
                target = ""
            attributed.append((target, row))
        return attributed

    def _known(self, sql: str, values: set[str]) -> set[str]:
        known: set[str] = set()
        for chunk in _chunks(sorted(values)):
            known.update(row[0] for row in self.query.rows(sql.format(", ".join("?" * len(chunk))), tuple(chunk)))
        return known

    # Figures.

    def _figures(
        self,
        attributed: Iterable[tuple[str, Any]],
        coverage: Coverages,
        accounts: set[str] | None,
    ) -> dict[str, Figures]:
        """Figures per target account (only `accounts`, when given), from attributed lines and the
        spend by hour of those accounts."""
        figures: dict[str, Figures] = {}
        through: dict[str, float] = {}
        for target, row in attributed:
            if not target or (accounts is not None and target not in accounts):
                continue
            provider, _, _, end, amount, quantities = row[:6]
            entry = figures.setdefault(target, Figures())
            known = coverage.get(provider)
            covered = None if known is None else known.covered
            entry.lines += 1
            entry.providers.add(provider)
            provisional = covered is not None and end > covered
            if amount is None:
                entry.unpriced += 1
            else:
                entry.billed += amount
                if provisional:
                    entry.provisional += amount
            if covered is not None:
                through[target] = min(through.get(target, covered), covered)
            if quantities and quantities != "{}":
                for unit, quantity in _decode_quantities(quantities).items():
                    if unit in TOKEN_CLASSES:
                        # Compared over the covered time, as the ledger's tokens are.
                        counted = 0 if provisional else int(quantity)
                        entry.billed_tokens[unit] = entry.billed_tokens.get(unit, 0) + counted
        hours = self._spend_rows("SELECT account, hour, committed, adjusted FROM view_spend_hours", accounts)
        for account, hour, committed, adjusted in hours:
            entry = figures.setdefault(account, Figures())
            entry.estimated += committed
            entry.adjusted += adjusted
            covered = through.get(account)
            if covered is None or hour + HOUR_S <= covered:
                # Without a bill, nothing is covered: the whole estimate is pending (below).
                entry.estimated_final += committed if covered is not None else 0
        tokens = self._spend_rows("SELECT account, hour, token_class, tokens FROM view_spend_tokens", accounts)
        for account, hour, token_class, count in tokens:
            covered = through.get(account)
            if covered is not None and hour + HOUR_S <= covered and account in figures:
                ledger_tokens = figures[account].ledger_tokens
                ledger_tokens[token_class] = ledger_tokens.get(token_class, 0) + count
        return {account: entry for account, entry in figures.items() if not entry.empty}

    def _spend_rows(self, sql: str, accounts: set[str] | None) -> list[Any]:
        if accounts is None:
            return self.query.rows(sql)
        rows: list[Any] = []
        for chunk in _chunks(sorted(accounts)):
            rows.extend(self.query.rows(f"{sql} WHERE account IN ({', '.join('?' * len(chunk))})", tuple(chunk)))
        return rows

    def _lines_of(self, accounts: set[str]) -> list[Any]:
        """The lines that may be attributed to `accounts` (run accounts by run id and session, any
        account by name), each once: one query over three indexes, however large the bill."""
        rows: dict[tuple[Any, ...], Any] = {}
        for chunk in _chunks(sorted(accounts)):
            marks = ", ".join("?" * len(chunk))
            for row in self.query.rows(
                f"{_LINES} WHERE run_id IN ({marks}) UNION {_LINES} WHERE account IN ({marks})"
                f" UNION {_LINES_OF_SESSIONS} WHERE s.run_id IN ({marks})",
                (*chunk, *chunk, *chunk),
            ):
                rows[row[:4]] = row
        return list(rows.values())

    # Answers.

    def bill_totals(
        self, account: str, *, rolled_up: bool, threshold_percent: float = DEFAULT_THRESHOLD_PERCENT
    ) -> BillTotals | None:
        """The bill beside the estimate for one account (a run's: its run id), alone or with every
        account under it; None when no bill line is attributed there (and nothing was adjusted)."""
        if self.query.row(ANY_BILL) is None:
            return None  # No bill recorded at all: one tiny query.
        accounts = {account} | (self._descendants(account) if rolled_up else set())
        lines = self._lines_of(accounts)
        if not lines and not self._adjusted(accounts):
            # No bill here (the common case, answered by two small queries): the spend totals say
            # what was estimated.
            return None
        coverage = self._coverage()
        figures = self._figures(self._attributed(lines), coverage, accounts)
        if not figures:
            return None
        whole = Figures()
        for entry in figures.values():
            whole.add(entry)
        if not whole.lines and not whole.adjusted:
            return None  # No bill yet: the spend totals say what was estimated.
        return totals(whole, threshold_percent)

    def _adjusted(self, accounts: set[str]) -> int:
        """The adjustments recorded on `accounts` (left when their lines went to a run since)."""
        return sum(
            adjusted
            for _, _, _, adjusted in self._spend_rows(
                "SELECT account, hour, committed, adjusted FROM view_spend_hours", accounts
            )
        )

    def _descendants(self, account: str) -> set[str]:
        found: set[str] = set()
        frontier = [account]
        while frontier:
            children: list[str] = []
            for chunk in _chunks(frontier):
                children.extend(
                    row[0]
                    for row in self.query.rows(
                        f"SELECT account FROM view_accounts WHERE parent IN ({', '.join('?' * len(chunk))})",
                        tuple(chunk),
                    )
                )
            frontier = [child for child in children if child not in found]
            found.update(frontier)
        return found

    def reconcile(
        self,
        *,
        run_id: str = "",
        account: str = "",
        threshold_percent: float = DEFAULT_THRESHOLD_PERCENT,
        limit: int,
        offset: int = 0,
        position: int = 0,
    ) -> tuple[ReconcileReport, bool]:
        """The reconciliation (see the module's docstring): runs by largest drift first (a page of
        `limit` after `offset`; the bool says whether more follow), accounts that are not a run's
        rolled up, every provider, and the largest unattributed groups."""
        coverage = self._coverage()
        parents = dict(self.query.rows("SELECT account, parent FROM view_accounts"))
        run_names = dict(self.query.rows("SELECT run_id, name FROM view_runs"))
        if run_id:
            scope: set[str] | None = {run_id}
        elif account:
            scope = {account} | self._descendants(account)
        else:
            scope = None
        rows = self.query.rows(_LINES) if scope is None else self._lines_of(scope)
        attributed = self._attributed(rows)
        figures = self._figures(attributed, coverage, scope)
        threshold = threshold_percent
        run_rows = [
            reconciliation(target, run_names.get(target, ""), parents.get(target, ""), entry, threshold)
            for target, entry in figures.items()
            if target in run_names
        ]
        run_rows.sort(key=lambda row: (-abs(row.bill.drift_usd_micro), -row.bill.billed_usd_micro, row.run_id))
        page = run_rows[offset : offset + limit]
        rolled = {} if run_id else rolled_up(figures, parents, set(run_names), scope)
        account_rows = tuple(
            sorted(
                (
                    reconciliation("", "", parents.get(name, ""), entry, threshold, account=name)
                    for name, entry in rolled.items()
                    if name not in run_names
                ),
                key=lambda row: row.account,
            )
        )
        providers, unattributed = provider_bills(
            attributed if scope is None else self._attributed(self.query.rows(_LINES)), coverage
        )
        report = ReconcileReport(
            runs=tuple(page),
            accounts=account_rows,
            providers=providers,
            unattributed=unattributed,
            next_page_token="",
            threshold_percent=threshold,
            position=position,
        )
        return report, offset + limit < len(run_rows)

    def spend_hours(self, account: str) -> tuple[SpendHour, ...] | None:
        """What `account` spent in each UTC hour it spent in (adjustments included, as in its
        committed total), oldest first, with the part of it the ledger presumed for abandoned holds
        (settlements no late commit replaced, by the hour they were settled in) apart; None for an
        unknown account."""
        if self.query.row("SELECT 1 FROM view_accounts WHERE account = ?", (account,)) is None:
            return None
        presumed: dict[int, int] = {}
        for actual, settled_at in self.query.rows(
            "SELECT actual, settled_at FROM view_reservations WHERE account = ? AND state = 'settled'", (account,)
        ):
            hour = int(settled_at) // HOUR_S * HOUR_S
            presumed[hour] = presumed.get(hour, 0) + actual
        return tuple(
            SpendHour(
                hour=utc_time(hour),
                committed_usd_micro=committed + adjusted - presumed.get(hour, 0),
                presumed_usd_micro=presumed.get(hour, 0),
            )
            for hour, committed, adjusted in self.query.rows(
                "SELECT hour, committed, adjusted FROM view_spend_hours WHERE account = ? ORDER BY hour", (account,)
            )
        )

    def adjust_targets(self, *, run_id: str = "", account: str = "") -> list[tuple[str, Figures]]:
        """The accounts (a run's: its run id) whose own figures have unadjusted drift, with them."""
        coverage = self._coverage()
        scope: set[str] | None = {run_id or account} if (run_id or account) else None
        rows = self.query.rows(_LINES) if scope is None else self._lines_of(scope)
        figures = self._figures(self._attributed(rows), coverage, scope)
        return sorted(
            (
                (target, entry)
                for target, entry in figures.items()
                if totals(entry, DEFAULT_THRESHOLD_PERCENT).unadjusted_usd_micro
            ),
            key=lambda item: item[0],
        )


def _chunks(values: list[str], size: int = 500) -> Iterable[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
