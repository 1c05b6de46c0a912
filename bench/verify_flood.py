"""Verify flood benchmark: what many cancelled Verify calls cost the server and its other clients,
over loopback to a `trainledger serve` process on a SQLite file.

    .venv/bin/python bench/verify_flood.py [--events 3400] [--connections 8] [--calls 4] [--rounds 5]

The ledger is written first (--events step batches of --steps steps on a few runs). Then one
client measures a Reserve followed by a GetRunState, one pair at a time, alone and then while
--connections connections each start --calls Verify calls at once and cancel them after
--cancel-after-s, --rounds times over. The server's resident memory is sampled throughout.

Figures (goals: rss_growth_mb <= 100, pair_p99_ms_flood <= 50):
- rss_start_mb, rss_peak_mb, rss_growth_mb: the server's resident memory before the flood, its
  peak during it, and the difference.
- pair_p50_ms / pair_p99_ms: Reserve + GetRunState latency of the other client, alone.
- pair_p50_ms_flood / pair_p99_ms_flood: the same during the flood.
- verify_s: one Verify alone; verify_calls, verify_refused (VERIFY_BUSY), verify_cancelled.
The last line printed is one JSON object with the figures and the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.edge import refusal_reason  # noqa: E402
from bench.service import Security, new_run, percentile, start_server  # noqa: E402
from trainledger.v1 import events_pb2, events_pb2_grpc, runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc  # noqa: E402

OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
RUNS = 4


def write_ledger(database: str, events: int, steps: int) -> None:
    from ledger import Ledger

    ledger = Ledger.open(database, project=False)
    try:
        run_ids = [ledger.open_run(run_key=f"flood-{n}", name=f"flood {n}").run_id for n in range(RUNS)]
        for run_id in run_ids:
            ledger.start_attempt(run_id=run_id, attempt_id="a1")
        for batch in range(events):
            first = (batch // RUNS) * steps
            ledger.append_steps(
                run_id=run_ids[batch % RUNS],
                attempt=1,
                steps=list(range(first, first + steps)),
                metrics={"loss": [1.0 / (first + s + 1) for s in range(steps)], "lr": [1e-4] * steps},
                tokens=[4_096] * steps,
            )
    finally:
        ledger.close()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pairs(address: str, stop: threading.Event, latencies: list[float]) -> None:
    """Reserve + GetRunState, one pair at a time, until `stop`."""
    with grpc.insecure_channel(address, options=OWN_CONNECTION) as channel:
        runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
        run_id = new_run(runs, ())
        while not stop.is_set():
            started = time.perf_counter()
            spend.Reserve(
                spend_pb2.ReserveRequest(account=run_id, reservation_id=uuid.uuid4().hex, amount_usd_micro=1),
                timeout=30,
            )
            runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30)
            latencies.append((time.perf_counter() - started) * 1000)


def flood_connection(address: str, args: argparse.Namespace, outcomes: dict[str, int], lock: threading.Lock) -> None:
    with grpc.insecure_channel(address, options=OWN_CONNECTION) as channel:
        events = events_pb2_grpc.EventsStub(channel)
        for _ in range(args.rounds):
            calls = [events.Verify.future(events_pb2.VerifyRequest(), timeout=120) for _ in range(args.calls)]
            time.sleep(args.cancel_after_s)
            for call in calls:
                call.cancel()
            for call in calls:
                try:
                    call.result()
                    kind = "finished"
                except grpc.FutureCancelledError:
                    kind = "cancelled"
                except grpc.RpcError as error:
                    kind = "refused" if refusal_reason(error) == "VERIFY_BUSY" else f"error {error.code().name}"
                with lock:
                    outcomes[kind] = outcomes.get(kind, 0) + 1


def measure(address: str, seconds: float) -> list[float]:
    stop, latencies = threading.Event(), []
    thread = threading.Thread(target=pairs, args=(address, stop, latencies))
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=3_400)
    parser.add_argument("--steps", type=int, default=200, help="steps per batch (one event)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--calls", type=int, default=4, help="Verify calls each connection starts at once")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cancel-after-s", type=float, default=0.5)
    parser.add_argument("--alone-s", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        database = str(Path(directory) / "ledger.db")
        write_ledger(database, args.events, args.steps)
        process, port = start_server(database, "", Security(directory, tls=False, auth=False))
        address = f"127.0.0.1:{port}"
        try:
            figures = run(address, process.pid, args)
        finally:
            process.terminate()
            process.wait(timeout=30)
    figures["command"] = "python bench/verify_flood.py " + shlex.join(sys.argv[1:])
    print(json.dumps(figures))


def run(address: str, pid: int, args: argparse.Namespace) -> dict[str, object]:
    with grpc.insecure_channel(address) as channel:
        started = time.perf_counter()
        verified = events_pb2_grpc.EventsStub(channel).Verify(events_pb2.VerifyRequest(), timeout=300)
        verify_s = time.perf_counter() - started
    assert verified.ok, verified
    alone = measure(address, args.alone_s)
    rss_start = rss_mb(pid)
    peak, outcomes, lock = rss_start, {}, threading.Lock()
    stop, latencies = threading.Event(), []
    other = threading.Thread(target=pairs, args=(address, stop, latencies))
    other.start()
    flooders = [
        threading.Thread(target=flood_connection, args=(address, args, outcomes, lock)) for _ in range(args.connections)
    ]
    for flooder in flooders:
        flooder.start()
    while any(flooder.is_alive() for flooder in flooders):
        peak = max(peak, rss_mb(pid))
        time.sleep(0.05)
    time.sleep(2.0)  # What the cancelled verifications leave behind.
    peak = max(peak, rss_mb(pid))
    stop.set()
    other.join()
    print(f"verify {verify_s:.2f} s alone; outcomes {outcomes}", file=sys.stderr)
    return {
        "events": verified.checked,
        "verify_s": round(verify_s, 2),
        "rss_start_mb": round(rss_start),
        "rss_peak_mb": round(peak),
        "rss_growth_mb": round(peak - rss_start),
        "pair_p50_ms": round(statistics.median(alone), 1),
        "pair_p99_ms": round(percentile(alone, 0.99), 1),
        "pair_p50_ms_flood": round(statistics.median(latencies), 1),
        "pair_p99_ms_flood": round(percentile(latencies, 0.99), 1),
        "verify_calls": sum(outcomes.values()),
        "verify_refused": outcomes.get("refused", 0),
        "verify_cancelled": outcomes.get("cancelled", 0),
    }


if __name__ == "__main__":
    main()
