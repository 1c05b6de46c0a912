"""Lineage in the ledger, on SQLite and PostgreSQL: a run opened from another run's checkpoint
records it on Run.Opened, its state names the source, and the source's state lists its children
(the latest few, with their count), also after the views are rebuilt from the log."""

from __future__ import annotations

from ledger import Ledger


def _base(ledger: Ledger) -> str:
    run_id = ledger.open_run(run_key="base", name="base").run_id
    ledger.start_attempt(run_id=run_id, attempt_id="a1")
    ledger.append_steps(run_id=run_id, attempt=1, steps=list(range(10)), metrics={"loss": [1.0] * 10})
    for step in (4, 9):
        ledger.save_checkpoint(run_id=run_id, attempt=1, step=step, backend="local", uri=f"file:///c/{step}")
    return run_id


def test_children_are_listed_newest_first_and_survive_a_rebuild(ledger: Ledger, clock) -> None:
    base = _base(ledger)
    children = []
    for number in range(3):
        clock.advance(seconds=1)
        source = {"run_id": base, "step": 4 if number else 9, "uri": ""}
        children.append(ledger.open_run(run_key=f"child-{number}", name=f"child {number}", source_checkpoint=source))
    ledger.wait(ledger.head())
    state = ledger.run_state(base)
    assert [(c.name, c.step) for c in state.children] == [("child 2", 4), ("child 1", 4), ("child 0", 9)]
    assert state.child_count == 3 and state.source is None
    child = ledger.run_state(children[0].run_id)
    assert child.source is not None
    assert (child.source.run_id, child.source.name, child.source.step) == (base, "base", 9)
    ledger.projector.rebuild(("lineage",))
    ledger.wait(ledger.head())
    assert ledger.run_state(base).children == state.children
