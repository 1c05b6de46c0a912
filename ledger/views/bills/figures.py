"""The figures a reconciliation is made of (what belongs to an account, directly or rolled up) and
the BillTotals they give: see ledger.views.bills for each figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from ledger.views.models import BillTotals, ProviderBill, Reconciliation, TokenClassDrift, UnattributedGroup

__all__ = [
    "DEFAULT_THRESHOLD_PERCENT",
    "TOKEN_CLASSES",
    "Coverage",
    "Coverages",
    "Figures",
    "token_drifts",
    "totals",
    "UNATTRIBUTED_LISTED",
    "provider_bills",
    "reconciliation",
    "rolled_up",
    "utc",
]

DEFAULT_THRESHOLD_PERCENT = 5.0
TOKEN_CLASSES = ("train", "prefill", "sample")
UNATTRIBUTED_LISTED = 50


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


def utc(epoch: float | None) -> datetime | None:
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


def reconciliation(
    target: str, name: str, parent: str, entry: Figures, threshold: float, *, account: str | None = None
) -> Reconciliation:
    """A run's reconciliation (`target` its id), or with `account` an account's (`target` "")."""
    return Reconciliation(
        run_id=target,
        name=name,
        account=target if account is None else account,
        parent=parent,
        bill=totals(entry, threshold),
        providers=tuple(sorted(entry.providers)),
        token_classes=token_drifts(entry),
    )


def rolled_up(
    figures: dict[str, Figures], parents: dict[str, str], runs: set[str], scope: set[str] | None
) -> dict[str, Figures]:
    """The figures of every account (within `scope`, when given) with those of every account under
    it: each target's figures added to itself (unless it is a run) and to each of its ancestors."""
    rolled: dict[str, Figures] = {}
    for target, entry in figures.items():
        ancestor, seen = parents.get(target, ""), 0
        if target not in runs:
            rolled.setdefault(target, Figures()).add(entry)
        while ancestor and seen < 64:
            if scope is None or ancestor in scope:
                rolled.setdefault(ancestor, Figures()).add(entry)
            ancestor, seen = parents.get(ancestor, ""), seen + 1
    return rolled


def provider_bills(
    attributed: list[tuple[str, Any]],
    coverage: Coverages,
) -> tuple[tuple[ProviderBill, ...], tuple[UnattributedGroup, ...]]:
    """Each provider's bill (what it billed, and of that what no one was attributed), and the
    UNATTRIBUTED_LISTED largest groups of unattributed lines, by provider and source."""
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
            cost_data_through=utc(coverage.get(provider, nothing).cost_data_through),
            first_interval_start=utc(coverage.get(provider, nothing).first_start),
            last_interval_end=utc(coverage.get(provider, nothing).last_end),
        )
        for provider, figures in sorted(billed.items())
    )
    unattributed = tuple(
        UnattributedGroup(provider=provider, source=source, billed_usd_micro=amount, lines=count)
        for (provider, source), (amount, count) in sorted(groups.items(), key=lambda item: (-abs(item[1][0]), item[0]))[
            :UNATTRIBUTED_LISTED
        ]
    )
    return providers, unattributed
