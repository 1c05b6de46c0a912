"""What a token scoped to an account may read of a run's answers beyond the run itself: its
lineage (the run it started from and the runs started from it) only where those runs lie under
the scope. The call itself is authorized by services.runtime.auth."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["child_count_within", "lineage_within", "run_state_within"]


def lineage_within(ledger: Any, state: Any, scope: str) -> Any:
    """A run's state as a token scoped to `scope` may read it: its source and the children it
    lists kept only where they are runs under the scope (an unscoped caller may start a run from
    another scope's checkpoint; the scoped reader hears nothing of that scope's runs), and the
    count as child_count_within says. Runs in a worker thread (it reads the ledger)."""
    if not scope:
        return state
    source = state.source
    if source is not None and not ledger.run_within(source.run_id, scope):
        source = None
    children = tuple(child for child in state.children if ledger.run_within(child.run_id, scope))
    count = child_count_within(len(state.children), len(children), state.child_count)
    if source is state.source and count == state.child_count:
        return state
    return msgspec.structs.replace(state, source=source, children=children, child_count=count)


def run_state_within(ledger: Any, run_id: str, min_position: int, timeout_s: float, scope: str) -> Any:
    """The run's state (Ledger.run_state) as a token scoped to `scope` may read it
    (lineage_within): the read and its lineage in one worker-thread call, not two."""
    return lineage_within(ledger, ledger.run_state(run_id, min_position=min_position, timeout_s=timeout_s), scope)


def child_count_within(listed: int, kept: int, count: int) -> int:
    """How many children a scoped reader is told a run has, of `count` in all, when `kept` of the
    `listed` ones lie under its scope: all of those under the scope when every child is listed;
    past the listed ones, those kept only (the unlisted may lie outside the scope, and counting
    them would tell the reader of runs it may not know exist)."""
    return max(0, count - (listed - kept)) if listed >= count else kept
