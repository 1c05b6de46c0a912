"""Watchers benchmark: a `trainledger serve` process and this client process over loopback.

    .venv/bin/python bench/watchers.py [--watchers 100] [--events 50] [--spec-mb 8] [--idle-watchers 200]
                                       [--reserves 500]

Figures:
- rss_mb_idle_watchers: the server's VmRSS (/proc/PID/status) once --watchers watchers that never
  read watch a run whose spec takes --spec-mb, and --events events (step batches and checkpoints,
  alternately) were recorded on that run; with the RSS before they came and after they cancelled.
  Specs are capped now (ledger.limits.DOCUMENT_BYTES_MAX): the run stands for one recorded before
  the cap, so this process lifts the cap while it writes the run; the server runs as it is.
- reserve_p99_ms_with_200_watchers: Reserve latency (one at a time) on a run while
  --idle-watchers watchers watch another run, and with none for comparison.
Each watcher has a connection of its own (a server bounds the streams of one connection). The
last line printed is one JSON object with the figures and the command that reproduced them.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ledger import Ledger  # noqa: E402
from ledger.domain import limits  # noqa: E402
from trainledger.v1 import common_pb2, runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc  # noqa: E402

WATCHERS_PER_PRINCIPAL = 100  # Under the server's bound per caller.


def start_server(database: str) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "services.cli", "serve", "--listen", "127.0.0.1:0", "--db", database]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    match = re.search(r"serving on [^:]+:(\d+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, int(match.group(1))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise SystemExit("no VmRSS")


def write_runs(database: str, spec_mb: float) -> tuple[str, str, str]:
    """The watched run (with the wide spec), a second run to watch idly, and the reserving run."""
    part = "x" * 4_000
    groups = max(1, round(spec_mb * 1024 * 1024 / (256 * len(part))))
    spec = {f"group-{g}": {f"part-{p}": part for p in range(256)} for g in range(groups)}
    if hasattr(limits, "DOCUMENT_BYTES_MAX"):
        limits.DOCUMENT_BYTES_MAX = 2**62  # type: ignore[attr-defined]
    ledger = Ledger.open(database)
    try:
        runs = []
        for name, run_spec in (("wide", spec), ("quiet", {}), ("reserving", {})):
            run_id = ledger.open_run(run_key=f"bench-{name}", name=name, spec=run_spec).run_id
            ledger.start_attempt(run_id=run_id, attempt_id="a1")
            runs.append(run_id)
        ledger.projector.wait(ledger.head(), 120)
    finally:
        ledger.close()
    return runs[0], runs[1], runs[2]


def channel(port: int) -> grpc.Channel:
    # A connection of its own (channels to one address share one otherwise), which takes the
    # wide run's whole state.
    return grpc.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", 64 * 1024 * 1024)],
    )


def idle_watchers(port: int, run_id: str, count: int) -> list[tuple[grpc.Channel, object]]:
    """Watchers that never read a message; each is live once the server has begun to answer."""
    watchers = []
    for n in range(count):
        opened = channel(port)
        call = runs_pb2_grpc.RunsStub(opened).WatchRun(
            runs_pb2.WatchRunRequest(run_id=run_id),
            timeout=600,
            metadata=(("x-principal", f"bench-{n // WATCHERS_PER_PRINCIPAL}"),),
        )
        watchers.append((opened, call))
    for _, call in watchers:
        call.initial_metadata()  # type: ignore[attr-defined]
    return watchers


def cancel(watchers: list[tuple[grpc.Channel, object]]) -> None:
    for opened, call in watchers:
        call.cancel()  # type: ignore[attr-defined]
        opened.close()


def record_events(runs: runs_pb2_grpc.RunsStub, run_id: str, events: int) -> int:
    """Step batches and checkpoints, alternately; the last position."""
    position = 0
    for n in range(events):
        if n % 2 == 0:
            batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=range(n * 100, n * 100 + 100))
            batch.metrics.add(name="loss", values=[0.5] * 100)
            position = runs.AppendSteps(runs_pb2.AppendStepsRequest(batch=batch), timeout=30).position
        else:
            position = runs.SaveCheckpoint(
                runs_pb2.SaveCheckpointRequest(
                    run_id=run_id,
                    attempt=1,
                    step=n * 100 - 1,
                    handle=common_pb2.StateHandle(backend="local", uri=f"file:///ck/{n}"),
                ),
                timeout=30,
            ).position
    return position


def rss_figures(port: int, pid: int, run_id: str, args: argparse.Namespace) -> dict[str, float]:
    stubs = channel(port)
    runs = runs_pb2_grpc.RunsStub(stubs)
    runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=60)
    before = rss_mb(pid)
    watchers = idle_watchers(port, run_id, args.watchers)
    # One watcher that reads tells when the server has handed every event out.
    control = runs.WatchRun(
        runs_pb2.WatchRunRequest(run_id=run_id), timeout=600, metadata=(("x-principal", "bench-control"),)
    )
    next(control)
    last = record_events(runs, run_id, args.events)
    for message in control:
        if message.position >= last:
            break
    idle = rss_mb(pid)
    control.cancel()
    cancel(watchers)
    time.sleep(1.0)  # Let the server see the cancellations.
    after = rss_mb(pid)
    stubs.close()
    print(
        f"RSS {before} MB -> {idle} MB with {args.watchers} idle watchers and {args.events} events,"
        f" {after} MB after they cancelled",
        file=sys.stderr,
    )
    return {"rss_mb_before_watchers": before, "rss_mb_idle_watchers": idle, "rss_mb_after_cancel": after}


def reserve_ms(port: int, run_id: str, count: int) -> list[float]:
    stubs = channel(port)
    spend = spend_pb2_grpc.SpendStub(stubs)
    took = []
    for _ in range(count):
        request = spend_pb2.ReserveRequest(account=run_id, reservation_id=uuid.uuid4().hex, amount_usd_micro=1)
        started = time.perf_counter()
        spend.Reserve(request, timeout=30)
        took.append((time.perf_counter() - started) * 1000)
    stubs.close()
    return took


def percentile(values: list[float], fraction: float) -> float:
    return round(sorted(values)[min(len(values) - 1, int(len(values) * fraction))], 2)


def reserve_figures(port: int, quiet: str, reserving: str, args: argparse.Namespace) -> dict[str, float]:
    reserve_ms(port, reserving, 50)  # Warm up.
    alone = reserve_ms(port, reserving, args.reserves)
    watchers = idle_watchers(port, quiet, args.idle_watchers)
    watched = reserve_ms(port, reserving, args.reserves)
    cancel(watchers)
    print(
        f"Reserve p50 {statistics.median(alone):.2f} ms alone, {statistics.median(watched):.2f} ms with"
        f" {args.idle_watchers} watchers on another run",
        file=sys.stderr,
    )
    return {
        "reserve_p50_ms_no_watchers": percentile(alone, 0.5),
        "reserve_p99_ms_no_watchers": percentile(alone, 0.99),
        "reserve_p50_ms_with_200_watchers": percentile(watched, 0.5),
        "reserve_p99_ms_with_200_watchers": percentile(watched, 0.99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--spec-mb", type=float, default=8.0)
    parser.add_argument("--idle-watchers", type=int, default=200)
    parser.add_argument("--reserves", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database = str(Path(tmp) / "bench.db")
        wide, quiet, reserving = write_runs(database, args.spec_mb)
        process, port = start_server(database)
        try:
            figures = {
                "spec_mb": args.spec_mb,
                **rss_figures(port, process.pid, wide, args),
                **reserve_figures(port, quiet, reserving, args),
            }
        finally:
            process.terminate()
            process.wait(30)
    figures["command"] = shlex.join([".venv/bin/python", "bench/watchers.py", *sys.argv[1:]])
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
