"""`trainledger watch RUN` in a pseudo-terminal (tests/e2e/test_watch.py's server, client and
Terminal): the progress line shows the plan the run was opened with (OpenRun max_steps, as
`runs show` writes it), and a watch started before the trainer opened its run waits for it,
saying so, bounded by --wait-s."""

from __future__ import annotations

import signal

import pytest

from clients import LedgerClient
from services.cli import main
from tests.e2e.test_watch import Terminal, address, client  # noqa: F401  (the module's fixtures)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120), pytest.mark.subprocess]


def test_the_live_view_shows_the_plan_the_run_was_opened_with(client: LedgerClient, address: str) -> None:  # noqa: F811
    run_id = client.open_run(run_key="watch-plan", name="watch-plan", max_steps=400).state.run.run_id
    attempt = client.start_attempt(run_id=run_id).attempt
    steps = list(range(97))
    client.append_steps(run_id=run_id, attempt=attempt, steps=steps, metrics={"loss": [1.0] * len(steps)})
    terminal = Terminal("watch-plan", "--address", address)
    try:
        terminal.expect(r"step 96 of 400 \(24\.0%\)")
        client.append_steps(run_id=run_id, attempt=attempt, steps=[97, 98], metrics={"loss": [0.5, 0.25]})
        terminal.expect(r"step 98 of 400 \(24\.5%\), [0-9.]+ steps/s, ETA [0-9dhms ]+ \(\d\d:\d\d UTC\)")
        client.finish_run(run_id=run_id, attempt=attempt, status="done")
        assert terminal.exit_status() == 0
        assert terminal.screen.strip().splitlines()[-1].startswith("watch-plan done at step 98 of 400, spend")
    finally:
        terminal.close()


def test_a_watch_started_before_the_run_waits_for_it_to_appear(client: LedgerClient, address: str) -> None:  # noqa: F811
    terminal = Terminal("watch-later", "--address", address)
    try:
        terminal.expect(r"waiting for run watch-later to appear")
        assert terminal.process.poll() is None
        run_id = client.open_run(run_key="watch-later", name="watch-later").state.run.run_id
        attempt = client.start_attempt(run_id=run_id).attempt
        terminal.expect(rf"watch-later\s+{run_id}\s+running\s+attempt 1")
        client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [1.0, 0.5]})
        terminal.expect(r"step 2\b")
        client.finish_run(run_id=run_id, attempt=attempt, status="done")
        assert terminal.exit_status() == 0
    finally:
        terminal.close()


def test_wait_s_bounds_the_wait_for_a_run_that_never_appears(
    address: str,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["watch", "never-opened", "--address", address, "--wait-s", "0.5"]) == 1
    out, errors = capsys.readouterr()
    assert out == ""
    assert errors.splitlines() == [
        "waiting for run never-opened to appear (at most 0.5 s; Ctrl-C to stop)…",
        "trainledger: no run never-opened",
    ]


def test_ctrl_c_ends_the_wait_with_status_130(address: str) -> None:  # noqa: F811
    terminal = Terminal("never-there", "--address", address)
    try:
        terminal.expect(r"waiting for run never-there to appear \(Ctrl-C to stop\)")
        terminal.process.send_signal(signal.SIGINT)
        assert terminal.exit_status() == 130
    finally:
        terminal.close()
