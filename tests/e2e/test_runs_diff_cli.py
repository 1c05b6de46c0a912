"""`trainledger runs diff` as a user runs it: the installed command against one `trainledger serve`
process, and on the database file, with the runs recorded through clients.LedgerClient. Every
expected figure is written out here."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients import LedgerClient
from tests.e2e.test_remote_cli import COMMAND, environment

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]


@dataclass
class World:
    address: str
    database: Path
    elsewhere: Path
    ids: dict[str, str]


def record(client: LedgerClient) -> dict[str, str]:
    """Two runs named "sweep" that differ in lr and warmup, a third named "base"."""
    ids = {}
    for key, name, spec in (
        ("s1", "sweep", {"lr": 0.001, "optim": {"name": "adamw", "beta2": 0.95}, "seed": 7}),
        ("s2", "sweep", {"lr": 0.0003, "optim": {"name": "adamw", "beta2": 0.95}, "seed": 7, "warmup": 100}),
        ("b", "base", {"lr": 0.001, "optim": {"name": "sgd", "beta2": 0.95}, "seed": 7}),
    ):
        run = client.open_run(run_key=f"key-{key}", name=name, spec=spec, objective=("eval_loss", "min"))
        ids[key] = run_id = run.state.run.run_id
        client.start_attempt(run_id=run_id)
        client.append_steps(run_id=run_id, attempt=1, steps=[0, 1], metrics={"loss": [2.0, 1.5]})
    client.save_checkpoint(
        run_id=ids["s1"], attempt=1, step=1, uri="s3://ck/s1/1", backend="s3", scores={"eval_loss": 0.25}
    )
    client.reserve(account=ids["s1"], reservation_id="call-1", amount_usd_micro=20_000_000)
    client.commit(account=ids["s1"], reservation_id="call-1", actual_usd_micro=12_500_000)
    client.finish_run(run_id=ids["s2"], attempt=1, status="done", summary={"eval_loss": 0.5})
    return ids


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("runs-diff")
    elsewhere = directory / "elsewhere"
    elsewhere.mkdir()
    database = directory / "ledger.db"
    log = open(directory / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [COMMAND, "serve", "--db", str(database), "--listen", "127.0.0.1:0", "--no-http"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=directory,
        env=environment(PYTHONUNBUFFERED="1"),
    )
    try:
        assert server.stdout is not None
        match = re.search(r"serving on (127\.0\.0\.1:\d+)", server.stdout.readline())
        assert match, (directory / "server.log").read_text()
        with LedgerClient(match.group(1), principal="alice") as client:
            ids = record(client)
        yield World(match.group(1), database, elsewhere, ids)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()
        log.close()


def cli(world: World, *args: str, status: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [COMMAND, *args],
        capture_output=True,
        text=True,
        cwd=world.elsewhere,
        env=environment(TRAINLEDGER_ADDRESS=world.address),
        timeout=60,
    )
    assert done.returncode == status, (args, done.returncode, done.stdout, done.stderr)
    return done


def _rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]


def test_runs_diff_shows_the_keys_that_differ_the_spend_and_the_best_checkpoint(world: World) -> None:
    s1, s2 = world.ids["s1"], world.ids["s2"]
    text = cli(world, "runs", "diff", s1, s2).stdout
    rows = _rows(text)
    # Runs of the same name are told apart by their ids' first 8 characters.
    assert rows[0] == [f"sweep {s1[:8]}: {s1}"]
    assert rows[1] == [f"sweep {s2[:8]}: {s2}"]
    assert rows[3] == ["KEY", f"sweep {s1[:8]}", f"sweep {s2[:8]}"]
    assert rows[5:] == [
        ["spec.lr", "0.001", "0.0003"],
        ["spec.warmup", "-", "100"],
        ["summary.eval_loss", "-", "0.5"],
        ["spend", "$12.50", "$0.00"],
        ["best checkpoint", "step 1 (eval_loss=0.25)", "-"],
        ["(3 identical keys folded away: --all shows them)"],
    ]


def test_runs_diff_all_shows_the_identical_keys_and_names_runs_by_name(world: World) -> None:
    text = cli(world, "runs", "diff", "base", world.ids["s1"], "--all").stdout
    rows = _rows(text)
    assert rows[3] == ["KEY", "base", "sweep", "SAME"]
    assert ["spec.optim.name", "sgd", "adamw"] in rows
    assert ["spec.optim.beta2", "0.95", "0.95", "="] in rows
    assert ["spec.seed", "7", "7", "="] in rows
    assert "folded away" not in text


def test_runs_diff_on_the_database_file_prints_what_the_server_prints(world: World) -> None:
    args = ["runs", "diff", world.ids["s1"], world.ids["s2"], "base"]
    assert cli(world, *args, "--db", str(world.database)).stdout == cli(world, *args).stdout
    document = json.loads(cli(world, *args, "--json").stdout)
    assert [run["run_id"] for run in document["runs"]] == [world.ids["s1"], world.ids["s2"], world.ids["b"]]
    assert document["rows"][0] == {
        "key": "spec.lr",
        "values": ["0.001", "0.0003", "0.001"],
        "differs": True,
        "fact": False,
    }
    assert document["identical"] == 2  # spec.optim.beta2, spec.seed


def test_runs_diff_refuses_an_unknown_run_an_ambiguous_name_and_one_run(world: World) -> None:
    assert cli(world, "runs", "diff", "base", "no-such-run", status=1).stderr == "trainledger: no run no-such-run\n"
    assert cli(world, "runs", "diff", "base", "sweep", status=1).stderr.startswith(
        "trainledger: sweep is ambiguous: 2 runs of that name:"
    )
    assert (
        cli(world, "runs", "diff", "base", status=2).stderr == "trainledger: runs diff compares 2 to 10 runs, not 1\n"
    )
    offline = cli(world, "runs", "diff", "base", "nope", "--db", str(world.database), status=1)
    assert offline.stderr == "trainledger: no run nope\n"
