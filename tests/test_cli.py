"""The `trainledger` command: `serve` as a real process, and the read commands against a database
with data (tables for people, --json for machines)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ledger import Ledger
from services.cli import main

REPO = Path(__file__).resolve().parents[1]


def trainledger() -> list[str]:
    script = Path(sys.executable).parent / "trainledger"
    return [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]


@pytest.mark.subprocess
def test_serve_answers_health_and_stops_on_sigterm(tmp_path: Path) -> None:
    database = tmp_path / "served.db"
    process = subprocess.Popen(
        [*trainledger(), "serve", "--db", str(database), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"serving on 127\.0\.0\.1:(\d+)", line)
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        with grpc.insecure_channel(f"127.0.0.1:{match.group(1)}") as channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        assert database.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


@pytest.mark.subprocess
def test_serve_with_a_database_it_cannot_open_is_one_line_and_status_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [*trainledger(), "serve", "--db", str(tmp_path / "missing" / "dir" / "x.db"), "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("trainledger: cannot open database")


@pytest.mark.subprocess
def test_projection_workers_need_postgresql_one_line_and_status_2(tmp_path: Path) -> None:
    database = tmp_path / "x.db"
    for args in (["serve", "--no-project", "--listen", "127.0.0.1:0"], ["project"]):
        done = subprocess.run(
            [*trainledger(), *args, "--db", str(database)],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if k != "TRAINLEDGER_DATABASE_URL"},
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert "PostgreSQL" in done.stderr
    assert not database.exists()


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "data.db")
    ledger = Ledger.open(path)
    run = ledger.open_run(run_key="demo-key", name="demo", spec={"lr": 0.0001}, cap_usd_micro=5_000_000)
    ledger.start_attempt(run_id=run.run_id, attempt_id="a1", label="host-1")
    ledger.append_steps(
        run_id=run.run_id,
        attempt=1,
        steps=list(range(30)),
        tokens=[128] * 30,
        metrics={"loss": [1 / (s + 1) for s in range(30)], "eval_loss": {"values": [0.25], "index": [29]}},
    )
    ledger.save_checkpoint(run_id=run.run_id, attempt=1, step=29, backend="local", uri="file:///ck/29")
    ledger.close()
    # A checkpoint whose handle has expired since it was saved (a save already past is refused).
    earlier = Ledger.open(path, clock=lambda: datetime.now(UTC) - timedelta(hours=2))
    earlier.save_checkpoint(
        run_id=run.run_id,
        attempt=1,
        step=9,
        backend="tinker",
        uri="tinker://ck/9",
        expires_at=datetime.now(UTC) - timedelta(hours=1),
    )
    earlier.close()
    ledger = Ledger.open(path)

    def sampled(tokens: int) -> dict[str, object]:  # $1.50 per million sampled tokens.
        return {
            "price_sheet": "sheet-7",
            "tokens": [{"token_class": "sample", "tokens": tokens, "usd_micro_per_million_tokens": 1_500_000}],
        }

    # 1,000 tokens estimated ($0.0015); 1,133 sampled, $0.0016995 rounded up to $0.0017.
    ledger.reserve(account=run.run_id, reservation_id="call-1", amount_usd_micro=1_500, basis=sampled(1_000))
    ledger.commit(account=run.run_id, reservation_id="call-1", actual_usd_micro=1_700, basis=sampled(1_133))
    ledger.reserve(account=run.run_id, reservation_id="call-2", amount_usd_micro=2_000)
    ledger.register(
        family="tiny", artifact_uri="s3://models/1", digest="d" * 64, source_run_id=run.run_id, source_step=29
    )
    ledger.promote(family="tiny", version=1, expected_current=0, verdict={"passed": True, "reason": "eval ok"})
    ledger.close()
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_runs_list_and_show(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = run_cli(capsys, "runs", "list", "--db", database)
    header, rule, row = listed.splitlines()
    assert header.split() == ["RUN", "NAME", "STATUS", "ATTEMPT", "LAST", "STEP", "SPEND", "HELD", "OPENED"]
    assert set(rule.replace(" ", "")) == {"-"} and "demo" in row and "$0.0017 of $5.00" in row
    assert "$0.002" in row and row.rstrip().endswith(" UTC")
    assert header.index("NAME") == row.index("demo")  # aligned columns
    shown = run_cli(capsys, "runs", "show", "demo-key", "--db", database)
    for expected in (
        "status:    running (attempt 1)",
        "from step 29 (file:///ck/29)",
        "host-1",
        "tinker://ck/9",
        "expired",
        "eval_loss",
        "0.25",
        "  lr: 0.0001",
    ):
        assert expected in shown
    # Named by its name, a part of it or an id prefix, as through a server.
    assert run_cli(capsys, "runs", "show", "DEM", "--db", database) == shown
    as_json = json.loads(run_cli(capsys, "runs", "show", "demo", "--db", database, "--json"))
    assert run_cli(capsys, "runs", "show", as_json["state"]["run"]["run_id"][:6], "--db", database) == shown
    assert [c["step"] for c in as_json["checkpoints"]] == [9, 29]
    assert {m["name"]: (m["count"], m["last"]) for m in as_json["metrics"]} == {
        "eval_loss": (1, 0.25),
        "loss": (30, 1 / 30),
    }
    as_json = json.loads(run_cli(capsys, "runs", "show", "demo-key", "--db", database, "--json"))
    assert as_json["state"]["last_step"] == 29 and as_json["series"]["steps"][-1] == 29
    runs = json.loads(run_cli(capsys, "runs", "list", "--db", database, "--json"))
    assert [r["name"] for r in runs] == ["demo"]


def test_spend_show(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    shown = run_cli(capsys, "spend", "show", "demo-key", "--db", database)
    first = run_cli(capsys, "spend", "show", "demo", "--db", database, "--limit", "1")
    assert "call-1" in first and "call-2" not in first
    hint = first.strip().splitlines()[-1]
    assert hint.startswith("(more reservations: trainledger spend show demo --db ... --page ")
    second = run_cli(capsys, "spend", "show", "demo", "--db", database, "--limit", "1", "--page", hint.split()[-1][:-1])
    assert "call-2" in second and "call-1" not in second and "more reservations" not in second
    for expected in (
        "cap:       $5.00",
        "committed: $0.0017",
        "pending:   $0.002",
        "overrun:   $0.0002",
        "call-1",
        "committed",
        "1,133 sample @ $1.50/M [sheet-7]",  # The usage committed, not the estimate.
        "call-2",
        "pending",
    ):
        assert expected in shown
    as_json = json.loads(run_cli(capsys, "spend", "show", "demo-key", "--db", database, "--json"))
    assert as_json["account"]["remaining_usd_micro"] == 5_000_000 - 1_700 - 2_000
    assert [(r["reservation_id"], r["state"]) for r in as_json["reservations"]] == [
        ("call-1", "committed"),
        ("call-2", "pending"),
    ]


def test_registry_events_and_rebuild(database: str, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    assert run_cli(capsys, "registry", "list", "--db", database).splitlines()[2].split() == ["tiny", "1", "1", "-"]
    shown = run_cli(capsys, "registry", "show", "tiny", "--db", database)
    assert "s3://models/1" in shown and "promote" in shown and "passed: eval ok" in shown
    assert json.loads(run_cli(capsys, "registry", "show", "tiny", "--db", database, "--json"))["current"] == 1
    lines = run_cli(capsys, "events", "export", "--from", "3", "--db", database).splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["position"] for e in events] == list(range(3, 3 + len(events))) and len(events) > 5
    assert run_cli(capsys, "rebuild", "--db", database).startswith("rebuilt every view from")
    # The environment's database URL stands in for a --db not given; a flag given beats it.
    monkeypatch.setenv("TRAINLEDGER_DATABASE_URL", database)
    assert "demo" in run_cli(capsys, "runs", "list")
    assert run_cli(capsys, "verify").startswith("OK: ")
    missing = os.devnull + ".missing"
    for command in (["runs", "list"], ["verify"], ["rebuild"]):
        assert main([*command, "--db", missing]) == 2, command
        assert capsys.readouterr().err == f"trainledger: no database at {missing}\n", command


def test_events_export_streams_pages_bounded_by_bytes(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "wide.db")
    ledger = Ledger.open(path)
    run_id = ledger.open_run(run_key="wide", name="wide").run_id
    ledger.start_attempt(run_id=run_id, attempt_id="a1")
    for n in range(12):  # Step batches of about 1.1 MB stored, 5 MB decoded, each.
        ledger.append_steps(
            run_id=run_id,
            attempt=1,
            steps=list(range(n * 10_000, (n + 1) * 10_000)),
            metrics={f"m{m}": [m + 0.5] * 10_000 for m in range(12)},
        )
    head = ledger.head()
    ledger.close()
    capfd.readouterr()
    tracemalloc.start()
    try:
        assert main(["events", "export", "--db", path]) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = capfd.readouterr().out.splitlines()
    assert [json.loads(line)["position"] for line in lines] == list(range(1, head + 1))
    # Over 12 MB of events stored (60 MB decoded) went out; the export held a page at a time.
    assert peak < 24 * 1024 * 1024, f"peak {peak / 2**20:.0f} MB"


def test_the_version_and_an_unknown_run(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert re.fullmatch(r"trainledger \d+\.\d+\S* \(ledger schema version \d+\)\n", capsys.readouterr().out)
    assert main(["runs", "show", "nothing", "--db", database]) == 1
    assert capsys.readouterr().err == "trainledger: no run nothing\n"


def test_run_keys_name_runs_without_loading_the_ledger() -> None:
    from ledger.domain.base import NAMESPACE
    from services.cli.naming import RUN_ID_NAMESPACE

    assert RUN_ID_NAMESPACE == str(NAMESPACE)


def test_a_missing_database_is_reported_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing.db"
    assert main(["runs", "list", "--db", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == f"trainledger: no database at {missing}"
    assert not missing.exists()


def test_tables_fit_a_width_cutting_text_never_amounts_or_times() -> None:
    from services.render.tables import fit_to, table, usd, when

    moment = datetime(2026, 12, 1, 6, 55, 2, tzinfo=UTC)
    rows = [("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "a-rather-long-run-name", usd(12_345_678), when(moment), 7)]
    headers = ["RUN", "NAME", "SPEND", "AT", "N"]
    try:
        fit_to(60)
        fitted = table(headers, rows).splitlines()
        assert max(len(line) for line in fitted) <= 60
        assert fitted[2].split() == ["0f1e2d3c…", "a-rather…", "$12.345678", "2026-12-01", "06:55:02", "UTC", "7"]
        # Optional columns go, in the order given, before any column but those cut first is cut.
        fit_to(60)
        kept = table(headers, rows, optional=(3, 4), first=(0,)).splitlines()
        assert kept[0].split() == ["RUN", "NAME", "SPEND", "N"] and max(len(line) for line in kept) == 60
        assert kept[2].split() == ["0f1e2d3c-4b5a-6978-8…", "a-rather-long-run-name", "$12.345678", "7"]
        fit_to(40)
        assert table(headers, rows, optional=(3, 4)).splitlines()[0].split() == ["RUN", "NAME", "SPEND"]
        # A column cut first gives way before the widest one.
        fit_to(60)
        assert table(headers, rows, first=(0,)).splitlines()[2].split()[:2] == ["0f1e2d3…", "a-rather-…"]
    finally:
        fit_to(None)
    whole = table(headers, rows).splitlines()[2]
    assert "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0  a-rather-long-run-name  $12.345678" in whole


@pytest.mark.subprocess
@pytest.mark.parametrize("command", [["serve", "--listen", "127.0.0.1:0", "--no-http"], ["project"], ["runs", "list"]])
def test_postgresql_without_psycopg_names_the_extra_in_one_line(command: list[str]) -> None:
    """An install without the [postgres] extra: psycopg cannot be imported (held off here), and a
    PostgreSQL URL is refused in one line saying what to install."""
    program = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "from services.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *command, "--database-url", "postgresql://u:secret@127.0.0.1:1/ledger"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "pip install -e '.[postgres]'" in done.stderr
    assert "secret" not in done.stderr


def test_checkpoints_list_on_the_database_file(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The retention plan read offline: the expired Tinker handle at step 9 is shown as expired,
    step 29 is kept as the resume point and as the source of the registered version "tiny" 1;
    nothing is offered for deletion."""
    listed = run_cli(capsys, "checkpoints", "list", "demo", "--db", database).splitlines()
    assert listed[0].split() == ["STEP", "ATTEMPT", "BACKEND", "URI", "SAVED", "PLAN"]
    plan = {int(line.split()[0]): re.split(r"\s{2,}", line.strip())[-1] for line in listed[2:]}
    assert plan == {9: "keep: expired", 29: "keep: resume, registered"}
    as_json = json.loads(run_cli(capsys, "checkpoints", "list", "demo", "--db", database, "--json"))
    assert [(e["checkpoint"]["step"], e["delete"], e["kept_because"]) for e in as_json["entries"]] == [
        (9, False, ["expired"]),
        (29, False, ["resume", "registered"]),
    ]


@pytest.mark.parametrize(
    ("report", "verdict"),
    [
        ({}, None),
        ({"rows": 10}, None),
        ({"gate": "passed"}, "passed"),
        ({"gate": {"passed": False, "reason": "loss mask empty"}}, "failed"),
        ({"gate": {"verdict": "warn"}}, "warn"),
        ({"verdict": "failed"}, "failed"),
        ({"passed": True}, "passed"),
    ],
)
def test_a_dataset_reports_verdict(report: dict[str, object], verdict: str | None) -> None:
    from services.render.runs import report_verdict

    assert report_verdict(report) == verdict


@pytest.mark.parametrize("text", ["run-1", "run-1@", "@12", "run-1:x", "run-1@-3"])
def test_register_from_checkpoint_takes_run_and_step(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["registry", "register", "fam", "s3://m/1", "--digest", "sha256:" + "ab" * 32]
    assert main([*argv, "--from-checkpoint", text, "--address", "127.0.0.1:1"]) == 2
    assert "--from-checkpoint takes RUN@STEP or RUN:STEP" in capsys.readouterr().err


def test_progress_reads_step_of_plan_rate_and_eta() -> None:
    from clients.models import Progress
    from services.render.runs import progress_text

    eta = datetime(2026, 12, 1, 7, 10, tzinfo=UTC)
    running = Progress(max_steps=1_000, step=400, fraction=0.4, steps_per_second=12.5, eta=eta)
    assert progress_text(running) == "step 400 of 1,000 (40.0%), 12.50 steps/s, ETA 2026-12-01 07:10:00 UTC"
    # A finished run keeps its step against the plan; the rate it last had is no longer news.
    done = Progress(max_steps=1_000, step=999, fraction=0.999, steps_per_second=12.5)
    assert progress_text(done, running=False) == "step 999 of 1,000 (99.9%)"
    assert progress_text(Progress(step=7, steps_per_second=2.0)) == "step 7, 2.00 steps/s"


def test_runs_show_and_watch_read_the_eta_alike() -> None:
    """`runs show` (an ETA the ledger computed) and `watch` (seconds left at the recent rate)
    print one form: the time left, then the time of day it falls at."""
    from clients.models import Progress
    from services.render.runs import eta_text, progress_text

    now = datetime(2026, 12, 1, 6, 55, 30, tzinfo=UTC)
    eta = datetime(2026, 12, 1, 7, 10, tzinfo=UTC)
    running = Progress(max_steps=1_000, step=400, fraction=0.4, steps_per_second=12.5, eta=eta)
    assert progress_text(running, now=now) == "step 400 of 1,000 (40.0%), 12.50 steps/s, ETA 14m 30s (07:10 UTC)"
    assert eta_text(870.0, now) == "14m 30s (07:10 UTC)"
    assert eta_text(45.0, now) == "45s (06:56 UTC)"
    assert eta_text(3 * 3_600 + 5 * 60, now) == "3h 05m (10:00 UTC)"
    assert eta_text(2 * 86_400 + 3 * 3_600 + 59, now) == "2d 3h (2026-12-03 09:56 UTC)"
    assert eta_text(0.0, now) == "0s (06:55 UTC)"
    assert progress_text(Progress(max_steps=50)) == "no step yet (50 planned)"
    assert progress_text(Progress()) is None


def test_serve_refuses_metrics_with_no_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--metrics serves what --no-metrics turns off: refused at start in one line, nothing served."""
    database = tmp_path / "ledger.db"
    listen = ["--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"]
    assert main(["serve", "--db", str(database), *listen, "--no-metrics"]) == 2
    assert capsys.readouterr().err == (
        "trainledger: --metrics serves the counters --no-metrics turns off: give one or the other\n"
    )
    assert not database.exists()


def test_a_metrics_port_in_use_names_the_metrics_listener(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        argv = ["serve", "--db", str(tmp_path / "ledger.db"), "--listen", "127.0.0.1:0", "--no-http"]
        assert main([*argv, "--metrics", address]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"trainledger: cannot serve /metrics (--metrics) on {address}: "), error
    assert error.count("\n") == 1


def test_runs_show_tells_when_an_attempt_was_last_seen_and_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "lost.db")
    started = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    earlier = Ledger.open(path, clock=lambda: started)
    run = earlier.open_run(run_key="lost-key", name="lost")
    earlier.start_attempt(run_id=run.run_id, attempt_id="a1", lease_s=60)
    earlier.close()
    later = Ledger.open(path, clock=lambda: started + timedelta(minutes=5))
    assert later.sweep_leases() == 1
    later.close()
    shown = run_cli(capsys, "runs", "show", "lost-key", "--db", path)
    attempts = shown.split("attempts\n")[1].split("\n\n")[0].splitlines()
    assert attempts[0].split() == ["ATTEMPT", "LABEL", "STARTED", "RESUMED", "FROM", "ENDED", "LAST", "SEEN", "LOST"]
    assert "2026-01-05 10:00:00 UTC" in attempts[2] and "2026-01-05 10:05:00 UTC" in attempts[2]


def test_registry_show_lists_alias_moves_and_the_retirement_with_who(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "registry.db")
    ledger = Ledger.open(path)
    ledger.register(family="fam", artifact_uri="s3://m/1", digest="e" * 64)
    ledger.promote(
        family="fam", version=1, expected_current=0, verdict={"passed": True, "reason": "eval ok"}, principal="alice"
    )
    ledger.move_alias(family="fam", alias="production", version=1, expected_version=0, principal="carol")
    ledger.retire_family(family="fam", reason="replaced by fam-2", principal="dave")
    ledger.close()
    history = run_cli(capsys, "registry", "show", "fam", "--db", path).split("history\n")[1].splitlines()
    assert [row.split()[3:5] for row in history[2:]] == [["promote", "1"], ["alias", "1"], ["retire", "-"]]
    assert "alice" in history[2] and "carol" in history[3] and "production" in history[3]
    assert "dave" in history[4] and "replaced by fam-2" in history[4]
