"""Where the time goes on the paths the benchmarks' goals judge, profiled with cProfile.

    PYTHONPATH=. .venv/bin/python bench/profile_paths.py [--paths spend,writers,steps,grpc,reads]
        [--pairs 300] [--batches 50] [--clients 32] [--client-pairs 20] [--read-steps 100000]
        [--reads 300] [--top 15] [--py-spy PATH [--gil]]

- spend: reserve+commit pairs in-process, one writer on a SQLite file (bench/ledger_core.py's
  reserve_commit_per_s), or on the PostgreSQL database of --database-url: the caller's thread,
  then every thread the ledger started;
- writers: --clients writers in-process at once, --client-pairs pairs each (bench/ledger_core.py's
  reserve_commit_per_s_32_writers), with how many writes each group commit took;
- steps: the same 1,000-step appends with the projector off, then on (steps_projector_ratio): the
  caller's thread and the projector's;
- grpc: Reserve+Commit over loopback against a `trainledger serve` process (bench/service.py's
  reserve_p99_ms and reserve_pairs_per_s_32_clients), one client, then --clients at once, a fresh
  server for each; the server runs under cProfile in every thread (its event loop too) and
  writes its statistics when it stops. With --py-spy PATH (a py-spy binary) the server runs as it
  is and py-spy samples it instead, 250 times a second (no profiler inside it: the 32 clients'
  figure undistorted); --gil keeps only the samples of the thread holding the GIL;
- reads: GetRunState over gRPC on a run of --read-steps steps, the server under cProfile from the
  first read on.
Each section prints its figure (slowed by the profiler, so only the proportions are read) and the
top entries by cumulative and by own time, idle waits left out. docs/performance.md reads them.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import re
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.goals import load_average, rerun  # noqa: E402
from bench.profiling import Profiled, printed  # noqa: E402


def section(title: str, threads: Profiled, caller: cProfile.Profile | None, top: int) -> None:
    """The caller's thread and the other threads, each by cumulative and own time."""
    if caller is not None:
        out = io.StringIO()
        print(printed(pstats.Stats(caller, stream=out).strip_dirs(), out, f"{title}: the caller's thread", top))
    out = io.StringIO()
    stats = threads.merged(out)
    if stats is not None:
        print(printed(stats.strip_dirs(), out, f"{title}: the ledger's own threads", top))


def groups(stats: pstats.Stats) -> str:
    """How many writes went in how many group commits, read from the profile's call counts."""
    calls: Counter[str] = Counter()
    for (file, _, function), (_, count, *_) in stats.stats.items():  # type: ignore[attr-defined]
        if (Path(file).name, function) in (("writer.py", "_submit"), ("writer.py", "_commit_group")):
            calls[function] += count
    writes, commits = calls["_submit"], calls["_commit_group"]
    return f"{writes:,} writes in {commits:,} group commits ({writes / max(1, commits):.2f} a group)"


def profile_writers(directory: Path, args: argparse.Namespace) -> None:
    """--clients writers in-process at once (bench/ledger_core.py's reserve_commit_per_s_32_writers)."""
    from bench.ledger_core import reserve_commit_writers
    from ledger import Ledger

    threads = Profiled()
    threads.install()
    ledger = Ledger.open(str(directory / "writers.db"))
    try:
        rate = reserve_commit_writers(ledger, args.clients, args.client_pairs)
    finally:
        threads.uninstall()
        ledger.close()
    print(f"=== {args.clients} writers in-process x {args.client_pairs} pairs, {rate:,.0f} pairs/s under the profiler")
    out = io.StringIO()
    stats = threads.merged(out)
    if stats is not None:
        print(groups(stats))
        print(
            printed(stats.strip_dirs(), out, f"{args.clients} writers: every thread (writers and projector)", args.top)
        )


def profile_spend(directory: Path, args: argparse.Namespace) -> None:
    from ledger import Ledger

    threads = Profiled()
    threads.install()
    ledger = Ledger.open(args.database_url or str(directory / "spend.db"))
    threads.uninstall()
    try:
        account = ledger.open_run(run_key=f"profile-spend-{uuid.uuid4().hex}", cap_usd_micro=10**12).run_id
        caller = cProfile.Profile()
        started = time.perf_counter()
        caller.enable()
        for i in range(args.pairs):
            ledger.reserve(account=account, reservation_id=f"r{i}", amount_usd_micro=500)
            ledger.commit(account=account, reservation_id=f"r{i}", actual_usd_micro=400)
        caller.disable()
        elapsed = time.perf_counter() - started
    finally:
        ledger.close()
    backend = "PostgreSQL" if args.database_url else "SQLite"
    rate = args.pairs / elapsed
    print(f"=== spend, in-process on {backend}: {args.pairs} pairs, {rate:,.0f} pairs/s under the profiler")
    section("reserve+commit in-process", threads, caller, args.top)


def profile_steps(directory: Path, args: argparse.Namespace) -> None:
    from bench.ledger_core import BATCH, batch
    from ledger import Ledger

    payloads = [batch(1 + i * BATCH) for i in range(args.batches)]
    for project in (False, True):
        threads = Profiled()
        threads.install()
        ledger = Ledger.open(str(directory / f"steps-{project}.db"), project=project)
        threads.uninstall()
        try:
            run_id = ledger.open_run(run_key="profile-steps").run_id
            ledger.start_attempt(run_id=run_id, attempt_id="a1")
            caller = cProfile.Profile()
            started = time.perf_counter()
            caller.enable()
            for payload in payloads:
                ledger.append_steps(run_id=run_id, attempt=1, **payload)
            caller.disable()
            elapsed = time.perf_counter() - started
            if project:
                ledger.wait(ledger.head(), 300)
        finally:
            ledger.close()
        state = "on" if project else "off"
        rate = args.batches * BATCH / elapsed
        print(f"=== steps, projector {state}: {args.batches} batches, {rate:,.0f} steps/s under the profiler")
        section(f"appends, projector {state}", threads, caller, args.top)


def start_server(database: str, profile_file: str, py_spy: str) -> tuple[subprocess.Popen[str], str]:
    serve = ["serve", "--listen", "127.0.0.1:0", "--no-http", "--db", database]
    if profile_file and not py_spy:
        command = [sys.executable, __file__, "--serve-profiled", profile_file, *serve]
    else:
        command = [sys.executable, "-m", "services.cli", *serve]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    match = re.search(r"serving on [^:]+:(\d+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, f"127.0.0.1:{match.group(1)}"


def spend_pairs(address: str, pairs: int, clients: int, ready: Callable[[], None]) -> float:
    """`clients` clients at once (a channel each, each on its own capped run), `pairs` Reserve+Commit
    pairs each, one at a time: pairs per second over the wall time. `ready` is called once the
    runs are open, just before the pairs start."""
    import grpc

    from trainledger.v1 import runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc

    channels = [grpc.insecure_channel(address) for _ in range(clients)]
    accounts = []
    for channel in channels:
        runs = runs_pb2_grpc.RunsStub(channel)
        opened = runs.OpenRun(runs_pb2.OpenRunRequest(run_key=f"profile-{uuid.uuid4().hex}", cap_usd_micro=10**12))
        accounts.append(opened.state.run.run_id)
        runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=accounts[-1], attempt_id="a1"), timeout=30)
    barrier = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        spend = spend_pb2_grpc.SpendStub(channels[index])
        barrier.wait()
        for n in range(pairs):
            request = spend_pb2.ReserveRequest(account=accounts[index], reservation_id=f"r{n}", amount_usd_micro=1_000)
            spend.Reserve(request, timeout=60)
            spend.Commit(
                spend_pb2.CommitRequest(account=accounts[index], reservation_id=f"r{n}", actual_usd_micro=900),
                timeout=60,
            )

    workers = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
    for worker in workers:
        worker.start()
    ready()
    barrier.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    for channel in channels:
        channel.close()
    return clients * pairs / elapsed


def py_spy_top(raw_file: str, top: int) -> str:
    """py-spy's collapsed stacks as a table: each function's share of the samples, inclusive
    (anywhere on the stack: cumulative) and own (on top of it)."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in Path(raw_file).read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";")]
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        own[frames[-1]] += count
    lines = [f"{total} samples; cumulative % / own % of them"]
    for frame, count in inclusive.most_common(top):
        lines.append(f"  {100 * count / total:5.1f} {100 * own[frame] / total:5.1f}  {frame}")
    lines.append("by own time:")
    for frame, count in own.most_common(top):
        lines.append(f"  {100 * inclusive[frame] / total:5.1f} {100 * count / total:5.1f}  {frame}")
    return "\n".join(lines)


def forget_start(process: subprocess.Popen[str], sampled: bool) -> None:
    """Leave the server's start (imports, opening the ledger, the clients' runs) out of its profile."""
    if not sampled:
        process.send_signal(signal.SIGUSR1)
        time.sleep(0.5)


def profile_grpc(directory: Path, args: argparse.Namespace) -> None:
    for clients, pairs in ((1, args.pairs), (args.clients, args.client_pairs)):
        profile_file = str(directory / f"server-{clients}.prof")
        process, address = start_server(str(directory / f"grpc-{clients}.db"), profile_file, args.py_spy)
        spy = None
        if args.py_spy:
            raw = str(directory / f"server-{clients}.txt")
            command = [args.py_spy, "record", "-p", str(process.pid), "-f", "raw", "-o", raw, "--nonblocking"]
            command += ["-r", "250"] + (["--gil"] if args.gil else [])
            spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)  # py-spy attaches.
        try:
            rate = spend_pairs(address, pairs, clients, functools.partial(forget_start, process, spy is not None))
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            process.send_signal(signal.SIGTERM)
            process.wait(120)
        title = f"Reserve+Commit over gRPC, {clients} client{'s' if clients > 1 else ''}"
        print(f"=== {title}: {clients} x {pairs} pairs, {rate:,.0f} pairs/s with the server profiled")
        if args.py_spy:
            print(f"--- {title}: the server process, sampled by py-spy\n{py_spy_top(raw, args.top)}\n")
        else:
            out = io.StringIO()
            stats = pstats.Stats(profile_file, stream=out)
            print(groups(stats))
            print(printed(stats.strip_dirs(), out, f"{title}: the server's threads (its event loop too)", args.top))


def profile_reads(directory: Path, args: argparse.Namespace) -> None:
    """GetRunState over gRPC on a run of --read-steps steps (bench/service.py's
    run_state_p99_ms_1m_steps), the server under cProfile from the first read on."""
    import grpc

    from bench.service import step_batch
    from trainledger.v1 import runs_pb2, runs_pb2_grpc

    profile_file = str(directory / "server-reads.prof")
    process, address = start_server(str(directory / "reads.db"), profile_file, "")
    try:
        with grpc.insecure_channel(address) as channel:
            runs = runs_pb2_grpc.RunsStub(channel)
            run_id = runs.OpenRun(runs_pb2.OpenRunRequest(run_key=f"profile-{uuid.uuid4().hex}")).state.run.run_id
            runs.StartAttempt(runs_pb2.StartAttemptRequest(run_id=run_id, attempt_id="a1"), timeout=30)
            position = 0
            for first in range(0, args.read_steps, 1_000):
                request = runs_pb2.AppendStepsRequest(batch=step_batch(run_id, first))
                position = runs.AppendSteps(request, timeout=60).position
            runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id, min_position=position), timeout=300)
            forget_start(process, False)
            started = time.perf_counter()
            for _ in range(args.reads):
                runs.GetRunState(runs_pb2.GetRunStateRequest(run_id=run_id), timeout=30)
            elapsed = time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    title = f"GetRunState over gRPC at {args.read_steps:,} steps"
    print(f"=== {title}: {args.reads} calls, {elapsed * 1000 / args.reads:.2f} ms each with the server profiled")
    out = io.StringIO()
    stats = pstats.Stats(profile_file, stream=out).strip_dirs()
    print(printed(stats, out, f"{title}: the server's threads (its event loop too)", args.top))


def serve_profiled(profile_file: str, serve: list[str]) -> None:
    """`trainledger serve` in this process with every thread under cProfile; the merged
    statistics are written to `profile_file` when it stops."""
    threads = Profiled()
    threads.install()
    caller = cProfile.Profile()
    threads.add(caller)
    # SIGUSR1: forget what was profiled so far (the start), so that the profile is of the load.
    signal.signal(signal.SIGUSR1, lambda *_: threads.merged())
    sys.argv = ["trainledger", *serve]
    caller.enable()
    try:
        runpy.run_module("services.cli", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        caller.disable()
        stats = threads.merged()
        if stats is not None:
            stats.dump_stats(profile_file)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-profiled":
        serve_profiled(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="spend,writers,steps,grpc,reads", help="which paths, comma-separated")
    parser.add_argument("--pairs", type=int, default=300, help="reserve+commit pairs of one writer or client")
    parser.add_argument("--batches", type=int, default=50, help="1,000-step batches of the appends")
    parser.add_argument("--clients", type=int, default=32, help="gRPC clients at once")
    parser.add_argument("--client-pairs", type=int, default=20, help="Reserve+Commit pairs per client at once")
    parser.add_argument("--read-steps", type=int, default=100_000, help="steps of the run GetRunState reads")
    parser.add_argument("--reads", type=int, default=300, help="GetRunState calls")
    parser.add_argument("--top", type=int, default=15, help="entries printed per table")
    parser.add_argument("--py-spy", default="", metavar="PATH", help="sample the server with this py-spy binary")
    parser.add_argument("--database-url", default="", help="spend only: on this PostgreSQL database, not SQLite")
    parser.add_argument("--gil", action="store_true", help="with --py-spy: only samples that hold the GIL")
    args = parser.parse_args()
    print(f"load average before: {load_average()}")
    paths = {
        "spend": profile_spend,
        "writers": profile_writers,
        "steps": profile_steps,
        "grpc": profile_grpc,
        "reads": profile_reads,
    }
    with tempfile.TemporaryDirectory(prefix="trainledger-profile-") as tmp:
        for name in args.paths.split(","):
            paths[name](Path(tmp), args)
            print(f"load average after {name}: {load_average()}")
    print(f"rerun: {rerun('bench/profile_paths.py', sys.argv[1:])}")


if __name__ == "__main__":
    main()
