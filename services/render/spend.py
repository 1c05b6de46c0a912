"""Spend for people: an account's totals against its cap and its reservations, a cap as set, a plan
hold, and what "presumed" means beside an amount the ledger presumed spent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.render.tables import basis_text, fields, table, usd, when
from trainledger.text import account_text as holder_text

__all__ = ["PRESUMED_GLOSS", "account_totals_text", "cap_text", "plan_hold_text", "presumed_text", "spend_text"]

#: What "presumed" means, in one line beside a presumed amount.
PRESUMED_GLOSS = "presumed: charged by the ledger for holds nobody settled, pro rata or as reserved"


def presumed_text(presumed: int) -> str:
    """ " $0.400000 presumed,": what the ledger charged for abandoned holds (pro rata or as reserved),
    shown apart from what was committed; empty when nothing was."""
    return f" {usd(presumed)} presumed," if presumed else ""


def spend_text(committed: int, cap: int | None, presumed: int = 0) -> str:
    """ "$1.200000 of $5.000000": spend against the cap ("of no cap" without one): committed plus
    what the ledger presumed spent for abandoned holds, as the cap counts it, the presumed part
    named ("$1.200000 of $5.000000 ($0.200000 presumed)")."""
    text = f"{usd(committed + presumed)} of {usd(cap) if cap is not None else 'no cap'}"
    return text + (f" ({usd(presumed)} presumed)" if presumed else "")


def account_totals_text(account: Any, reservations: Sequence[Any], more: str = "") -> str:
    """An account's totals against its cap and a page of its reservations; `more` says how to
    see the next page."""
    text = fields(
        [
            ("account", account.account),
            ("parent", account.parent or None),
            ("cap", usd(account.cap_usd_micro) if account.cap_usd_micro is not None else "none"),
            ("committed", usd(account.committed_usd_micro)),
            *([("presumed", usd(account.presumed_usd_micro))] if account.presumed_usd_micro else []),
            ("pending", usd(account.pending_usd_micro)),
            ("remaining", usd(account.remaining_usd_micro)),
            ("overrun", usd(account.overrun_usd_micro)),
            *([("plan", plan_hold_text(account.plan))] if account.plan is not None else []),
        ]
    )
    listed = (
        table(
            ["ID", "KIND", "STATE", "AMOUNT", "ACTUAL", "OVERRUN", "BASIS", "REASON", "AT", "SETTLED"],
            [
                (
                    e.reservation_id,
                    e.kind,
                    e.state,
                    usd(e.amount_usd_micro),
                    usd(e.actual_usd_micro),
                    usd(e.overrun_usd_micro),
                    basis_text(e.actual_basis or e.basis),
                    e.reason or None,
                    when(e.reserved_at),
                    when(e.settled_at),
                )
                for e in reservations
            ],
        )
        if reservations
        else "(no reservation)"
    )
    return "\n\n".join([text, listed] + ([more] if more else []))


def plan_hold_text(plan: Any) -> str:
    """A plan hold on one line: what was planned, drawn by holds and is still held, and its state."""
    return (
        f"{usd(plan.planned_usd_micro)} planned, {usd(plan.drawn_usd_micro)} drawn,"
        f" {usd(plan.held_usd_micro)} held ({plan.state})"
    )


def cap_text(account: Any, position: int, run_name: str | None = None) -> str:
    """What `spend cap` prints: the account (a run's by the run's name and id, given
    `run_name`) and its cap and totals as they stand after it."""
    cap = usd(account.cap_usd_micro) if account.cap_usd_micro is not None else "none"
    return (
        f"{holder_text(account.account, run_name)}: cap {cap}, {usd(account.committed_usd_micro)} committed,"
        f"{presumed_text(account.presumed_usd_micro)}"
        f" {usd(account.pending_usd_micro)} pending, remaining {usd(account.remaining_usd_micro)}"
        f" (position {position})"
    )
