"""Reconciliation: what the trainers committed beside what the providers billed.

Attribution. A bill line belongs to the run its run id names, when the ledger knows that run; else
to the run linked to its session (Runs.LinkSession); else to the account its account names, when
the ledger knows it; else to no one: unattributed, billed spend no run accounted for. Attribution
is decided when the views are read, so a run opened or linked after its bill was recorded takes
its lines from then on, and every replica answers alike.

Figures, per account a line or a commit belongs to directly (a run's own account is named by its
run id), all integer micro-dollars:

- estimated: what the trainers committed there (commits and charges; adjustments excluded);
- billed: the current amounts of its lines (a restatement replaces the amount it restates);
- the time a bill covers: up to its provider's cost_data_through, or, without one, the end of the
  provider's last billed interval (the earliest of these over the providers billing the account);
- pending bill: the estimate after that time (hours whose end is past it): the bill is to come;
- provisional: billed amounts of lines that end after it (rate-card estimates that may change);
- drift: billed minus estimated over the covered time (billed - provisional - (estimated -
  pending)), and as a percentage of that estimate; flagged when its magnitude is above the
  threshold (5% by default), or when there is billed spend against no estimate at all;
- adjusted: the adjustments recorded (spend reconcile --adjust); unadjusted: drift - adjusted,
  what an adjustment would record now (with no line left, -adjusted: the adjustment of lines that
  went to a run opened or linked since is taken back).

An account's row rolls up its own figures and those of every account under it. Tokens are
compared by class (train, prefill, sample) where the lines give quantities of that class: the
tokens in the commits' cost bases over the covered time against the tokens of the lines that are
not provisional. The commits
are counted by the hour they were recorded in (view_spend_hours), so a bill that covers a time
within an hour counts that hour as not covered yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import msgspec

from ledger.views.bills.handlers import HOUR_S
from ledger.views.models import (
    BillTotals,
    ProviderBill,
    ReconcileReport,
    Reconciliation,
    TokenClassDrift,
    UnattributedGroup,
)

__all__ = [
    "BillReads",
    "Figures",
    "DEFAULT_THRESHOLD_PERCENT",
    "TOKEN_CLASSES",
    "UNATTRIBUTED_LISTED",
    "totals",
]

DEFAULT_THRESHOLD_PERCENT = 5.0
TOKEN_CLASSES = ("train", "prefill", "sample")
UNATTRIBUTED_LISTED = 50
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


@dataclass
class Figures:
    """What belongs to one account directly, or to an account and everything under it."""

    billed: int = 0
    provisional: int = 0
    lines: int = 0
    unpriced: int = 0
    estimated: int = 0
    estimated_final: int = 0
    adjusted: int = 0
    providers: set[str] = field(default_factory=set)
    billed_tokens: dict[str, int] = field(default_factory=dict)
    ledger_tokens: dict[str, int] = field(default_factory=dict)

    def add(self, other: Figures) -> None:
        self.billed += other.billed
        self.provisional += other.provisional
        self.lines += other.lines
        self.unpriced += other.unpriced
        self.estimated += other.estimated
        self.estimated_final += other.estimated_final
        self.adjusted += other.adjusted
        self.providers |= other.providers
        for mine, theirs in ((self.billed_tokens, other.billed_tokens), (self.ledger_tokens, other.ledger_tokens)):
            for token_class, tokens in theirs.items():
                mine[token_class] = mine.get(token_class, 0) + tokens

    @property
    def empty(self) -> bool:
        return not (self.lines or self.estimated or self.adjusted)


def totals(figures: Figures, threshold_percent: float) -> BillTotals:
    """The BillTotals of `figures` (see the module's docstring for each)."""
    covered_estimate = figures.estimated_final
    billed_final = figures.billed - figures.provisional
    if figures.lines:
        drift = billed_final - covered_estimate
        percent = drift * 100 / covered_estimate if covered_estimate else None
        flagged = abs(drift) * 100 > threshold_percent * covered_estimate if covered_estimate else drift != 0
        unadjusted = drift - figures.adjusted
    else:
        # Nothing billed here (any more: its lines went to a run opened or linked since): nothing
        # drifts, and an adjustment made for those lines is to be taken back.
        drift, percent, flagged, unadjusted = 0, None, False, -figures.adjusted
    return BillTotals(
        estimated_usd_micro=figures.estimated,
        billed_usd_micro=figures.billed,
        drift_usd_micro=drift,
        drift_percent=percent,
        adjusted_usd_micro=figures.adjusted,
        pending_bill_usd_micro=figures.estimated - covered_estimate,
        provisional_usd_micro=figures.provisional,
        lines=figures.lines,
        unpriced_lines=figures.unpriced,
        flagged=flagged,
        unadjusted_usd_micro=unadjusted,
    )


def token_drifts(figures: Figures) -> tuple[TokenClassDrift, ...]:
    return tuple(
        TokenClassDrift(
            token_class=token_class,
            ledger_tokens=figures.ledger_tokens.get(token_class, 0),
            billed_tokens=figures.billed_tokens[token_class],
            drift_tokens=figures.billed_tokens[token_class] - figures.ledger_tokens.get(token_class, 0),
        )
        for token_class in TOKEN_CLASSES
        if token_class in figures.billed_tokens
    )


def _utc(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


class Coverage(NamedTuple):
    """What one provider's bill covers (epoch seconds)."""

    covered: float | None  # cost_data_through, else the end of the last billed interval
    cost_data_through: float | None
    first_start: float | None
    last_end: float | None
    lines: int
    restatements: int


Coverages = dict[str, Coverage]


class BillReads:
    """The reconciliation queries over the bill view (mixed into ledger.views.queries.ViewReader,
    which provides `_rows` and `_row`)."""

    _rows: Callable[..., list[Any]]
    _row: Callable[..., Any]

    # What each provider's bill covers.

    def _coverage(self) -> Coverages:
        return {
            provider: Coverage(through if through is not None else last, through, first, last, lines, restatements)
            for provider, through, first, last, lines, restatements in self._rows(
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
                for session, run_id in self._rows(
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
            known.update(row[0] for row in self._rows(sql.format(", ".join("?" * len(chunk))), tuple(chunk)))
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
            return self._rows(sql)
        rows: list[Any] = []
        for chunk in _chunks(sorted(accounts)):
            rows.extend(self._rows(f"{sql} WHERE account IN ({', '.join('?' * len(chunk))})", tuple(chunk)))
        return rows

    def _lines_of(self, accounts: set[str]) -> list[Any]:
        """The lines that may be attributed to `accounts` (run accounts by run id and session, any
        account by name), each once: one query over three indexes, however large the bill."""
        rows: dict[tuple[Any, ...], Any] = {}
        for chunk in _chunks(sorted(accounts)):
            marks = ", ".join("?" * len(chunk))
            for row in self._rows(
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
        if self._row(ANY_BILL) is None:
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
                    for row in self._rows(
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
        parents = dict(self._rows("SELECT account, parent FROM view_accounts"))
        names = dict(self._rows("SELECT run_id, name FROM view_runs"))
        if run_id:
            scope: set[str] | None = {run_id}
        elif account:
            scope = {account} | self._descendants(account)
        else:
            scope = None
        rows = self._rows(_LINES) if scope is None else self._lines_of(scope)
        attributed = self._attributed(rows)
        figures = self._figures(attributed, coverage, scope)
        threshold = threshold_percent
        run_rows = [
            self._reconciliation(target, names.get(target, ""), parents.get(target, ""), entry, threshold)
            for target, entry in figures.items()
            if target in names
        ]
        run_rows.sort(key=lambda row: (-abs(row.bill.drift_usd_micro), -row.bill.billed_usd_micro, row.run_id))
        page = run_rows[offset : offset + limit]
        rolled: dict[str, Figures] = {}
        if not run_id:
            for target, entry in figures.items():
                holder, seen = parents.get(target, ""), 0
                if target not in names:
                    rolled.setdefault(target, Figures()).add(entry)
                while holder and seen < 64:
                    if scope is None or holder in scope:
                        rolled.setdefault(holder, Figures()).add(entry)
                    holder, seen = parents.get(holder, ""), seen + 1
        account_rows = tuple(
            sorted(
                (
                    Reconciliation(
                        run_id="",
                        name="",
                        account=name,
                        parent=parents.get(name, ""),
                        bill=totals(entry, threshold),
                        providers=tuple(sorted(entry.providers)),
                        token_classes=token_drifts(entry),
                    )
                    for name, entry in rolled.items()
                    if name not in names
                ),
                key=lambda row: row.account,
            )
        )
        providers, unattributed = self._providers(
            attributed if scope is None else self._attributed(self._rows(_LINES)), coverage
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

    @staticmethod
    def _reconciliation(target: str, name: str, parent: str, entry: Figures, threshold: float) -> Reconciliation:
        return Reconciliation(
            run_id=target,
            name=name,
            account=target,
            parent=parent,
            bill=totals(entry, threshold),
            providers=tuple(sorted(entry.providers)),
            token_classes=token_drifts(entry),
        )

    def _providers(
        self,
        attributed: list[tuple[str, Any]],
        coverage: Coverages,
    ) -> tuple[tuple[ProviderBill, ...], tuple[UnattributedGroup, ...]]:
        billed: dict[str, list[int]] = {provider: [0, 0, 0, 0] for provider in coverage}
        groups: dict[tuple[str, str], list[int]] = {}
        for target, row in attributed:
            provider, amount = row[0], row[4] or 0
            figures = billed.setdefault(provider, [0, 0, 0, 0])
            figures[0] += amount
            figures[2] += 1
            if not target:
                figures[1] += amount
                figures[3] += 1
                run_id, account, session, description = row[6], row[7], row[8], row[9]
                source = (
                    f"session {session}"
                    if session
                    else f"run {run_id}"
                    if run_id
                    else f"account {account}"
                    if account
                    else description or row[1]
                )
                group = groups.setdefault((provider, source), [0, 0])
                group[0] += amount
                group[1] += 1
        nothing = Coverage(None, None, None, None, 0, 0)
        providers = tuple(
            ProviderBill(
                provider=provider,
                billed_usd_micro=figures[0],
                unattributed_usd_micro=figures[1],
                lines=figures[2],
                unattributed_lines=figures[3],
                restatements=coverage.get(provider, nothing).restatements,
                cost_data_through=_utc(coverage.get(provider, nothing).cost_data_through),
                first_interval_start=_utc(coverage.get(provider, nothing).first_start),
                last_interval_end=_utc(coverage.get(provider, nothing).last_end),
            )
            for provider, figures in sorted(billed.items())
        )
        unattributed = tuple(
            UnattributedGroup(provider=provider, source=source, billed_usd_micro=amount, lines=count)
            for (provider, source), (amount, count) in sorted(
                groups.items(), key=lambda item: (-abs(item[1][0]), item[0])
            )[:UNATTRIBUTED_LISTED]
        )
        return providers, unattributed

    def _last_end(self, coverage: Coverages, provider: str) -> float | None:
        row = self._row("SELECT MAX(end_at) FROM view_bill_lines WHERE provider = ?", (provider,))
        return None if row is None else row[0]

    def adjust_targets(self, *, run_id: str = "", account: str = "") -> list[tuple[str, Figures]]:
        """The accounts (a run's: its run id) whose own figures have unadjusted drift, with them."""
        coverage = self._coverage()
        scope: set[str] | None = {run_id or account} if (run_id or account) else None
        rows = self._rows(_LINES) if scope is None else self._lines_of(scope)
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
