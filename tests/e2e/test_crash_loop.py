"""Crash loops: a `trainledger serve` process killed with SIGKILL at random points, over and over,
while two client processes (tests/e2e/crash_workload.py) stream steps, reserve and commit or
release holds under a run cap and a shared parent cap, save checkpoints and register and promote
model versions; each time the server is started again on the same file and port.

After every kill, with the server dead, the file (and its write-ahead log) is copied: a crash image.
Each image is checked in this process, on its copy, while the loop goes on:

- every write a client had an answer for is in the log once: the event at the acknowledged
  position is that write, no step, hold, checkpoint or registration is recorded twice, and every
  step up to the last acked one is there;
- no cap is crossed: committed + presumed + pending - overrun <= cap for every account at every
  position of the log (an auditor's fold of the spend events) and in the views;
- the views, as the crashed server left them and then caught up, equal the views rebuilt from
  position 0;
- the log of every image begins with the log of the image before it, event for event.

At the end the clients stop, flush and report their counters (nothing dropped or failed).
Kills land anywhere: while the server starts (opening the file, checking it, catching up), while
it serves, mid-stream and mid-transaction. TRAINLEDGER_CRASH_CYCLES sets the number (default 30).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from ledger.domain.base import ledger_id
from ledger.views.models import Reservation
from tests.client.server_thread import free_port
from tests.e2e import crash_workload
from tests.e2e.test_serve_guards import environment, trainledger

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.subprocess]

CYCLES = int(os.environ.get("TRAINLEDGER_CRASH_CYCLES", "30"))
WORKERS = ("alpha", "beta")
START_WAIT_S = 60.0


class Server:
    """`trainledger serve` on one file and one port, started again after each kill."""

    def __init__(self, database: Path, port: int, log: Path) -> None:
        self.database, self.port, self.log = database, port, log
        self.process: subprocess.Popen[bytes] | None = None
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.health = health_pb2_grpc.HealthStub(self.channel)

    def start(self) -> None:
        with open(self.log, "ab") as output:
            self.process = subprocess.Popen(
                [*trainledger(), "serve", "--db", str(self.database), "--listen", f"127.0.0.1:{self.port}"],
                stdout=output,
                stderr=subprocess.STDOUT,
                env=environment(),
            )

    def wait_serving(self) -> None:
        deadline = time.monotonic() + START_WAIT_S
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, (
                f"the server exited ({self.process and self.process.returncode}): {self.log.read_text()[-3000:]}"
            )
            try:
                answer = self.health.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.02)
        raise AssertionError(f"the server did not serve within {START_WAIT_S} s: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # SIGKILL: nothing graceful.
        if self.process is not None:
            self.process.wait(timeout=START_WAIT_S)

    def close(self) -> None:
        self.kill()
        self.channel.close()


def read_acks(path: Path) -> list[dict[str, Any]]:
    """The complete lines of an acks file (a line being written is left for the next read)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1]]


def take_image(database: Path, image: Path) -> None:
    """Copy the file and its write-ahead log as the killed server left them (SQLite rebuilds the
    shared-memory index from the log)."""
    image.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal"):
        source = Path(f"{database}{suffix}")
        if source.exists():
            shutil.copyfile(source, f"{image}{suffix}")


# Checks of one crash image.


@dataclass
class Checked:
    head: int = 0
    acked: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    cap_crossings: list[str] = field(default_factory=list)
    view_mismatches: list[str] = field(default_factory=list)
    events: list[tuple[int, str, str, int]] = field(default_factory=list)  # position, type, originator, version


def run_id_of(worker: str) -> str:
    return str(ledger_id("run", f"crash-{worker}"))


def all_events(ledger: Ledger) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while page := ledger.read_events(from_position=events[-1]["position"] + 1 if events else 1, limit=5_000):
        events += page
    return events


def expected(ack: dict[str, Any], worker: str) -> tuple[str, str | None, dict[str, Any]]:
    """What the event at an acked position must be: its type's suffix, its originator (None: any)
    and data fields."""
    kind = ack["kind"]
    run_id = run_id_of(worker)
    if kind == "steps":
        return "Run.StepsRecorded", run_id, {}
    if kind in ("reserve", "commit", "release"):
        name = {"reserve": "Reserved", "commit": "Committed", "release": "Released"}[kind]
        return f"Account.Spend{name}", str(ledger_id("account", run_id)), {"reservation_id": ack["id"]}
    if kind == "checkpoint":
        return "Run.CheckpointSaved", run_id, {"step": ack["step"]}
    if kind == "register":
        return "Family.VersionRegistered", None, {"version": ack["version"], "digest": ack["digest"]}
    if kind == "promote":
        return "Family.VersionPromoted", None, {"version": ack["version"]}
    raise AssertionError(f"unknown ack {ack}")


def check_acks(events: list[dict[str, Any]], acks: dict[str, list[dict[str, Any]]], checked: Checked) -> None:
    at = {event["position"]: event for event in events}
    for worker, lines in acks.items():
        for ack in lines:
            if "position" not in ack:
                continue
            checked.acked += 1
            kind, originator, data = expected(ack, worker)
            event = at.get(ack["position"])
            if (
                event is None
                or event["type"] != kind
                or originator not in (None, event["originator_id"])
                or any(event["data"].get(key) != value for key, value in data.items())
            ):
                checked.lost.append(f"{worker} {ack}: the log has {event and (event['type'], event['data'])}")
        last_acked = max((ack["last_step"] for ack in lines if ack["kind"] == "steps"), default=-1)
        recorded = Counter(
            step
            for event in events
            if event["type"] == "Run.StepsRecorded" and event["originator_id"] == run_id_of(worker)
            for step in event["data"]["steps"]
        )
        missing = [step for step in range(last_acked + 1) if step not in recorded]
        if missing:
            checked.lost.append(f"{worker}: acked steps missing from the log: {missing[:10]}")
        twice = [step for step, count in recorded.items() if count > 1]
        if twice:
            checked.duplicates.append(f"{worker}: steps recorded twice: {sorted(twice)[:10]}")
    identities: Counter[tuple[Any, ...]] = Counter()
    for event in events:
        data, kind = event["data"], event["type"]
        if kind in ("Account.SpendReserved", "Account.SpendCommitted", "Account.SpendReleased"):
            identities[(kind, event["originator_id"], data["reservation_id"])] += 1
        elif kind == "Run.CheckpointSaved":
            identities[(kind, event["originator_id"], data["step"], data["uri"])] += 1
        elif kind == "Family.VersionRegistered":
            identities[(kind, data["digest"])] += 1
    checked.duplicates += [f"recorded {count} times: {identity}" for identity, count in identities.items() if count > 1]


def audit_caps(events: list[dict[str, Any]], checked: Checked) -> None:
    """Fold every account's spend events in log order: committed + presumed + pending - overrun
    never exceeds the cap at any position."""
    books: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"cap": None, "pending": 0, "committed": 0, "presumed": 0, "overrun": 0, "holds": {}}
    )
    for event in events:
        kind, data = event["type"], event["data"]
        if not kind.startswith("Account."):
            continue
        book = books[event["originator_id"]]
        if kind in ("Account.Opened", "Account.CapSet"):
            book["cap"] = data["cap"]
        elif kind == "Account.SpendReserved":
            book["pending"] += data["amount"]
            book["holds"][data["reservation_id"]] = data["amount"]
        elif kind == "Account.SpendCommitted":
            if book["holds"].pop(data["reservation_id"], None) is not None:
                book["pending"] -= data["reserved"]
            book["committed"] += data["actual"]
            book["presumed"] -= data.get("replaced", 0)
            book["overrun"] += data["overrun"]
        elif kind == "Account.SpendSettled":
            book["holds"].pop(data["reservation_id"], None)
            book["pending"] -= data["reserved"]
            book["presumed"] += data["amount"]
        elif kind in ("Account.SpendReleased", "Account.SpendExpired"):
            book["holds"].pop(data["reservation_id"], None)
            book["pending"] -= data["amount"]
        elif kind == "Account.SpendCharged":
            book["committed"] += data["amount"]
            book["overrun"] += data["overrun"]
        elif kind == "Account.SpendRolledUp":
            book["pending"] += data["pending_delta"]
            book["committed"] += data["committed_delta"]
            book["presumed"] += data.get("presumed_delta", 0)
            book["overrun"] += data["overrun_delta"]
        held = book["committed"] + book["presumed"] + book["pending"] - book["overrun"]
        if book["cap"] is not None and held > book["cap"]:
            checked.cap_crossings.append(
                f"at position {event['position']} account {event['originator_id']} "
                f"holds {held} over its cap {book['cap']}"
            )


def views(ledger: Ledger) -> dict[str, Any]:
    """Everything the views answer about the crash loop's runs, accounts and family."""
    out: dict[str, Any] = {"runs": ledger.list_runs(limit=100), "families": ledger.families()}
    for run in out["runs"].runs:
        run_id = run.run_id
        pages = []
        from_step: int | None = 0
        while from_step is not None:
            page = ledger.series(run_id, from_step=from_step, limit=10_000)
            pages.append(page)
            from_step = page.next_from_step
        out[run_id] = {"state": ledger.run_state(run_id), "series": pages}
        for account in (run_id, crash_workload.PARENT):
            entries: list[Reservation] = []
            after: int | None = 0
            while after is not None:
                batch = ledger.reservations(account, limit=1_000, after_position=after)
                entries += batch.reservations
                after = batch.after_position
            out[f"account {account}"] = {"account": ledger.account(account), "reservations": entries}
    for family in out["families"]:
        out[f"family {family.family}"] = ledger.family(family.family)
    return out


def check_image(image: Path, acks: dict[str, list[dict[str, Any]]]) -> Checked:
    checked = Checked()
    ledger = Ledger.open(str(image), project=False)
    try:
        ledger.projector.catch_up()  # What the restarted server does first.
        events = all_events(ledger)
        checked.head = events[-1]["position"] if events else 0
        checked.events = [(e["position"], e["type"], e["originator_id"], e["originator_version"]) for e in events]
        check_acks(events, acks, checked)
        audit_caps(events, checked)
        caught_up = views(ledger)
        for name, value in caught_up.items():
            if name.startswith("account ") and value["account"].cap_usd_micro is not None:
                account = value["account"]
                held = (
                    account.committed_usd_micro
                    + account.presumed_usd_micro
                    + account.pending_usd_micro
                    - account.overrun_usd_micro
                )
                if held > account.cap_usd_micro:
                    checked.cap_crossings.append(f"the view of {name} crosses its cap: {account}")
        ledger.projector.rebuild()
        rebuilt = views(ledger)
        checked.view_mismatches += [
            f"{name}: as projected {caught_up.get(name)!r:.300} rebuilt {rebuilt.get(name)!r:.300}"
            for name in sorted(set(caught_up) | set(rebuilt))
            if caught_up.get(name) != rebuilt.get(name)
        ]
    finally:
        ledger.close()
    return checked


# The loop.


@dataclass
class Outcome:
    cycles: int = 0
    kills_while_starting: int = 0
    images: list[Checked] = field(default_factory=list)
    prefix_breaks: list[str] = field(default_factory=list)
    workers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        return {
            "crash_cycles": self.cycles,
            "kills_while_starting": self.kills_while_starting,
            "acked_writes": max((image.acked for image in self.images), default=0),
            "acked_lost": sum(len(image.lost) for image in self.images) + len(self.prefix_breaks),
            "duplicates": sum(len(image.duplicates) for image in self.images),
            "cap_crossings": sum(len(image.cap_crossings) for image in self.images),
            "view_mismatches": sum(len(image.view_mismatches) for image in self.images),
            "log_events": max((image.head for image in self.images), default=0),
        }

    def problems(self) -> list[str]:
        found = list(self.prefix_breaks)
        for number, image in enumerate(self.images):
            found += [
                f"image {number}: {problem}"
                for problem in image.lost + image.duplicates + image.cap_crossings + image.view_mismatches
            ]
        for worker, done in self.workers.items():
            counters = done.get("counters", {})
            if done.get("kind") != "done" or counters.get("failed") or counters.get("dropped"):
                found.append(f"client {worker} ended with {done}")
        return found


def crash_loop(directory: Path, cycles: int, seed: int) -> Outcome:
    """Run the loop (see the module docstring) and return what the checks found."""
    rng = random.Random(seed)
    database, port = directory / "ledger.db", free_port()
    server = Server(database, port, directory / "server.log")
    stop = directory / "stop"
    outcome = Outcome()
    workers: dict[str, subprocess.Popen[bytes]] = {}
    checks: list[Future[Checked]] = []
    try:
        server.start()
        server.wait_serving()
        open_parent(f"127.0.0.1:{port}")
        for number, name in enumerate(WORKERS):
            with open(directory / f"{name}.log", "ab") as output:
                workers[name] = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.e2e.crash_workload",
                        "--address",
                        f"127.0.0.1:{port}",
                        "--name",
                        name,
                        "--acks",
                        str(directory / f"{name}.acks"),
                        "--stop",
                        str(stop),
                        "--seed",
                        str(seed + number),
                    ],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=environment(),
                )
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="crash-image-check") as checker:
            for cycle in range(cycles):
                if rng.random() < 0.3:  # Anywhere in the start: opening, checking, catching up, binding.
                    time.sleep(rng.uniform(0.0, 1.5))
                    outcome.kills_while_starting += server_not_serving(server)
                else:
                    server.wait_serving()
                    time.sleep(rng.uniform(0.1, 1.0))
                server.kill()
                image = directory / "images" / f"{cycle}.db"
                take_image(database, image)
                acks = {name: read_acks(directory / f"{name}.acks") for name in WORKERS}
                server.start()
                checks.append(checker.submit(check_image, image, acks))
                outcome.cycles += 1
                crashed = [name for name, process in workers.items() if process.poll() is not None]
                assert not crashed, f"client {crashed} exited: {read_acks(directory / f'{crashed[0]}.acks')[-1:]}"
            server.wait_serving()
            stop.touch()
            for name, process in workers.items():
                assert process.wait(timeout=300) == 0, (directory / f"{name}.log").read_text()[-3000:]
                outcome.workers[name] = read_acks(directory / f"{name}.acks")[-1]
            server.kill()
            image = directory / "images" / "final.db"
            take_image(database, image)
            checks.append(
                checker.submit(check_image, image, {name: read_acks(directory / f"{name}.acks") for name in WORKERS})
            )
            outcome.images = [check.result() for check in checks]
    finally:
        stop.touch()
        for process in workers.values():
            if process.poll() is None:
                process.kill()
            process.wait()
        server.close()
    for number in range(1, len(outcome.images)):
        earlier, later = outcome.images[number - 1].events, outcome.images[number].events
        if later[: len(earlier)] != earlier:
            outcome.prefix_breaks.append(f"image {number} does not begin with the log of image {number - 1}")
    for image in outcome.images:
        image.events = []
    return outcome


def server_not_serving(server: Server) -> int:
    """1 when the server is not serving yet (the kill that follows lands in its start), else 0."""
    try:
        answer = server.health.Check(health_pb2.HealthCheckRequest(), timeout=0.2)
        return int(answer.status != health_pb2.HealthCheckResponse.SERVING)
    except grpc.RpcError:
        return 1


def open_parent(address: str) -> None:
    from clients import LedgerClient

    with LedgerClient(address, timeout_s=10.0) as client:
        client.open_account(account=crash_workload.PARENT, cap_usd_micro=crash_workload.PARENT_CAP)


@pytest.fixture
def seed() -> Iterator[int]:
    value = int(os.environ.get("TRAINLEDGER_CRASH_SEED", random.randrange(2**31)))
    yield value


def test_kill_9_at_random_points_loses_no_ack_records_nothing_twice_and_crosses_no_cap(
    tmp_path: Path, seed: int
) -> None:
    outcome = crash_loop(tmp_path, CYCLES, seed)
    figures = outcome.figures()
    assert outcome.cycles >= CYCLES and figures["acked_writes"] > 0, figures
    assert outcome.problems() == [], f"seed {seed} (TRAINLEDGER_CRASH_SEED): {figures}"
    assert (figures["acked_lost"], figures["duplicates"], figures["cap_crossings"], figures["view_mismatches"]) == (
        0,
        0,
        0,
        0,
    ), figures
