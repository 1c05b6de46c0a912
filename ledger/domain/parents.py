"""What a command on a spend account does to the parent accounts above it: every change of the
account is mirrored onto each parent (`roll_up`, a SpendRolledUp saved in the same transaction),
so an account and its parents move atomically; and new spend anywhere below a retracted run's
account is refused (`check_not_retracted`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ledger.domain.accounts import Account
from ledger.domain.base import Audit

__all__ = ["check_not_retracted", "roll_up"]


def roll_up(
    parents: list[Account],
    audit: Audit,
    child: Account,
    ref: str,
    kind: str,
    pending_delta: int,
    committed_delta: int,
    presumed_delta: int = 0,
) -> None:
    """Mirror a change of `child` onto every parent, each computing its own overrun: a commit
    overruns by what its actual exceeds its hold; spend without a hold (a charge, a late
    commit, net of the settlement it replaces) overruns by what lies beyond the parent's
    remaining amount."""
    for parent in parents:
        if kind == "commit":
            overrun_delta = max(0, committed_delta + pending_delta)
        elif kind in ("charge", "late_commit", "adjust"):
            overrun_delta = parent.excess(committed_delta + presumed_delta)
        else:
            overrun_delta = 0
        fields: dict[str, Any] = {"presumed_delta": presumed_delta} if presumed_delta else {}
        parent.record(
            Account.SpendRolledUp,
            audit,
            child=child.name,
            ref=ref,
            kind=kind,
            pending_delta=pending_delta,
            committed_delta=committed_delta,
            overrun_delta=overrun_delta,
            **fields,
        )


def check_not_retracted(accounts: Iterable[Account]) -> None:
    """New spend is refused in a retracted run's subtree: a hold, a charge or an account opened on
    an account which, or a parent of which, is a retracted run's account is
    RUN_RETRACTED, naming that account, as a write on the run's own account is."""
    for account in accounts:
        account.check_not_retracted()
