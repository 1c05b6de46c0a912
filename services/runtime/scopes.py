"""What a token scoped to an account may read of a run's answers beyond the run itself: its
lineage (the run it started from and the runs started from it) only where those runs lie under
the scope. The call itself is authorized by services.runtime.auth."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["lineage_within"]


def lineage_within(ledger: Any, state: Any, scope: str) -> Any:
    """A run's state as a token scoped to `scope` may read it: its source and the children it
    lists kept only where they are runs under the scope (an unscoped caller may start a run from
    another scope's checkpoint; the scoped reader hears nothing of that scope's runs). Children
    dropped are taken off child_count; a run with more than the listed children may count some
    outside the scope. Runs in a worker thread (it reads the ledger)."""
    if not scope:
        return state
    source = state.source
    if source is not None and not ledger.run_within(source.run_id, scope):
        source = None
    children = tuple(child for child in state.children if ledger.run_within(child.run_id, scope))
    dropped = len(state.children) - len(children)
    if source is state.source and not dropped:
        return state
    return msgspec.structs.replace(
        state, source=source, children=children, child_count=max(0, state.child_count - dropped)
    )
