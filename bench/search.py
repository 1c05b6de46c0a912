"""Benchmark of run search at 10,000 runs: over gRPC on SQLite (and PostgreSQL), and in-process.

Run:  PYTHONPATH=. .venv/bin/python bench/search.py [--runs 10000] [--repeat 10] [--small]
          [--database FILE] [--postgres URL] [--backends sqlite,postgres] [--no-grpc]
Records the runs through the Ledger: each with about 50 spec keys (numbers, strings, booleans, a
nested block; one key on every other run only), 10 summary keys, 5 metrics over one batch of
steps and 3 tags; most finished, some with spend. Then times a mix of 20 queries (a page of 100):
selective and broad, spec, summary, tag, metric and run fields, like, in, not, nesting, ordered by
a spec key, a metric and a run field, and by a key half the runs lack:
- over gRPC: an in-process server on loopback (services.create_server on port 0, as the service
  tests serve), the Python client's search_runs; each search followed by a Health.Check over the
  same channel, the ceiling the gRPC round trip itself sets (noop_p99_ms);
- in-process: Ledger.search_runs on the same ledger;
- on PostgreSQL (--postgres URL, or TRAINLEDGER_TEST_DATABASE_URL when set): the same over gRPC,
  the runs recorded into the schema `bench_search_<runs>` (reused when it holds runs).
Each repeat goes through the whole mix, the backends alternating. Also the worst query the
language allows that the bench could write (64 `like` comparisons of 8 `%` each, ORed, ordered
by a key half the runs lack): worst_query_ms, timed on its own.
The LAST line is one JSON object (bench/goals.py): search_p99_ms_10k_runs (gRPC on SQLite, every
query of the mix, every repeat; the size is --runs'), search_p99_ms_10k_runs_postgres,
search_p99_ms_10k_runs_in_process, their medians, search_p99_cpu_ms (this process's CPU per search,
client and server together: steadier than wall time on a loaded host), noop_p99_ms,
search_index_bytes_per_run (the search view's indexes, primary keys included, from SQLite's
dbstat), search_table_bytes_per_run, record_runs_per_s, the goals judged, the load averages and
the command that reruns it. Goal (never a test assertion): search p99 <= 50 ms at 10,000 runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.goals import SEARCH, last_line, load_average, rerun, size_label, verdicts  # noqa: E402
from clients import LedgerClient  # noqa: E402
from ledger import Invalid, Ledger  # noqa: E402
from services import create_server  # noqa: E402

METRICS = ("loss", "grad_norm", "lr", "token_accuracy", "entropy")
OPTIMIZERS = ("adam", "adamw", "sgd", "lion", "adafactor")
MODELS = ("llama-3-8b", "llama-3-70b", "qwen-2-7b", "mistral-7b", "gemma-2b")
TEAMS = ("vision", "audio", "text", "robotics")
QUERIES: list[tuple[str, str]] = [
    ("spec.lr = 0.0003", ""),
    ("spec.lr > 0.0005 and spec.optimizer = 'adamw'", ""),
    ("spec.lora.r in (8, 16)", ""),
    ("spec.model like 'llama%'", ""),
    ("spec.k7 > 0.9 and spec.k12 < 0.1", ""),
    ("spec.flag0 = true and tags.team = 'vision'", ""),
    ("summary.eval_loss < 0.5", "summary.eval_loss"),
    ("summary.m3 >= 0.99", ""),
    ("metrics.loss.min < 0.2", "metrics.loss.min"),
    ("metrics.token_accuracy.last > 0.95 and status = 'done'", ""),
    ("metrics.entropy.max > 4.9", ""),
    ("status = 'failed'", "started desc"),
    ("status in ('running', 'stopped') and attempts > 1", ""),
    ("name like '%-77%'", ""),
    ("not spec.optimizer = 'sgd' and spec.lr < 0.0002", ""),
    ("(spec.lora.r = 64 or spec.lora.alpha = 128) and metrics.loss.last < 1", ""),
    ("spend_committed_usd > 0.5", "spend_committed_usd_micro desc"),
    ("tags.sweep like 'lr-%' and finished is null", ""),
    ("spec.missing is null and spec.k1 > 0.5", "spec.half desc"),
    ("", "metrics.loss.last"),
]
# The worst the language allows that this data makes slow: every comparison a like of 8 `%`
# over a key every run holds, ORed, so each run is tested against each; ordered by a key half
# the runs lack.
WORST = (" or ".join(f"spec.s{n % 8} like '%v%1%2%3%4%5%6%x'" for n in range(64)), "spec.half")


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 3)


def median_ms(samples: list[float]) -> float:
    return round(sorted(samples)[len(samples) // 2] * 1000, 3)


def spec_of(rng: random.Random, index: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "lr": rng.choice([1e-4, 2e-4, 3e-4, 5e-4, 1e-3]),
        "optimizer": rng.choice(OPTIMIZERS),
        "model": rng.choice(MODELS),
        "lora": {"r": rng.choice([4, 8, 16, 32, 64]), "alpha": rng.choice([16, 32, 64, 128]), "dropout": 0.05},
        "seed": index,
    }
    spec.update({f"k{n}": round(rng.random(), 4) for n in range(30)})
    spec.update({f"s{n}": f"v{rng.randrange(20)}" for n in range(8)})
    spec.update({f"flag{n}": rng.random() < 0.5 for n in range(4)})
    if index % 2:
        spec["half"] = round(rng.random(), 4)
    return spec


def record(ledger: Ledger, rng: random.Random, index: int) -> int:
    run_id = ledger.open_run(run_key=f"run-{index}", name=f"sft-{index}", spec=spec_of(rng, index)).run_id
    tags = {"team": rng.choice(TEAMS), "sweep": f"lr-{rng.randrange(50)}", "owner": f"user{rng.randrange(30)}"}
    ledger.set_tags(run_id=run_id, tags=tags)
    attempts = rng.choice([1, 1, 1, 2])
    for attempt in range(1, attempts + 1):
        ledger.start_attempt(run_id=run_id)
        steps = list(range(1, 11))
        metrics = {name: [rng.random() * 5 for _ in steps] for name in METRICS}
        position = ledger.append_steps(run_id=run_id, attempt=attempt, steps=steps, metrics=metrics).position
    if rng.random() < 0.4:
        amount = rng.randrange(1, 2_000_000)
        ledger.reserve(account=run_id, reservation_id="r", amount_usd_micro=amount)
        position = ledger.commit(account=run_id, reservation_id="r", actual_usd_micro=amount).position
    if rng.random() < 0.8:
        summary = {"eval_loss": rng.random(), **{f"m{n}": rng.random() for n in range(9)}}
        status = rng.choice(["done", "done", "failed", "stopped"])
        position = ledger.finish_run(run_id=run_id, attempt=attempts, status=status, summary=summary).position
    return position


def view_bytes(path: str) -> tuple[int, int]:
    """(index bytes, table bytes) of the search view's tables, from SQLite's dbstat."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        kinds = dict(connection.execute("SELECT name, type FROM sqlite_master").fetchall())
        owners = dict(connection.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
    index_bytes = table_bytes = 0
    for name, size in rows:
        if owners.get(name) not in ("view_run_fields", "view_run_metrics"):
            continue
        if kinds.get(name) == "index":
            index_bytes += size
        else:
            table_bytes += size
    return index_bytes, table_bytes


def record_all(ledger: Ledger, runs: int) -> float | None:
    """Record `runs` runs (none when the ledger holds some) and wait for the views; the seconds."""
    if ledger.head() != 0:
        return None
    rng, start, position = random.Random(7), time.perf_counter(), 0
    for index in range(runs):
        position = record(ledger, rng, index)
        if index % 1_000 == 999:
            print(f"{index + 1} runs recorded", file=sys.stderr)
    ledger.wait(position, timeout_s=600.0)
    return time.perf_counter() - start


class Target:
    """One ledger searched over gRPC (an in-process server on loopback) and in-process."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name, self.ledger = name, ledger
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"{name}-server", daemon=True)
        self.thread.start()
        self.server, port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.client = LedgerClient(f"127.0.0.1:{port}", channel=self.channel, timeout_s=60.0)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.samples: dict[str, list[float]] = {"grpc": [], "cpu": [], "noop": [], "in_process": []}
        self.by_query: dict[str, list[float]] = {}

    async def _start(self) -> tuple[Any, int]:
        server, port = create_server("127.0.0.1:0", ledger=self.ledger)
        await server.start()
        return server, port

    def over_grpc(self, where: str, order: str) -> int:
        page = self.client.search_runs(where, order_by=order, page_size=100)
        return len(page.runs)

    def in_process(self, where: str, order: str) -> int:
        return len(self.ledger.search_runs(where=where, order_by=order, limit=100).runs)

    def one_round(self, grpc_too: bool) -> None:
        """The mix once: each query over gRPC with a no-op call after it, then in-process."""
        noop = health_pb2.HealthCheckRequest()
        for query in QUERIES:
            if grpc_too:
                seconds, cpu = timed(lambda query=query: self.over_grpc(*query))
                self.samples["grpc"].append(seconds)
                self.samples["cpu"].append(cpu)
                self.by_query.setdefault(f"{query[0] or '(all)'} | {query[1]}", []).append(seconds)
                self.samples["noop"].append(timed(lambda: self.health.Check(noop, timeout=30))[0])
            self.samples["in_process"].append(timed(lambda query=query: self.in_process(*query))[0])

    def close(self) -> None:
        self.client.close()
        try:
            asyncio.run_coroutine_threadsafe(self.server.stop(1.0), self.loop).result(30)
        except TimeoutError:
            print(f"the {self.name} server did not stop within 30 s", file=sys.stderr)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def timed(call: Callable[[], Any]) -> tuple[float, float]:
    """The wall and the CPU seconds of `call` (CPU time is what a loaded machine's wall time hides)."""
    began, began_cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - began, time.process_time() - began_cpu


def figures_of(target: Target, runs: int, suffix: str) -> dict[str, Any]:
    label = size_label(runs)
    samples = target.samples
    figures: dict[str, Any] = {}
    if samples["grpc"]:
        figures[f"search_p99_ms_{label}_runs{suffix}"] = p99_ms(samples["grpc"])
        figures[f"search_median_ms{suffix}"] = median_ms(samples["grpc"])
        figures[f"search_p99_cpu_ms{suffix}"] = p99_ms(samples["cpu"])
        figures[f"noop_p99_ms{suffix}"] = p99_ms(samples["noop"])
    figures[f"search_p99_ms_{label}_runs_in_process{suffix}"] = p99_ms(samples["in_process"])
    figures[f"search_median_ms_in_process{suffix}"] = median_ms(samples["in_process"])
    for query, times in target.by_query.items():
        print(f"{target.name:>10}  p99 {p99_ms(times):8.3f} ms  {query}")
    return figures


def worst(target: Target) -> float | str:
    """The worst allowed query's wall time, its best of three (ms), or "refused" when the ledger
    stops it at its time bound (SEARCH_READ_S) and refuses it."""
    try:
        found = target.in_process(*WORST)
        best = min(timed(lambda: target.in_process(*WORST))[0] for _ in range(3))
    except Invalid as refused:
        print(f"worst allowed query: refused ({refused})")
        return "refused"
    print(f"worst allowed query: {found} runs in {best * 1000:.1f} ms")
    return round(best * 1000, 3)


def postgres_url(opts: argparse.Namespace) -> str:
    url = opts.postgres or os.environ.get("TRAINLEDGER_TEST_DATABASE_URL", "")
    if not url or "schema=" in url:
        return url
    return f"{url}{'&' if '?' in url else '?'}schema=bench_search_{opts.runs}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--small", action="store_true", help="500 runs, 3 repeats: a quick run")
    parser.add_argument("--database", default="", help="a SQLite file to record into, or reuse when it holds runs")
    parser.add_argument("--postgres", default="", help="a postgresql:// URL (default TRAINLEDGER_TEST_DATABASE_URL)")
    parser.add_argument("--no-grpc", action="store_true", help="in-process only, on SQLite")
    parser.add_argument("--backends", default="sqlite,postgres", help="which to measure (postgres: with a URL)")
    opts = parser.parse_args()
    if opts.small:
        opts.runs, opts.repeat = 500, 3
    load_before = load_average()
    backends = [name for name in opts.backends.split(",") if name]
    url = "" if opts.no_grpc or "postgres" not in backends else postgres_url(opts)
    figures: dict[str, Any] = {"runs": opts.runs, "queries": len(QUERIES), "repeat": opts.repeat}
    with tempfile.TemporaryDirectory() as folder:
        path = opts.database or str(Path(folder) / "ledger.db")
        ledgers = {"sqlite": Ledger.open(path)} if "sqlite" in backends else {}
        ledgers.update({"postgres": Ledger.open(url)} if url else {})
        targets: dict[str, Target] = {}
        try:
            for name, ledger in ledgers.items():
                seconds = record_all(ledger, opts.runs)
                if seconds:
                    figures[f"record_runs_per_s_{name}"] = round(opts.runs / seconds, 1)
            targets = {name: Target(name, ledger) for name, ledger in ledgers.items()}
            for _ in range(opts.repeat):
                for target in targets.values():
                    target.one_round(not opts.no_grpc)
            for name, target in targets.items():
                suffix = "" if name == "sqlite" else f"_{name}"
                figures.update(figures_of(target, opts.runs, suffix))
                figures[f"worst_query_ms{suffix}"] = worst(target)
        finally:
            for target in targets.values():
                target.close()
            for ledger in ledgers.values():
                ledger.close()
        if "sqlite" in ledgers:
            index_bytes, table_bytes = view_bytes(path)
            figures["search_index_bytes_per_run"] = round(index_bytes / opts.runs)
            figures["search_table_bytes_per_run"] = round(table_bytes / opts.runs)
    print(last_line(figures, verdicts(figures, SEARCH), rerun("bench/search.py", sys.argv[1:]), load_before))


if __name__ == "__main__":
    main()
