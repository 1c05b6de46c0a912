"""A run id is the uuid of a run. The uuid of an account or of a model family passed as a run id
names no run: every command and read answers RUN_NOT_FOUND, never an internal error, and
nothing is recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ledger import Ledger, NotFound
from ledger.domain.base import ledger_id
from tests.ledger.conftest import DIGEST_A

COMMANDS: dict[str, Callable[[Ledger, str], Any]] = {
    "start_attempt": lambda app, run_id: app.start_attempt(run_id=run_id),
    "append_steps": lambda app, run_id: app.append_steps(run_id=run_id, attempt=1, steps=[1]),
    "save_checkpoint": lambda app, run_id: app.save_checkpoint(
        run_id=run_id, attempt=1, step=1, backend="local", uri="file:///tmp/c"
    ),
    "finish_run": lambda app, run_id: app.finish_run(run_id=run_id, attempt=1, status="done"),
    "note_summary": lambda app, run_id: app.note_summary(run_id=run_id, summary={"note": 1}),
    "run_state": lambda app, run_id: app.run_state(run_id),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["account", "family"])
def test_the_uuid_of_another_aggregate_is_no_run(ledger: Ledger, command: str, kind: str) -> None:
    ledger.open_account(account="team", cap_usd_micro=1_000)
    ledger.register(family="fam", artifact_uri="file:///m", digest=DIGEST_A)
    other = str(ledger_id(kind, {"account": "team", "family": "fam"}[kind]))
    head = ledger.head()
    with pytest.raises(NotFound) as refused:
        COMMANDS[command](ledger, other)
    assert refused.value.reason == "RUN_NOT_FOUND"
    assert ledger.head() == head
