"""The CLI reading and writing through a server, run as a user runs it: the installed `trainledger`
command from another directory (no database file there) against one `trainledger serve` process,
with the data recorded through clients.LedgerClient. Every expected figure is written out here."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

from clients import LedgerClient, run_key
from ledger.storage.version import SCHEMA_VERSION

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]

COMMAND = str(Path(sys.executable).parent / "trainledger")
SPEC = {"base_model": "meta-llama/Llama-3.1-8B", "lora": {"alpha": 32, "r": 16}, "lr": 0.0001, "method": "sft"}


@dataclass
class World:
    address: str
    database: Path
    elsewhere: Path
    ids: dict[str, str]


def environment(**extra: str) -> dict[str, str]:
    drop = ("TRAINLEDGER_DATABASE_URL", "TRAINLEDGER_ADDRESS", "TRAINLEDGER_TOKEN", "TRAINLEDGER_TLS", "COLUMNS")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def record(client: LedgerClient) -> dict[str, str]:
    """Runs, spend and a registry family, as trainers and operators record them."""
    client.open_account(account="team-a", cap_usd_micro=100_000_000)
    sft = client.open_run(
        run_key="key-sft", name="sft-llama-8b", spec=SPEC, cap_usd_micro=50_000_000, parent_account="team-a"
    ).state.run.run_id
    client.start_attempt(run_id=sft, label="host-1")
    client.append_steps(
        run_id=sft,
        attempt=1,
        steps=list(range(20)),
        tokens=[1000] * 20,
        metrics={"loss": [2.0 - s * 0.05 for s in range(20)], "eval_loss": {"values": [1.5, 1.25], "index": [9, 19]}},
    )
    client.save_checkpoint(run_id=sft, attempt=1, step=9, uri="s3://ck/sft/9", backend="s3")
    client.save_checkpoint(run_id=sft, attempt=1, step=14, uri="s3://ck/sft/14", backend="s3")
    # A second attempt resumes from step 9: attempt 1's steps and checkpoint after 9 are superseded.
    client.start_attempt(run_id=sft, label="host-2", resume_from_step=9)
    client.append_steps(
        run_id=sft,
        attempt=2,
        steps=list(range(10, 25)),
        tokens=[1000] * 15,
        metrics={"loss": [1.0 - (s - 10) * 0.0625 for s in range(10, 25)]},
    )
    client.save_checkpoint(run_id=sft, attempt=2, step=24, uri="s3://ck/sft/24", backend="s3")
    client.reserve(account=sft, reservation_id="call-1", amount_usd_micro=2_500_000)
    client.commit(account=sft, reservation_id="call-1", actual_usd_micro=2_250_000)
    client.reserve(account=sft, reservation_id="call-2", amount_usd_micro=1_000_000, ttl_s=3_600)
    big = client.open_run(run_key="key-70b", name="sft-llama-70b", spec={"lr": 0.00002}).state.run.run_id
    dpo = client.open_run(run_key="key-dpo", name="dpo-mistral", spec={"beta": 0.1}).state.run.run_id
    client.start_attempt(run_id=dpo)
    client.append_steps(run_id=dpo, attempt=1, steps=[0, 1], metrics={"reward": [0.5, 0.75]})
    client.finish_run(run_id=dpo, attempt=1, status="done", summary={"reward": 0.75})
    twins = [client.open_run(run_key=f"key-twin-{n}", name="twin").state.run.run_id for n in (1, 2)]
    for number in (1, 2):
        client.register(family="llama-sft", artifact_uri=f"s3://models/llama-sft/{number}", digest=f"{number}" * 64)
    client.promote(
        family="llama-sft",
        version=1,
        expected_current=0,
        verdict={"passed": True, "reason": "eval ok", "stats": {"win_rate": 0.61}},
    )
    return {"sft": sft, "70b": big, "dpo": dpo, "twin-1": twins[0], "twin-2": twins[1]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("remote-cli")
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
        line = server.stdout.readline()
        match = re.search(r"serving on (127\.0\.0\.1:\d+)", line)
        assert match, (line, (directory / "server.log").read_text())
        address = match.group(1)
        with LedgerClient(address, principal="alice") as client:
            ids = record(client)
        yield World(address, database, elsewhere, ids)
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


def cli(world: World, *args: str, status: int = 0, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [COMMAND, *args],
        capture_output=True,
        text=True,
        cwd=world.elsewhere,
        env=environment(TRAINLEDGER_ADDRESS=world.address, USER="bob", LOGNAME="bob", **env),
        timeout=60,
    )
    assert done.returncode == status, (args, done.returncode, done.stdout, done.stderr)
    return done


def out(world: World, *args: str, **env: str) -> str:
    return cli(world, *args, **env).stdout


def test_runs_list_shows_status_attempt_last_step_and_spend_against_the_cap(world: World) -> None:
    listed = out(world, "runs", "list")
    lines = listed.splitlines()
    assert lines[0].split() == [
        "RUN",
        "NAME",
        "STATUS",
        "ATTEMPT",
        "LAST",
        "STEP",
        "SPEND",
        "HELD",
        "ACCOUNT",
        "OPENED",
    ]
    rows = {line.split()[1]: line for line in lines[2:]}
    assert set(rows) == {"sft-llama-8b", "sft-llama-70b", "dpo-mistral", "twin"}
    assert world.ids["sft"] in rows["sft-llama-8b"]
    assert re.search(r"\$2\.25 of \$50\.00\s+\$1\.00\s+team-a\s", rows["sft-llama-8b"])
    assert re.search(r"running\s+2\s+24\s", rows["sft-llama-8b"])
    assert "opened (no attempt yet)" in rows["sft-llama-70b"]
    assert re.search(r"done\s+1\s+1\s+\$0\.00 of no cap\s+-\s+-\s", rows["dpo-mistral"])
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", rows["dpo-mistral"])
    # Filters: status, part of the name (any case), account.
    assert [line.split()[1] for line in out(world, "runs", "list", "--status", "done").splitlines()[2:]] == [
        "dpo-mistral"
    ]
    named = out(world, "runs", "list", "--name", "LLAMA").splitlines()[2:]
    assert sorted(line.split()[1] for line in named) == ["sft-llama-70b", "sft-llama-8b"]
    assert [line.split()[1] for line in out(world, "runs", "list", "--account", "team-a").splitlines()[2:]] == [
        "sft-llama-8b"
    ]
    assert "(more runs: --limit 4)" in out(world, "runs", "list", "--limit", "2")
    as_json = json.loads(out(world, "runs", "list", "--json"))
    by_name = {run["name"]: run for run in as_json if run["name"] != "twin"}
    assert by_name["sft-llama-8b"]["committed_usd_micro"] == 2_250_000
    assert by_name["sft-llama-8b"]["pending_usd_micro"] == 1_000_000
    assert by_name["sft-llama-8b"]["cap_usd_micro"] == 50_000_000
    assert by_name["sft-llama-8b"]["last_step"] == 24


def test_runs_list_spend_counts_what_the_ledger_presumed_spent(world: World) -> None:
    with LedgerClient(world.address, principal="alice") as client:
        opened = client.open_run(run_key=run_key({"presumed": 1}), name="presumed-run", cap_usd_micro=10_000_000)
        run_id = opened.state.run.run_id
        client.start_attempt(run_id=run_id, attempt_id="a1", lease_s=60)
        line = {"token_class": "train", "tokens": 4_000_000, "usd_micro_per_million_tokens": 1_000_000}
        basis = {"price_sheet": "test-tokens", "price_source": "https://example.com/t", "tokens": [line]}
        client.reserve(account=run_id, amount_usd_micro=4_000_000, reservation_id="t-1", basis=basis, attempt=1)
        second = client.start_attempt(run_id=run_id, attempt_id="a2")
        # The views have read the settlement before the CLI asks.
        assert client.get_run_state(run_id=run_id, min_position=second.position).spend.presumed_usd_micro == 4_000_000
    [row] = out(world, "runs", "list", "--name", "presumed-run", "--wide").splitlines()[2:]
    assert re.search(r"\$4\.00 of \$10\.00 \(\$4\.00 presumed\)", row), row
    [listed] = json.loads(out(world, "runs", "list", "--name", "presumed-run", "--json"))
    shown = out(world, "runs", "show", "presumed-run")
    assert "presumed:  charged by the ledger for holds nobody settled, pro rata or as reserved" in shown, shown
    assert (listed["committed_usd_micro"], listed["presumed_usd_micro"]) == (0, 4_000_000)


def test_runs_show_has_the_spec_metrics_checkpoints_attempts_and_last_steps(world: World) -> None:
    shown = out(world, "runs", "show", "sft-llama-8b", "--steps", "3")
    for expected in (
        f"run:       {world.ids['sft']}",
        "name:      sft-llama-8b",
        "status:    running (attempt 2)",
        "last step: 24",
        "resume:    from step 24 (s3://ck/sft/24)",
        "spend:     $2.25 committed, $1.00 pending, cap $50.00, remaining $46.75",
        "  base_model: meta-llama/Llama-3.1-8B",
        "  lora.alpha: 32",
        "  lora.r: 16",
        "  lr: 0.0001",
        "  method: sft",
    ):
        assert expected in shown, expected
    metrics = _section(shown, "metrics")
    assert metrics[0].split() == ["METRIC", "STEPS", "FIRST", "STEP", "LAST", "STEP", "LAST", "MIN", "MAX"]
    # The live line: attempt 1's steps 0-9, attempt 2's 10-24; eval_loss only at step 9 survives.
    assert metrics[2].split() == ["eval_loss", "1", "9", "9", "1.5", "1.5", "1.5"]
    assert metrics[3].split() == ["loss", "25", "0", "24", "0.125", "0.125", "2"]
    checkpoints = _section(shown, "checkpoints")
    assert [line.split()[:2] for line in checkpoints[2:]] == [["9", "1"], ["14", "1"], ["24", "2"]]
    assert "superseded" in checkpoints[3] and "superseded" not in checkpoints[2]
    assert "live (resume)" in checkpoints[4] and "s3://ck/sft/24" in checkpoints[4]
    attempts = _section(shown, "attempts")
    assert [line.split()[:2] for line in attempts[2:]] == [["1", "host-1"], ["2", "host-2"]]
    assert "9" in attempts[3].split()[5:]  # attempt 2 resumed from step 9
    steps = _section(shown, "last 3 steps")
    # eval_loss has no value in the last steps: its column is hidden; no cost was recorded per step.
    assert steps[0].split() == ["STEP", "ATTEMPT", "TOKENS", "loss"]
    assert [line.split() for line in steps[2:]] == [
        ["22", "2", "1000", "0.25"],
        ["23", "2", "1000", "0.1875"],
        ["24", "2", "1000", "0.125"],
    ]
    as_json = json.loads(out(world, "runs", "show", "sft-llama-8b", "--json"))
    assert as_json["state"]["run"]["spec"] == SPEC
    assert [c["step"] for c in as_json["checkpoints"]] == [9, 14, 24]
    assert [c["superseded"] for c in as_json["checkpoints"]] == [False, True, False]
    assert {m["name"]: m["count"] for m in as_json["metrics"]} == {"eval_loss": 1, "loss": 25}
    assert as_json["series"]["steps"] == list(range(15, 25))


def test_a_run_opened_with_no_attempt_is_not_running(world: World) -> None:
    shown = out(world, "runs", "show", "70b")
    assert "status:    opened (no attempt yet)" in shown
    assert "running" not in shown
    assert "(no attempt yet)" in _section(shown, "attempts")[0]


def test_runs_are_named_by_id_prefix_name_or_part_of_a_name(world: World) -> None:
    sft = world.ids["sft"]
    for ref in (sft, sft[:8], sft[:4], "sft-llama-8b", "8B", "key-sft"):
        assert f"run:       {sft}" in out(world, "runs", "show", ref, "--steps", "0"), ref
    done = out(world, "runs", "show", "MISTRAL", "--steps", "0")
    assert "status:    done" in done and "  reward: 0.75" in _section(done, "summary")


def test_an_ambiguous_run_lists_the_candidates(world: World) -> None:
    twins = cli(world, "runs", "show", "twin", status=1).stderr
    assert twins.startswith("trainledger: twin is ambiguous: 2 runs of that name:")
    assert world.ids["twin-1"] in twins and world.ids["twin-2"] in twins
    assert len(twins.strip().splitlines()) == 1
    llamas = cli(world, "runs", "show", "sft-llama", status=1).stderr
    assert "2 runs whose name holds it" in llamas
    assert world.ids["sft"] in llamas and world.ids["70b"] in llamas


def test_an_unknown_run_is_one_line(world: World) -> None:
    assert cli(world, "runs", "show", "nothing-like-it", status=1).stderr == "trainledger: no run nothing-like-it\n"
    assert cli(world, "spend", "show", "nothing-like-it", status=1).stderr == (
        "trainledger: no account or run nothing-like-it\n"
    )


def test_spend_show_pages_the_reservations(world: World) -> None:
    shown = out(world, "spend", "show", "sft-llama-8b")
    for expected in (
        f"account:   {world.ids['sft']}",
        "parent:    team-a",
        "cap:       $50.00",
        "committed: $2.25",
        "pending:   $1.00",
        "remaining: $46.75",
    ):
        assert expected in shown, expected
    rows = [line.split() for line in shown.splitlines() if line.startswith("call-")]
    assert [row[:6] for row in rows] == [
        ["call-1", "reservation", "committed", "$2.50", "$2.25", "$0.00"],
        ["call-2", "reservation", "pending", "$1.00", "$0.00", "$0.00"],
    ]
    first = out(world, "spend", "show", "sft-llama-8b", "--limit", "1")
    assert [line.split()[0] for line in first.splitlines() if line.startswith("call-")] == ["call-1"]
    hint = first.strip().splitlines()[-1]
    match = re.fullmatch(r"\(more reservations: trainledger spend show sft-llama-8b --page (\S+)\)", hint)
    assert match, hint
    second = out(world, "spend", "show", "sft-llama-8b", "--limit", "1", "--page", match.group(1))
    assert [line.split()[0] for line in second.splitlines() if line.startswith("call-")] == ["call-2"]
    assert "more reservations" not in second
    team = json.loads(out(world, "spend", "show", "team-a", "--json"))
    assert team["account"]["cap_usd_micro"] == 100_000_000 and team["reservations"] == []


def test_spend_cap_sets_and_lifts_a_cap(world: World) -> None:
    set_to = out(world, "spend", "cap", "team-a", "25")
    assert set_to.startswith("account team-a: cap $25.00, $2.25 committed, $1.00 pending, remaining $21.75")
    out(world, "spend", "cap", "team-a", "12.50")
    assert "cap:       $12.50" in out(world, "spend", "show", "team-a")
    lifted = out(world, "spend", "cap", "team-a", "none")
    assert lifted.startswith("account team-a: cap none,")
    assert json.loads(out(world, "spend", "show", "team-a", "--json"))["account"]["cap_usd_micro"] is None
    bad = cli(world, "spend", "cap", "team-a", "lots", status=2).stderr
    assert bad.startswith("trainledger: not an amount: 'lots'")
    for hostile in ("1e999999", "\u0661\u0662", "1_0"):  # Only ASCII decimals are money.
        bad = cli(world, "spend", "cap", "team-a", hostile, status=2).stderr
        assert bad.startswith(f"trainledger: not an amount: {hostile!r}") and "Traceback" not in bad
    # Below what is committed and held: the server's refusal, on one line with its reason.
    refused = cli(world, "spend", "cap", "sft-llama-8b", "1", status=1).stderr
    assert len(refused.strip().splitlines()) == 1 and refused.rstrip().endswith(")")
    run = f"run sft-llama-8b ({world.ids['sft']})"
    assert f"cap $1.00 of {run} is below the $3.25 already committed and held" in refused
    # A run's cap by the run's name: the run is named by its name with its id after.
    assert out(world, "spend", "cap", "sft-llama-8b", "60").startswith(f"{run}: cap $60.00, $2.25 committed,")
    out(world, "spend", "cap", "sft-llama-8b", "50")
    out(world, "spend", "cap", "team-a", "100")


def test_registry_list_show_promote_and_rollback(world: World) -> None:
    listed = out(world, "registry", "list").splitlines()
    assert listed[0].split() == ["FAMILY", "CURRENT", "VERSIONS", "RETIRED"]
    assert listed[2].split() == ["llama-sft", "1", "2", "-"]
    shown = out(world, "registry", "show", "llama-sft")
    assert "current: 1" in shown and "s3://models/llama-sft/2" in shown
    history = _section(shown, "history")
    assert "promote" in history[2] and "alice" in history[2] and "passed: eval ok (win_rate=0.61)" in history[2]
    # A gate that failed is refused, and so is a compare-and-set on a version no longer current.
    failed = cli(world, "registry", "promote", "llama-sft", "2", "--failed", "--reason", "worse", status=1).stderr
    assert "GATE_NOT_PASSED" in failed
    moved = cli(
        world,
        "registry",
        "promote",
        "llama-sft",
        "2",
        "--passed",
        "--reason",
        "ok",
        "--expected-current",
        "2",
        status=1,
    ).stderr
    assert "CURRENT_VERSION_MOVED" in moved
    promoted = out(
        world, "registry", "promote", "llama-sft", "2", "--passed", "--reason", "better", "--stat", "win_rate=0.7"
    )
    assert promoted.startswith("llama-sft: promoted to version 2 (was 1) at position ")
    # With no version, a rollback goes back to the earlier version current most recently.
    back = out(world, "registry", "rollback", "llama-sft", "--reason", "regression")
    assert back.startswith("llama-sft: rolled back to version 1 (was 2)")
    gate = world.elsewhere / "gate.json"
    gate.write_text(json.dumps({"passed": True, "reason": "from a file", "stats": {"win_rate": 0.72}}))
    again = out(world, "registry", "promote", "llama-sft", "2", "--gate-json", "gate.json", "--expected-current", "1")
    assert again.startswith("llama-sft: promoted to version 2 (was 1)")
    assert "llama-sft: rolled back to version 1 (was 2)" in out(
        world, "registry", "rollback", "llama-sft", "1", "--reason", "again", "--expected-current", "2"
    )
    final = json.loads(out(world, "registry", "show", "llama-sft", "--json"))
    assert final["current"] == 1
    # The two refusals are recorded in the history, each with its reason; neither moved the current version.
    assert [(p["kind"], p["version"], p["principal"], p["refusal"]) for p in final["history"]] == [
        ("promote", 1, "alice", ""),
        ("refused", 2, "bob", "GATE_NOT_PASSED"),
        ("refused", 2, "bob", "CURRENT_VERSION_MOVED"),
        ("promote", 2, "bob", ""),
        ("rollback", 1, "bob", ""),
        ("promote", 2, "bob", ""),
        ("rollback", 1, "bob", ""),
    ]
    assert "passed: from a file (win_rate=0.72)" in _section(out(world, "registry", "show", "llama-sft"), "history")[7]
    # With no version, a rollback goes back to the previous current, here forward to version 2.
    forward = out(world, "registry", "rollback", "llama-sft", "--reason", "v2 was fine after all")
    assert forward.startswith("llama-sft: rolled back to version 2 (was 1)")


def test_events_export_through_the_server(world: World) -> None:
    lines = out(world, "events", "export", "--from", "2").splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["position"] for e in events] == list(range(2, 2 + len(events))) and len(events) > 20
    assert all(len(e["digest"]) == 64 for e in events)


def test_version_and_help(world: World) -> None:
    shown = out(world, "--version").strip()
    assert shown == f"trainledger {version('trainledger')} (ledger schema version {SCHEMA_VERSION})"
    assert "watch" in out(world, "--help")


def test_tables_fit_the_terminal_unless_wide(world: World) -> None:
    fitted = out(world, "runs", "list", COLUMNS="80")
    assert max(len(line) for line in fitted.splitlines()) <= 80
    assert "…" in fitted and world.ids["sft"] not in fitted
    assert "$2.25 of $50.00" in fitted  # amounts are never cut
    wide = out(world, "runs", "list", "--wide", COLUMNS="80")
    assert "…" not in wide and world.ids["sft"] in wide and max(len(line) for line in wide.splitlines()) > 80
    # A run id cut in a table is still a prefix that names the run.
    cut = next(line for line in fitted.splitlines() if "$2.25 of $50.00" in line).split()[0].rstrip("…")
    assert f"run:       {world.ids['sft']}" in out(world, "runs", "show", cut, "--steps", "0")


def test_a_server_that_does_not_answer_is_one_line_and_status_2(world: World) -> None:
    for args in (["runs", "show", "x"], ["spend", "cap", "a", "1"]):
        done = cli(world, *args, "--address", "127.0.0.1:9", status=2)
        assert done.stdout == ""
        line = done.stderr.strip()
        assert len(line.splitlines()) == 1 and line.startswith("trainledger: no ledger answers at 127.0.0.1:9")
        assert "--db PATH" in line


def test_offline_inspection_of_the_database_prints_what_the_server_prints(world: World) -> None:
    for args in (["runs", "list"], ["runs", "show", "sft-llama-8b"], ["registry", "show", "llama-sft"]):
        through_server = out(world, *args)
        offline = out(world, *args, "--db", str(world.database))
        assert offline == through_server, args
    assert cli(world, "runs", "show", "twin", "--db", str(world.database), status=1).stderr.startswith(
        "trainledger: twin is ambiguous: 2 runs of that name:"
    )


def _section(text: str, title: str) -> list[str]:
    """The lines under a section's title, up to the blank line that ends it."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_list_checkpoints_pages_in_step_order(world: World) -> None:
    from clients import InvalidArgument, NotFound

    with LedgerClient(world.address) as client:
        first = client.list_checkpoints(run_id=world.ids["sft"], page_size=2)
        assert [(c.step, c.attempt, c.superseded) for c in first.checkpoints] == [(9, 1, False), (14, 1, True)]
        assert first.checkpoints[0].handle is not None and first.checkpoints[0].handle.uri == "s3://ck/sft/9"
        second = client.list_checkpoints(run_id=world.ids["sft"], page_size=2, page_token=first.next_page_token)
        assert [(c.step, c.attempt) for c in second.checkpoints] == [(24, 2)] and second.next_page_token == ""
        assert client.list_checkpoints(run_id=world.ids["70b"]).checkpoints == []
        with pytest.raises(NotFound) as unknown:
            client.list_checkpoints(run_id="00000000-0000-0000-0000-000000000000")
        assert unknown.value.reason == "RUN_NOT_FOUND"
        with pytest.raises(InvalidArgument) as bad:
            client.list_checkpoints(run_id=world.ids["sft"], page_token="bm90IGEgdG9rZW4")
        assert bad.value.reason == "INVALID_PAGE_TOKEN"


def test_get_metrics_pages_by_name(world: World) -> None:
    import grpc

    from trainledger.v1 import runs_pb2, runs_pb2_grpc

    with grpc.insecure_channel(world.address) as channel:
        stub = runs_pb2_grpc.RunsStub(channel)
        first = stub.GetMetrics(runs_pb2.GetMetricsRequest(run_id=world.ids["sft"], page_size=1))
        assert [m.name for m in first.metrics] == ["eval_loss"] and first.next_page_token
        second = stub.GetMetrics(
            runs_pb2.GetMetricsRequest(run_id=world.ids["sft"], page_size=1, page_token=first.next_page_token)
        )
        assert [m.name for m in second.metrics] == ["loss"] and second.next_page_token == ""
    with LedgerClient(world.address) as client:
        metrics = client.get_metrics(run_id=world.ids["sft"])
    # The live line: attempt 1's steps 0..9, then attempt 2's 10..24.
    assert [(m.name, m.count, m.first_step, m.last_step, m.last) for m in metrics] == [
        ("eval_loss", 1, 9, 9, 1.5),
        ("loss", 25, 0, 24, 0.125),
    ]
