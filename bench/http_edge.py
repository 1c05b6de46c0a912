"""Dashboard edge benchmark: what idle and half-sent dashboard connections cost gRPC, over loopback
to a `trainledger serve` process run under a limit on open files (as `ulimit -n`).

    .venv/bin/python bench/http_edge.py [--connections 3000] [--clients 100] [--files-max 1024] [--opens 300]

--connections connections to the dashboard, made by a process of their own, from --clients
loopback client addresses (127.0.0.2 and up, each a client of its own); half send nothing, half
send half a request. Figures:
- open_run_p50_ms / open_run_p99_ms: OpenRun latency (a new run each, one at a time) of a gRPC
  client on a connection of its own, alone; ..._with_connections: the same from the first
  dashboard connection until the server has closed them all.
- connections_refused_at_once: how many the server closed within a second of their connect (over
  its caps); connections_failed: connects that did not complete.
- connections_all_closed_s: seconds from the last connect until the server had closed every
  connection (none ever sends a whole request); connections_open_at_end: any still open after
  --wait-s.
- log_refusal_lines / log_emfile_lines: the server log's lines on refused connections, and on
  "Too many open files".
The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import selectors
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.service import percentile  # noqa: E402
from tests.web.browser import LIMITED  # noqa: E402
from trainledger.v1 import runs_pb2, runs_pb2_grpc  # noqa: E402

HALF_REQUEST = b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def start(database: str, files_max: int, log: Path) -> tuple[subprocess.Popen[str], str, int]:
    """`trainledger serve` under `files_max` open files: the process, its gRPC address and dashboard port."""
    command = [sys.executable, "-c", LIMITED, str(files_max), sys.executable, "-m", "services.cli", "serve"]
    command += ["--db", database, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"]
    with open(log, "w") as errors:
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=errors, text=True)
    assert process.stdout is not None
    serving, dashboard = process.stdout.readline(), process.stdout.readline()
    grpc_match = re.search(r"serving on (\S+:\d+)", serving)
    http_match = re.search(r"https?://[\d.]+:(\d+)", dashboard)
    if not (grpc_match and http_match):
        process.kill()
        raise SystemExit(f"the server did not start: {serving!r} {dashboard!r} {log.read_text()[-2000:]}")
    return process, grpc_match.group(1), int(http_match.group(1))


def open_run_ms(runs: runs_pb2_grpc.RunsStub) -> float:
    started = time.perf_counter()
    runs.OpenRun(runs_pb2.OpenRunRequest(run_key=f"bench-{uuid.uuid4().hex}", name="http-edge"), timeout=30)
    return (time.perf_counter() - started) * 1000


class Probe(threading.Thread):
    """OpenRun after OpenRun until stopped, each latency kept."""

    def __init__(self, runs: runs_pb2_grpc.RunsStub) -> None:
        super().__init__(name="probe", daemon=True)
        self.runs, self.latencies_ms, self.errors = runs, [], 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.latencies_ms.append(open_run_ms(self.runs))
            except grpc.RpcError:
                self.errors += 1
            time.sleep(0.01)


def press(port: int, args: argparse.Namespace) -> dict[str, float]:
    """Open the connections, then wait until the server has closed them all (or --wait-s)."""
    selector = selectors.DefaultSelector()
    opened_at: dict[socket.socket, float] = {}
    closed_at: dict[socket.socket, float] = {}
    failed: Counter[str] = Counter()
    for n in range(args.connections):
        connection = socket.socket()
        try:
            connection.bind((f"127.0.0.{2 + n % args.clients}", 0))
            connection.settimeout(5)
            connection.connect(("127.0.0.1", port))
        except ConnectionResetError:  # Reset as it was accepted: refused at once.
            opened_at[connection] = closed_at[connection] = time.monotonic()
            continue
        except OSError as error:
            failed[type(error).__name__] += 1
            connection.close()
            continue
        opened_at[connection] = time.monotonic()
        try:
            if n % 2:
                connection.sendall(HALF_REQUEST)
        except OSError:  # Reset already: refused as it was accepted.
            closed_at[connection] = time.monotonic()
            continue
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ)
    connected = time.monotonic()
    deadline = connected + args.wait_s
    while len(closed_at) < len(opened_at) and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            connection = key.fileobj
            assert isinstance(connection, socket.socket)
            try:
                data = connection.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed_at[connection] = time.monotonic()
                selector.unregister(connection)
    for connection in opened_at:
        connection.close()
    selector.close()
    at_once = sum(1 for c, at in closed_at.items() if at - opened_at[c] < 1.0)
    return {
        "connections": args.connections,
        "connections_failed": sum(failed.values()),
        "connections_failed_by_error": dict(failed),
        "connections_refused_at_once": at_once,
        "connections_all_closed_s": round(max(closed_at.values(), default=connected) - connected, 1),
        "connections_open_at_end": len(opened_at) - len(closed_at),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--files-max", type=int, default=1024)
    parser.add_argument("--opens", type=int, default=300)
    parser.add_argument("--wait-s", type=float, default=60.0)
    parser.add_argument("--press", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.press:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # This process holds every connection.
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.connections + 256)), hard))
        print(json.dumps(press(args.press, args)), flush=True)
        return
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "serve.log"
        server, address, port = start(str(Path(directory) / "bench.db"), args.files_max, log)
        try:
            channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
            runs = runs_pb2_grpc.RunsStub(channel)
            for _ in range(20):  # Warm up.
                open_run_ms(runs)
            alone = [open_run_ms(runs) for _ in range(args.opens)]
            probe = Probe(runs)
            probe.start()  # The connections come from a process of their own (no shared GIL).
            pressing = [sys.executable, __file__, "--press", str(port), "--connections", str(args.connections)]
            pressing += ["--clients", str(args.clients), "--wait-s", str(args.wait_s)]
            output = subprocess.run(pressing, cwd=REPO, capture_output=True, text=True, check=True).stdout
            figures: dict[str, object] = json.loads(output.splitlines()[-1])
            probe.stopping.set()
            probe.join()
            channel.close()
        finally:
            server.terminate()
            server.wait(30)
        text = log.read_text()
    during = probe.latencies_ms or [float("nan")]
    figures.update(
        {
            "open_run_p50_ms": round(statistics.median(alone), 2),
            "open_run_p99_ms": round(percentile(alone, 0.99), 2),
            "open_run_p50_ms_with_connections": round(statistics.median(during), 2),
            "open_run_p99_ms_with_connections": round(percentile(during, 0.99), 2),
            "open_runs_with_connections": len(probe.latencies_ms),
            "open_run_errors_with_connections": probe.errors,
            "log_refusal_lines": sum("dashboard connection" in line for line in text.splitlines()),
            "log_emfile_lines": text.count("Too many open files"),
        }
    )
    command = ["bench/http_edge.py", "--connections", str(args.connections), "--clients", str(args.clients)]
    command += ["--files-max", str(args.files_max), "--opens", str(args.opens)]
    print(f"reproduce: {shlex.join(['.venv/bin/python', *command])}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
