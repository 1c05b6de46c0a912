"""Edge benchmark: what one client's abuse costs everyone else, over loopback to a `trainledger
serve` process.

    .venv/bin/python bench/edge.py [--streams 200] [--reserves 300] [--structs 3]

Figures:
- reserve_p50_ms / reserve_p99_ms: Reserve latency from one client (one at a time), alone.
- reserve_p50_ms_with_flood / reserve_p99_ms_with_flood: the same while another process holds
  --streams RecordSteps streams (one connection) that send small batches as fast as they can and
  never read their acks; flood_streams_refused says how many the server refused (TOO_MANY_STREAMS).
- unrelated_call_max_ms_during_structs: the slowest GetRunState of another client while --structs
  OpenRun requests with a 14 MB spec of 1.1 million keys are sent at once; structs_refused_ms is
  how long the slowest of them took to be refused, structs_reason its reason.
The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.service import new_run, percentile, start_server  # noqa: E402
from tests.service.support import field  # noqa: E402
from trainledger.v1 import common_pb2, runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc  # noqa: E402

FLOOD_BATCH = 10
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


def huge_open_run(keys: int) -> bytes:
    """An OpenRunRequest whose spec has `keys` keys, built on the wire (13 bytes a key)."""
    entries = b"".join(field(1, field(1, b"%x" % n) + field(2, b"\x08\x00")) for n in range(keys))
    return field(1, f"bench-{uuid.uuid4().hex}".encode()) + field(3, entries)


def refusal_reason(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.reason
    return ""


def reserve_latencies_ms(spend: spend_pb2_grpc.SpendStub, account: str, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        spend.Reserve(
            spend_pb2.ReserveRequest(account=account, reservation_id=uuid.uuid4().hex, amount_usd_micro=1), timeout=30
        )
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def flood(address: str, streams: int) -> None:
    """The flooding process: `streams` RecordSteps streams on one connection, acks never read."""
    channel = grpc.insecure_channel(address, options=OWN_CONNECTION)
    runs = runs_pb2_grpc.RunsStub(channel)
    run_ids = [new_run(runs) for _ in range(streams)]

    def batches(run_id: str):  # type: ignore[no-untyped-def]
        for n in itertools.count():
            steps = range(n * FLOOD_BATCH, (n + 1) * FLOOD_BATCH)
            batch = common_pb2.StepBatch(run_id=run_id, attempt=1, steps=steps)
            batch.metrics.add(name="loss", values=[1.0] * FLOOD_BATCH)
            yield runs_pb2.RecordStepsRequest(sequence=n, batch=batch)

    calls = [runs.RecordSteps(batches(run_id), timeout=600) for run_id in run_ids]
    time.sleep(1.0)  # Refusals arrive at once; the admitted streams are busy by now.
    refused = sum(1 for call in calls if not call.is_active() and call.code() != grpc.StatusCode.OK)
    print(json.dumps({"ready": True, "refused": refused}), flush=True)
    sys.stdin.read()  # Until the benchmark is done.


def bench_flood(address: str, args: argparse.Namespace) -> dict[str, float]:
    import subprocess

    channel = grpc.insecure_channel(address, options=OWN_CONNECTION)
    runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
    account = new_run(runs)
    reserve_latencies_ms(spend, account, 20)  # Warm up.
    alone = reserve_latencies_ms(spend, account, args.reserves)
    flooder = subprocess.Popen(
        [sys.executable, __file__, "--flood", address, "--streams", str(args.streams)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        ready = json.loads(flooder.stdout.readline())  # type: ignore[union-attr]
        flooded = reserve_latencies_ms(spend, account, args.reserves)
    finally:
        flooder.kill()
        flooder.wait()
    channel.close()
    return {
        "reserve_p50_ms": round(statistics.median(alone), 2),
        "reserve_p99_ms": round(percentile(alone, 0.99), 2),
        "reserve_p50_ms_with_flood": round(statistics.median(flooded), 2),
        "reserve_p99_ms_with_flood": round(percentile(flooded, 0.99), 2),
        "flood_streams": args.streams,
        "flood_streams_refused": ready["refused"],
    }


def bench_structs(address: str, args: argparse.Namespace) -> dict[str, float | str]:
    channel = grpc.insecure_channel(address, options=OWN_CONNECTION)
    other = grpc.insecure_channel(address, options=OWN_CONNECTION)
    runs = runs_pb2_grpc.RunsStub(other)
    run_id = new_run(runs)
    request = huge_open_run(1_100_000)
    open_raw = channel.unary_unary(
        "/trainledger.v1.Runs/OpenRun",
        request_serializer=None,
        response_deserializer=runs_pb2.OpenRunResponse.FromString,
    )
    done = threading.Event()
    unrelated: list[float] = []

    def probe() -> None:
        while not done.is_set():
            started = time.perf_counter()
            runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=60)
            unrelated.append((time.perf_counter() - started) * 1000)
            time.sleep(0.005)

    def send() -> tuple[float, str]:
        started = time.perf_counter()
        try:
            open_raw(request, timeout=120)
            reason = "accepted"
        except grpc.RpcError as error:
            reason = f"{error.code().name} {refusal_reason(error)}"
        return (time.perf_counter() - started) * 1000, reason

    prober = threading.Thread(target=probe)
    prober.start()
    time.sleep(0.1)
    with ThreadPoolExecutor(args.structs) as pool:
        results = list(pool.map(lambda _: send(), range(args.structs)))
    time.sleep(0.1)
    done.set()
    prober.join()
    channel.close()
    other.close()
    return {
        "struct_request_bytes": len(request),
        "structs_refused_ms": round(max(ms for ms, _ in results), 1),
        "structs_reason": results[0][1],
        "unrelated_call_max_ms_during_structs": round(max(unrelated), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--reserves", type=int, default=300)
    parser.add_argument("--structs", type=int, default=3)
    parser.add_argument("--flood", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood:
        flood(args.flood, args.streams)
        return
    with tempfile.TemporaryDirectory() as directory:
        server, port = start_server(str(Path(directory) / "bench.db"), "")
        try:
            address = f"127.0.0.1:{port}"
            figures: dict[str, object] = {}
            figures.update(bench_flood(address, args))
            if args.structs:
                figures.update(bench_structs(address, args))
        finally:
            server.terminate()
            server.wait(30)
    command = shlex.join(
        [
            ".venv/bin/python",
            "bench/edge.py",
            "--streams",
            str(args.streams),
            "--reserves",
            str(args.reserves),
            "--structs",
            str(args.structs),
        ]
    )
    print(f"reproduce: {command}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
