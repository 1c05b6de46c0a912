"""`trainledger watch RUN` as a person runs it: a real `trainledger serve` process (one for the
module), runs recorded through clients.LedgerClient over loopback, and the watch command as its own
process, in a pseudo-terminal (the live view, ANSI stripped) and through a pipe (one plain line per
event); a run already finished and the one-line refusals (no such run, no ledger at the address)
run the command in this process through services.cli.commands.main, which saves a process start each.
Every wait reads with a deadline until the expected text is there; nothing sleeps blindly.

Also the model behind the view (services.cli.watch_model.Follow) with a clock the test moves: the step
rate and the time left, and the spec keys that give the step count."""

from __future__ import annotations

import fcntl
import os
import pty
import queue
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clients import LedgerClient
from clients.models import (
    Attempt,
    LineageRun,
    MetricColumn,
    RunInfo,
    RunState,
    SpendTotals,
    StepBatch,
    WatchUpdate,
)
from services.cli import main
from services.cli.watch_model import Follow, total_steps
from tests.e2e.test_serve_guards import environment, trainledger

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

WAIT_S = 20.0  # The most any expected text or exit is waited for (it comes in well under a second).
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r")


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module: its HOST:PORT."""
    directory = tmp_path_factory.mktemp("watch")
    with open(directory / "server.log", "w") as log:
        server = subprocess.Popen(
            [*trainledger(), "serve", "--db", str(directory / "ledger.db"), "--listen", "127.0.0.1:0", "--no-http"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=directory,
            env=environment(),
        )
    try:
        assert server.stdout is not None
        readable, _, _ = select.select([server.stdout], [], [], 60)
        line = server.stdout.readline() if readable else ""
        match = re.search(r"serving on (127\.0\.0\.1:\d+)", line)
        assert match, f"the server did not start: {line!r} {(directory / 'server.log').read_text()[-2000:]}"
        yield match.group(1)
    finally:
        server.kill()
        server.wait(timeout=WAIT_S)
        assert server.stdout is not None
        server.stdout.close()


@pytest.fixture(scope="module")
def client(address: str) -> Iterator[LedgerClient]:
    with LedgerClient(address, principal="trainer") as made:
        yield made


def opened(client: LedgerClient, name: str, spec: dict[str, object], cap_usd_micro: int | None) -> tuple[str, int]:
    """A new run with its first attempt: (run id, attempt)."""
    run_id = client.open_run(run_key=name, name=name, spec=spec, cap_usd_micro=cap_usd_micro).state.run.run_id
    return run_id, client.start_attempt(run_id=run_id).attempt


class Terminal:
    """`trainledger watch ...` in a pseudo-terminal of `columns` x 50 (120 unless told), its screen
    read as plain text."""

    def __init__(self, *args: str, columns: int = 120) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        env = {**environment(), "TERM": "xterm-256color"}
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.process = subprocess.Popen(
            [*trainledger(), "watch", *args], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.master = master
        self.raw = b""

    def _read(self, timeout: float) -> bool:
        """Read what is there within `timeout`; False once the terminal is closed."""
        readable, _, _ = select.select([self.master], [], [], timeout)
        if not readable:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the process ended and its side of the terminal is closed.
            return False
        self.raw += chunk
        return bool(chunk)

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def expect(self, pattern: str) -> re.Match[str]:
        """Wait (at most WAIT_S) until the screen shows `pattern` (a regular expression)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            found = re.search(pattern, self.screen)
            if found:
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 0.5)) and self.process.poll() is not None:
                pytest.fail(f"the screen never showed {pattern!r}; it shows:\n{self.screen[-3000:]}")

    def exit_status(self) -> int:
        """Wait for the process to end, reading its screen to the last byte."""
        deadline = time.monotonic() + WAIT_S
        while self._read(0.2) and time.monotonic() < deadline:
            pass
        return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=WAIT_S)
        os.close(self.master)


class Piped:
    """`trainledger watch ...` with stdout and stderr as pipes: its lines, read with a deadline."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [*trainledger(), "watch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, pattern: str) -> str:
        """The next line matching `pattern` (waiting at most WAIT_S)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                pytest.fail(f"no line matched {pattern!r}; the lines were:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def finish(self) -> tuple[int, list[str], str]:
        """(exit status, the lines not yet read, stderr) once the process ends."""
        status = self.process.wait(timeout=WAIT_S)
        rest: list[str] = []
        while (line := self.lines.get(timeout=WAIT_S)) is not None:
            rest.append(line)
        assert self.process.stderr is not None
        errors = self.process.stderr.read()
        self.process.stderr.close()
        return status, rest, errors

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=WAIT_S)


@pytest.mark.subprocess
def test_the_live_view_follows_steps_checkpoints_and_spend_until_the_run_is_done(
    client: LedgerClient, address: str
) -> None:
    run_id, attempt = opened(client, "watch-live", {"max_steps": 100, "lr": 1e-4}, 5_000_000)
    client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2, 3], metrics={"loss": [3.0, 2.5, 2.0]})
    terminal = Terminal("watch-live", "--address", address)  # By its name.
    try:
        terminal.expect(rf"watch-live\s+{run_id}\s+running\s+attempt 1")
        terminal.expect(r"step 3 of 100 \(3\.0%\)")  # What was recorded before the watch began.
        terminal.expect(r"loss\s+2\s+2\s+3\s+3")  # last, min, max, at step

        client.append_steps(
            run_id=run_id,
            attempt=attempt,
            steps=[4, 5],
            metrics={"loss": [1.5, 1.25], "eval_acc": {"values": [0.625], "index": [1]}},
        )
        terminal.expect(r"step 5 of 100 \(5\.0%\), [0-9.]+ steps/s, ETA [0-9dhms ]+ \(\d\d:\d\d UTC\)")
        terminal.expect(r"loss\s+1\.25\s+1\.25\s+3\s+5")
        terminal.expect(r"eval_acc\s+0\.625\s+0\.625\s+0\.625\s+5")

        client.save_checkpoint(run_id=run_id, attempt=attempt, step=5, uri="file:///ckpt/5", backend="local")
        terminal.expect(r"step 5 \(attempt 1\): local file:///ckpt/5 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")

        hold = client.reserve(account=run_id, amount_usd_micro=2_000_000, attempt=attempt)
        terminal.expect(r"\$0\.00 of \$5\.00, \$2\.00 pending, \$3\.00 left")
        client.commit(account=run_id, reservation_id=hold.reservation_id, actual_usd_micro=1_250_000)
        terminal.expect(r"\$1\.25 of \$5\.00, \$3\.75 left")

        client.finish_run(run_id=run_id, attempt=attempt, status="done")
        assert terminal.exit_status() == 0
        final = terminal.screen.strip().splitlines()[-1]
        assert final == "watch-live done at step 5 of 100, spend $1.25 of $5.00, $3.75 left"
    finally:
        terminal.close()


@pytest.mark.subprocess
def test_on_an_80_column_terminal_the_progress_words_stay_on_one_line(client: LedgerClient, address: str) -> None:
    run_id, attempt = opened(client, "watch-narrow", {"max_steps": 1_000, "lr": 1e-4}, 5_000_000)
    client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2, 3], metrics={"loss": [3.0, 2.5, 2.0]})
    terminal = Terminal("watch-narrow", "--address", address, columns=80)
    try:
        terminal.expect(r"step 3 of 1,000")
        client.append_steps(run_id=run_id, attempt=attempt, steps=[4, 5], metrics={"loss": [1.5, 1.25]})
        # The rate's figure and its unit, and the time left, on the line that names the step.
        terminal.expect(r"step 5 of 1,000 \(0\.5%\), [0-9.]+ steps/s, ETA [0-9dhms ]+ \(\d\d:\d\d UTC\)")
        terminal.expect(r"\$0\.00 of \$5\.00, \$5\.00 left")
        client.finish_run(run_id=run_id, attempt=attempt, status="done")
        assert terminal.exit_status() == 0
    finally:
        terminal.close()


@pytest.mark.subprocess
def test_through_a_pipe_each_event_is_one_plain_line_and_a_failed_run_exits_1(
    client: LedgerClient, address: str
) -> None:
    run_id, attempt = opened(client, "watch-plain", {"lr": 3e-4}, None)
    piped = Piped(run_id[:8], "--address", address)  # By a prefix of its id.
    try:
        piped.expect(
            rf"^\d\d:\d\d:\d\d watching watch-plain \({run_id}\): running, attempt 1, no step yet,"
            r" spend \$0\.00 of no cap$"
        )
        client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [0.75, 0.5]})
        piped.expect(r"^\d\d:\d\d:\d\d steps 1-2 \(attempt 1\): loss=0\.5$")
        client.save_checkpoint(run_id=run_id, attempt=attempt, step=2, uri="file:///c/2", backend="local")
        piped.expect(r"^\d\d:\d\d:\d\d checkpoint at step 2 \(attempt 1\): local file:///c/2$")
        second = client.start_attempt(run_id=run_id, resume_from_step=2).attempt
        piped.expect(r"^\d\d:\d\d:\d\d attempt 2 started \(resumes from step 2\)$")
        client.append_steps(run_id=run_id, attempt=second, steps=[3], metrics={"loss": [0.25]})
        piped.expect(r"^\d\d:\d\d:\d\d steps 3 \(attempt 2\): loss=0\.25$")
        client.finish_run(run_id=run_id, attempt=second, status="failed", error="out of memory")
        piped.expect(r"^\d\d:\d\d:\d\d run failed: out of memory$")
        status, rest, errors = piped.finish()
        assert rest == ["watch-plain failed (out of memory) at step 3, spend $0.00 of no cap"]
        assert (status, errors) == (1, "trainledger: the run failed\n")
    finally:
        piped.close()


@pytest.mark.subprocess
def test_a_run_already_done_prints_its_final_line_and_exits_0(
    client: LedgerClient, address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, attempt = opened(client, "watch-over", {"total_steps": 2}, 1_000_000)
    client.append_steps(run_id=run_id, attempt=attempt, steps=[1, 2], metrics={"loss": [1.0, 0.5]})
    finished = client.finish_run(run_id=run_id, attempt=attempt, status="done")
    # The views have the finish before the watch reads them (it reads what they hold now).
    client.get_run_state(run_id=run_id, min_position=finished.position)
    assert main(["watch", "watch-over", "--address", address]) == 0
    out, errors = capsys.readouterr()
    assert re.fullmatch(
        rf"\d\d:\d\d:\d\d watching watch-over \({run_id}\): done, attempt 1, step 2 of 2,"
        r" spend \$0\.00 of \$1\.00, \$1\.00 left\n"
        r"watch-over done at step 2 of 2, spend \$0\.00 of \$1\.00, \$1\.00 left\n",
        out,
    ), out
    assert errors == ""


@pytest.mark.subprocess
def test_exit_on_lost_ends_the_watch_of_a_lost_run_with_status_1(client: LedgerClient, address: str) -> None:
    run_id = client.open_run(run_key="watch-lost", name="watch-lost").state.run.run_id
    client.start_attempt(run_id=run_id, lease_s=2)
    deadline = time.monotonic() + WAIT_S
    while client.get_run_state(run_id=run_id).run.status != "lost":  # The server's sweep records it.
        assert time.monotonic() < deadline, "the run was never recorded lost"
        time.sleep(0.2)
    watched = subprocess.run(
        [*trainledger(), "watch", run_id, "--address", address, "--exit-on-lost"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=WAIT_S,
    )
    assert watched.returncode == 1, watched.stderr
    assert watched.stdout.splitlines()[-1].startswith("watch-lost lost at ")
    assert watched.stderr == "trainledger: the run lost\n"


@pytest.mark.subprocess
def test_ctrl_c_ends_the_view_with_status_130(client: LedgerClient, address: str) -> None:
    run_id, _ = opened(client, "watch-interrupted", {}, None)
    terminal = Terminal(run_id, "--address", address)
    try:
        terminal.expect(r"watch-interrupted\s+\S+\s+running\s+attempt 1")
        terminal.process.send_signal(signal.SIGINT)
        assert terminal.exit_status() == 130
    finally:
        terminal.close()


@pytest.mark.subprocess
def test_an_unknown_run_is_one_line_and_exit_status_1(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "no-such-run", "--address", address, "--wait-s", "0"]) == 1
    assert capsys.readouterr() == ("", "trainledger: no run no-such-run\n")


def test_a_name_several_running_runs_share_lists_them_as_runs_show_does(
    client: LedgerClient, address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of one name running: `watch NAME` picks neither (as `runs show NAME`), and says
    so on one line that lists each run's id, status and when it was opened, and how to name one."""
    first = client.open_run(run_key="twin-a", name="watch-twin").state.run
    second = client.open_run(run_key="twin-b", name="watch-twin").state.run
    for run in (first, second):
        client.start_attempt(run_id=run.run_id)
    assert main(["watch", "watch-twin", "--address", address, "--wait-s", "0"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("trainledger: watch-twin is ambiguous: 2 runs of that name: ")
    for run in (first, second):
        assert run.opened_at is not None
        assert f"{run.run_id} (watch-twin, running, opened {run.opened_at:%Y-%m-%d %H:%M:%S} UTC)" in err
    assert err.rstrip().endswith("name one by its run id, a unique prefix of it (4+ characters) or its run key")
    assert main(["runs", "show", "watch-twin", "--address", address]) == 1
    assert capsys.readouterr().err == err


def test_an_address_where_no_ledger_answers_is_one_line_and_exit_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # A port nothing listens on.
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["watch", "some-run", "--address", f"127.0.0.1:{port}"]) == 2
    out, errors = capsys.readouterr()
    assert out == ""
    assert errors.startswith(f"trainledger: no ledger answers at 127.0.0.1:{port} (")
    assert errors.count("\n") == 1


# The model behind the view, with a clock the test moves.


def batch(attempt: int, steps: list[int], loss: list[float]) -> WatchUpdate:
    columns = [MetricColumn(name="loss", values=loss)]
    return WatchUpdate(
        position=10, event_type="Run.StepsRecorded", steps=StepBatch(attempt=attempt, steps=steps, metrics=columns)
    )


def test_the_rate_and_the_time_left_come_from_the_recent_steps() -> None:
    now = [1_000.0]
    state = RunState(
        run=RunInfo(name="m", status="running", spec={"max_steps": 1_000}), current_attempt=1, last_step=100
    )
    wall = datetime(2026, 12, 1, 6, 55, 0, tzinfo=UTC)
    view = Follow("run", state, clock=lambda: now[0], wall=lambda: wall)
    assert view.rate() is None and view.eta() is None
    assert view.steps_text() == "step 100 of 1,000 (10.0%), ETA -"

    now[0] += 10.0
    assert view.apply(batch(1, list(range(101, 201)), [0.5] * 100)) == ["steps 101-200 of 1,000 (attempt 1): loss=0.5"]
    assert view.rate() == 10.0  # 100 steps in 10 s
    assert view.eta() == 80.0  # 800 steps left
    # As `runs show` reads an ETA: the time left, then when it falls.
    assert view.steps_text() == "step 200 of 1,000 (20.0%), 10.00 steps/s, ETA 1m 20s (06:56 UTC)"

    now[0] += 10.0  # No step for 10 s: the rate falls.
    assert view.rate() == 5.0

    now[0] += 1.0  # A new attempt resumes from step 150: the rate starts again.
    view.apply(batch(2, [151], [0.25]))
    assert view.last_step == 151 and view.rate() is None
    assert (view.metrics["loss"].least, view.metrics["loss"].greatest, view.metrics["loss"].last) == (0.25, 0.5, 0.25)


PRESUMED_GLOSS = "  (presumed: charged by the ledger for holds nobody settled, pro rata or as reserved)"


def test_a_run_started_from_the_watched_runs_checkpoint_is_one_line() -> None:
    """WatchRun's Run.ChildOpened: the piped view names the new run and the step it started from."""
    state = RunState(run=RunInfo(name="base", status="running"), current_attempt=1, last_step=40)
    view = Follow("run", state)
    child = LineageRun(run_id="3f2a1b9c-0000-5000-8000-000000000001", name="base-dpo", step=40)
    opened = RunState(
        run=RunInfo(name="base", status="running"), current_attempt=1, last_step=40, children=[child], child_count=1
    )
    update = WatchUpdate(position=77, event_type="Run.ChildOpened", state=opened)
    assert view.apply(update) == ["run base-dpo (3f2a1b9c) started from step 40"]


def test_a_lost_run_is_told_with_its_last_sign_of_life_and_so_is_its_return() -> None:
    seen = datetime(2026, 12, 2, 12, 0, 3, tzinfo=UTC)
    running = RunState(run=RunInfo(name="m", status="running"), current_attempt=2, attempts=[Attempt(number=2)])
    view = Follow("run", running)
    lost = RunState(
        run=RunInfo(name="m", status="lost"),
        current_attempt=2,
        attempts=[Attempt(number=2, lease_s=60, last_seen_at=seen, lost_at=seen)],
        spend=SpendTotals(presumed_usd_micro=400_000),
    )
    lines = view.apply(WatchUpdate(position=20, event_type="Run.AttemptLost", state=lost))
    assert "run lost (attempt 2: no sign of life since 12:00:03 UTC)" in lines
    assert "spend $0.00 of no cap, $0.40 presumed" in lines
    assert PRESUMED_GLOSS in lines
    back = view.apply(WatchUpdate(position=21, event_type="Run.AttemptReturned", state=running))
    assert "run running again" in back


@pytest.mark.parametrize(
    ("spec", "total"),
    [
        ({"max_steps": 500, "iters": 9}, 500),
        ({"total_steps": 2_000.0}, 2_000),
        ({"iters": "300"}, 300),
        ({"epochs": 3}, None),
        ({"max_steps": True}, None),
        ({"max_steps": -1, "total_steps": 40}, 40),
    ],
)
def test_the_step_count_comes_from_the_spec(spec: dict[str, object], total: int | None) -> None:
    assert total_steps(spec) == total


@pytest.mark.subprocess
def test_the_watch_command_starts_without_importing_the_server_or_the_ledger() -> None:
    probe = (
        "import sys\n"
        "from services.cli import main\n"
        "import services.cli.watch\n"
        "print(sorted(m for m in ('grpc', 'ledger', 'services.server', 'clients') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
        check=True,
    )
    assert done.stdout == "[]\n"
