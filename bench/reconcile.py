"""Benchmark of providers' bills: 100,000 bill lines recorded over gRPC, reconciled against 1,000 runs.

Run:  PYTHONPATH=. .venv/bin/python bench/reconcile.py [--runs 1000] [--lines 100000]
                                                       [--database-url postgresql://...] [--profile]

Build: a ledger (a tmp SQLite file, or the empty PostgreSQL database of --database-url) with --runs
runs under ten team accounts, each run with --commits (4) reservations committed with a cost
basis of train tokens, spread over two days (a clock made for the build sets the hour of each).
Three runs in ten are linked to a Tinker session (Ledger.link_session). The bill: --lines lines
of one-hour intervals; a twentieth of them are billed to sessions of no run (unattributed), the
rest split evenly over the runs, each run's lines splitting the amount and tokens it committed in
each hour; seven runs in ten name their run id, the linked three only their session; one run in
four is billed 7% over its estimate (flagged). cost_data_through is the end of the last hour.

Measured, against a `trainledger serve` process on a loopback port (or, with --in-process or
--profile, a server in this process), through clients.LedgerClient:

- billed_lines_per_s: the lines recorded with record_billed_usage in requests of --batch (5,000)
  lines, one after the other (goal >= 50,000);
- views_caught_up_s: from the last answer until the views reflect it (a GetRunState with
  min_position);
- reconcile_s: one whole ledger-wide Reconcile, every page of runs (median of three; goal <= 5);
- reconcile_run_ms and get_run_state_ms: one run's Reconcile, and GetRunState of a billed run
  (it carries the run's bill totals), medians; get_run_state_before_bill_ms the same GetRunState
  before any line is recorded, get_run_state_unbilled_ms after, of a run billed nothing;
- rerecord_lines_per_s: the same lines recorded again, all unchanged (nothing written).

--profile runs the server in this process with every thread it starts under cProfile (a profiler
per thread, merged), and prints, after recording, after reconciling and after recording the same
lines again, the top entries of the server's threads (by cumulative and by own time) and of this
client's. Figures are printed as they go; the LAST line is one JSON object with the figures, the goals
judged (bench/goals.py: value, goal, meets_goal), the load averages before and after, and the
command. Goals are never assertions; the answers are checked (every run reconciled, the
over-billed ones flagged, the unattributed lines counted, a second recording unchanged).
"""

from __future__ import annotations

import argparse
import cProfile
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.goals import RECONCILE, last_line, load_average, rerun, verdicts  # noqa: E402
from bench.profiling import Profiled, client_profile  # noqa: E402
from clients import LedgerClient  # noqa: E402
from clients.models import BilledLine, ReconcileReport  # noqa: E402

PROVIDER = "tinker"
START = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = 48
TEAMS = 10
OVER_BILLED_PERCENT = 7
TRAIN_PRICE = 4_000_000  # usd_micro per million train tokens


@dataclass
class Run:
    run_id: str
    team: str
    session: str  # "" when the run is not linked to a session
    by_session: bool  # its lines name only the session
    over_billed: bool
    hours: dict[datetime, tuple[int, int]] = field(default_factory=dict)  # hour -> (usd_micro, tokens)


class BuildClock:
    """The clock of the build: each commit is recorded at the time the build sets."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def build(database: str, runs: int, commits: int) -> tuple[list[Run], str]:
    """Runs under TEAMS team accounts, each with `commits` commits spread over HOURS hours, and
    the id of one more run that spends and is billed nothing."""
    from ledger import Ledger

    clock = BuildClock()
    ledger = Ledger.open(database, clock=clock)
    made: list[Run] = []
    tag = uuid.uuid4().hex[:8]
    try:
        for number in range(TEAMS):
            ledger.open_account(account=f"team-{number}")
        for index in range(runs):
            clock.now = START
            team = f"team-{index % TEAMS}"
            run_id = ledger.open_run(
                run_key=f"bench-reconcile-{tag}-{index}", name=f"run-{index}", parent_account=team
            ).run_id
            ledger.start_attempt(run_id=run_id, attempt_id="a1")
            linked = index % 10 >= 7
            session = f"sess-{tag}-{index}" if linked else ""
            if linked:
                ledger.link_session(run_id=run_id, provider=PROVIDER, session_id=session, attempt=1)
            run = Run(run_id, team, session, by_session=linked, over_billed=index % 4 == 0)
            for commit in range(commits):
                hour = START + timedelta(hours=(index * 7 + commit * (HOURS // commits)) % HOURS)
                clock.now = hour + timedelta(minutes=5 + commit)
                tokens = 50_000 + 1_000 * ((index + commit) % 50)
                amount = tokens * TRAIN_PRICE // 1_000_000
                basis = {
                    "price_sheet": "bench",
                    "tokens": [{"token_class": "train", "tokens": tokens, "usd_micro_per_million_tokens": TRAIN_PRICE}],
                }
                reservation = f"r{commit}"
                ledger.reserve(account=run_id, reservation_id=reservation, amount_usd_micro=amount, basis=basis)
                ledger.commit(account=run_id, reservation_id=reservation, actual_usd_micro=amount, basis=basis)
                spent, counted = run.hours.get(hour, (0, 0))
                run.hours[hour] = (spent + amount, counted + tokens)
            made.append(run)
        idle = ledger.open_run(run_key=f"bench-reconcile-{tag}-idle", name="idle", parent_account="team-0").run_id
    finally:
        ledger.close()
    return made, idle


def _text(usd_micro: int) -> str:
    """Micro-dollars as the decimal a provider would write (non-negative)."""
    return f"{usd_micro // 1_000_000}.{usd_micro % 1_000_000:06d}"


def _split(total: int, parts: int) -> list[int]:
    base, rest = divmod(total, parts)
    return [base + (1 if n < rest else 0) for n in range(parts)]


def bill(runs: list[Run], lines: int) -> tuple[list[BilledLine], datetime, int]:
    """The bill (see the module's docstring), its cost_data_through and how many lines no run's."""
    orphans = lines // 20
    per_run = (lines - orphans) // len(runs)
    billed: list[BilledLine] = []
    for run in runs:
        hours = sorted(run.hours)
        counts = _split(per_run, len(hours))
        for hour, count in zip(hours, counts, strict=True):
            spent, tokens = run.hours[hour]
            if run.over_billed:
                spent = spent * (100 + OVER_BILLED_PERCENT) // 100
            for part, (amount, quantity) in enumerate(zip(_split(spent, count), _split(tokens, count), strict=True)):
                billed.append(
                    BilledLine(
                        line_id=f"{run.session or run.run_id}|Qwen/Qwen3-8B|train|{part}",
                        interval_start=hour,
                        interval_end=hour + timedelta(hours=1),
                        amount_usd_micro=amount,
                        amount_text=_text(amount),
                        quantities={"train": float(quantity)},
                        run_id="" if run.by_session else run.run_id,
                        session_id=run.session,
                        description="training Qwen/Qwen3-8B",
                    )
                )
    unattributed = lines - len(billed)
    for index in range(unattributed):
        hour = START + timedelta(hours=index % HOURS)
        billed.append(
            BilledLine(
                line_id=f"orphan|{index}",
                interval_start=hour,
                interval_end=hour + timedelta(hours=1),
                amount_usd_micro=1_000,
                amount_text="0.001",
                quantities={"sample": 100.0},
                session_id=f"sess-of-no-run-{index % 50}",
            )
        )
    return billed, START + timedelta(hours=HOURS), unattributed


# Servers.


def serve_process(database: str, url: str) -> tuple[Callable[[], None], str]:
    command = [sys.executable, "-m", "services.cli", "serve", "--listen", "127.0.0.1:0"]
    command += ["--database-url", url] if url else ["--db", database]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"serving on [^:]+:(\d+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")

    def stop() -> None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)

    return stop, f"127.0.0.1:{match.group(1)}"


def serve_here(database: str) -> tuple[Callable[[], None], str]:
    from tests.client.server_thread import ServerThread

    server = ServerThread(database).start()
    return server.stop, server.address


# Measures.


def median_ms(call: Callable[[], object], times: int) -> float:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return round(statistics.median(spent) * 1_000, 2)


def batches(lines: list[BilledLine], size: int) -> Iterator[list[BilledLine]]:
    for start in range(0, len(lines), size):
        yield lines[start : start + size]


def record(client: LedgerClient, lines: list[BilledLine], through: datetime, size: int) -> tuple[float, int, list[int]]:
    """Seconds spent, the last position and (recorded, restated, unchanged) summed."""
    counts = [0, 0, 0]
    position = 0
    started = time.perf_counter()
    for number, batch in enumerate(batches(lines, size), 1):
        receipt = client.record_billed_usage(provider=PROVIDER, lines=batch, cost_data_through=through)
        counts[0] += receipt.recorded
        counts[1] += receipt.restated
        counts[2] += receipt.unchanged
        position = max(position, receipt.position)
        if number % 5 == 0:
            elapsed = time.perf_counter() - started
            print(f"  {number * size:>9,} lines in {elapsed:6.2f} s", flush=True)
    return time.perf_counter() - started, position, counts


def reconcile_all(client: LedgerClient) -> tuple[list[Any], ReconcileReport]:
    """Every page of the ledger-wide Reconcile: the runs and the last page."""
    runs: list[Any] = []
    token = ""
    while True:
        report = client.reconcile(page_token=token, timeout_s=300)
        runs.extend(report.runs)
        token = report.next_page_token
        if not token:
            return runs, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=4, help="commits per run")
    parser.add_argument("--batch", type=int, default=5_000, help="lines per RecordBilledUsage request")
    parser.add_argument("--database-url", default="", help="an empty PostgreSQL database instead of a tmp SQLite file")
    parser.add_argument("--in-process", action="store_true", help="serve in this process, not a `trainledger serve`")
    parser.add_argument("--profile", action="store_true", help="profile (implies --in-process)")
    parser.add_argument("--top", type=int, default=25, help="profile entries printed per phase")
    args = parser.parse_args()
    figures: dict[str, Any] = {"runs": args.runs, "lines": args.lines}
    load_before = load_average()
    profiled = Profiled() if args.profile else None
    with tempfile.TemporaryDirectory(prefix="trainledger-bench-") as directory:
        database = args.database_url or str(Path(directory) / "reconcile.db")
        started = time.perf_counter()
        runs, idle = build(database, args.runs, args.commits)
        print(f"built {len(runs):,} runs x {args.commits} commits in {time.perf_counter() - started:.1f} s", flush=True)
        lines, through, unattributed = bill(runs, args.lines)
        print(f"a bill of {len(lines):,} lines", flush=True)
        if profiled is not None:
            profiled.install()
        if args.profile or args.in_process:
            stop, address = serve_here(database)
        else:
            stop, address = serve_process(database, args.database_url)
        mine = cProfile.Profile() if profiled is not None else None
        try:
            with LedgerClient(address, principal="bench", timeout_s=300.0) as client:
                billed = runs[0]
                assert not billed.by_session
                figures["get_run_state_before_bill_ms"] = median_ms(
                    lambda: client.get_run_state(run_id=billed.run_id), 50
                )
                print(f"GetRunState before any bill: {figures['get_run_state_before_bill_ms']} ms", flush=True)
                if mine is not None:
                    mine.enable()
                elapsed, position, counts = record(client, lines, through, args.batch)
                assert counts == [len(lines), 0, 0], counts
                figures["billed_lines_per_s"] = round(len(lines) / elapsed)
                print(f"recorded {len(lines):,} lines in {elapsed:.2f} s: {figures['billed_lines_per_s']:,}/s")
                started = time.perf_counter()
                client.get_run_state(run_id=billed.run_id, min_position=position, timeout_s=600)
                figures["views_caught_up_s"] = round(time.perf_counter() - started, 2)
                print(f"views caught up {figures['views_caught_up_s']} s after the last answer", flush=True)
                if profiled is not None and mine is not None:
                    mine.disable()
                    print(profiled.report("recording (and projecting) the lines", args.top))
                    print(client_profile("recording the lines", mine, args.top))
                    mine = cProfile.Profile()
                    mine.enable()

                spent = []
                whole: list[Any] = []
                for _ in range(3):
                    started = time.perf_counter()
                    whole, last = reconcile_all(client)
                    spent.append(time.perf_counter() - started)
                    print(f"  whole Reconcile: {spent[-1]:.2f} s", flush=True)
                figures["reconcile_s"] = round(statistics.median(spent), 3)
                if profiled is not None and mine is not None:
                    mine.disable()
                    print(profiled.report("three whole Reconciles", args.top))
                    print(client_profile("three whole Reconciles", mine, args.top))
                assert len(whole) == len(runs), len(whole)
                flagged = sum(1 for row in whole if row.bill is not None and row.bill.flagged)
                assert flagged == sum(run.over_billed for run in runs), flagged
                (provider,) = last.providers
                assert provider.unattributed_lines == unattributed, provider
                print(
                    f"reconciled {len(whole):,} runs: {flagged} flagged, {provider.unattributed_lines:,} lines"
                    f" unattributed, {len(last.accounts)} team accounts; median {figures['reconcile_s']} s"
                )
                figures["reconcile_run_ms"] = median_ms(lambda: client.reconcile(run_id=billed.run_id), 20)
                figures["get_run_state_ms"] = median_ms(lambda: client.get_run_state(run_id=billed.run_id), 50)
                figures["get_run_state_unbilled_ms"] = median_ms(lambda: client.get_run_state(run_id=idle), 50)
                one_run, state = figures["reconcile_run_ms"], figures["get_run_state_ms"]
                print(f"one run's Reconcile {one_run} ms, GetRunState {state} ms", flush=True)
                print(f"GetRunState of a run with no bill lines: {figures['get_run_state_unbilled_ms']} ms")

                if profiled is not None:
                    profiled.report("", 0)  # The reads above are left out of the next report.
                    mine = cProfile.Profile()
                    mine.enable()
                elapsed, _, counts = record(client, lines, through, args.batch)
                assert counts == [0, 0, len(lines)], counts
                figures["rerecord_lines_per_s"] = round(len(lines) / elapsed)
                print(f"recorded the same {len(lines):,} lines again in {elapsed:.2f} s: all unchanged")
                if profiled is not None and mine is not None:
                    mine.disable()
                    print(profiled.report("recording the same lines again", args.top))
                    print(client_profile("recording the same lines again", mine, args.top))
        finally:
            stop()
    figures["backend"] = "postgresql" if args.database_url else "sqlite"
    figures["server"] = "in-process" if args.profile or args.in_process else "trainledger serve"
    command = rerun("bench/reconcile.py", sys.argv[1:])
    print(last_line(figures, verdicts(figures, RECONCILE), command, load_before))


if __name__ == "__main__":
    main()
