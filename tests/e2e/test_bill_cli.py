"""`trainledger spend pull --file` and `spend reconcile` against a serving ledger, run as a user runs
them: a `trainledger serve` process, the CLI from another directory, the address given."""

from __future__ import annotations

import json
import subprocess
from datetime import date, timedelta
from pathlib import Path

import grpc
import pytest

from tests.e2e.test_serve_guards import Servers, environment, trainledger
from trainledger.v1 import runs_pb2, runs_pb2_grpc, spend_pb2, spend_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]


def cli(directory: Path, *args: str, status: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*trainledger(), *args], capture_output=True, text=True, cwd=directory, env=environment(), timeout=60
    )
    assert done.returncode == status, (args, done.stdout, done.stderr)
    return done


def test_a_bill_file_is_pulled_reconciled_and_adjusted_through_the_server(tmp_path: Path) -> None:
    servers = Servers(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    try:
        _, address = servers.start(tmp_path / "ledger.db")
        channel = grpc.insecure_channel(address)
        runs, spend = runs_pb2_grpc.RunsStub(channel), spend_pb2_grpc.SpendStub(channel)
        run_id = runs.OpenRun(runs_pb2.OpenRunRequest(run_key="billed", name="sft"), timeout=10).state.run.run_id
        spend.Charge(
            spend_pb2.ChargeRequest(account=run_id, charge_id="gpu", amount_usd_micro=2_000_000, reason="GPU hours"),
            timeout=10,
        )
        bill = elsewhere / "bill.csv"
        start, end = (date.today() - timedelta(days=1)).isoformat(), (date.today() + timedelta(days=30)).isoformat()
        # The run billed 7% above its $2.00 estimate, and a line no run accounts for. The bill
        # covers the hours up to the end of its last line (in 30 days), so the estimate is covered.
        bill.write_text(
            "line_id,interval_start,interval_end,amount,run_id,description\n"
            f"gpu-1,{start},{end},2.14,{run_id},GPU hours\n"
            f"disk-1,{start},{end},0.50,,volume storage\n"
        )
        pulled = cli(elsewhere, "spend", "pull", "--file", "bill.csv", "--provider", "acme", "--address", address)
        assert pulled.stdout.strip().startswith("acme: 2 lines in 1 requests: 2 recorded, 0 restated, 0 unchanged")
        again = cli(elsewhere, "spend", "pull", "--file", "bill.csv", "--provider", "acme", "--address", address)
        assert "0 recorded, 0 restated, 2 unchanged" in again.stdout

        report = json.loads(cli(elsewhere, "spend", "reconcile", "--json", "--address", address).stdout)
        (row,) = report["runs"]
        assert (row["run_id"], row["name"]) == (run_id, "sft")
        assert row["bill"]["estimated_usd_micro"] == 2_000_000
        assert row["bill"]["billed_usd_micro"] == 2_140_000
        assert row["bill"]["drift_usd_micro"] == 140_000
        assert row["bill"]["drift_percent"] == pytest.approx(7.0)
        assert row["bill"]["flagged"] is True
        (provider,) = report["providers"]
        assert (provider["provider"], provider["billed_usd_micro"], provider["unattributed_usd_micro"]) == (
            "acme",
            2_640_000,
            500_000,
        )
        assert report["unattributed"] == [
            {"provider": "acme", "source": "volume storage", "billed_usd_micro": 500_000, "lines": 1}
        ]
        text = cli(elsewhere, "spend", "reconcile", run_id, "--address", address).stdout
        assert "$2.14" in text and "+7.00%" in text and "FLAGGED" in text
        # A run is named as `runs show` names it: by name or id prefix, the report is that run's.
        for ref in ("sft", run_id[:8]):
            named = json.loads(cli(elsewhere, "spend", "reconcile", ref, "--json", "--address", address).stdout)
            assert [(r["run_id"], r["bill"]["billed_usd_micro"]) for r in named["runs"]] == [(run_id, 2_140_000)]

        adjusted = json.loads(cli(elsewhere, "spend", "reconcile", "--adjust", "--json", "--address", address).stdout)
        assert [(a["account"], a["amount_usd_micro"]) for a in adjusted["adjustments"]] == [(run_id, 140_000)]
        assert adjusted["runs"][0]["bill"]["unadjusted_usd_micro"] == 0
        account = spend.GetAccount(spend_pb2.GetAccountRequest(account=run_id, min_position=0), timeout=10).account
        assert account.committed_usd_micro == 2_140_000
        second = cli(elsewhere, "spend", "reconcile", "--adjust", "--address", address).stdout
        assert second.startswith("Nothing to adjust")

        missing = cli(elsewhere, "spend", "reconcile", "no-such", "--address", address, status=1)
        assert missing.stderr.strip() == "trainledger: no run or account no-such"
        bad = elsewhere / "bad.csv"
        bad.write_text("line_id,interval_start,interval_end,amount\nx,2026-11-30,2026-11-29,1\n")
        refused = cli(
            elsewhere, "spend", "pull", "--file", "bad.csv", "--provider", "acme", "--address", address, status=1
        )
        assert "line 2" in refused.stderr
        as_json = cli(
            elsewhere, "spend", "pull", "--file", "bad.csv", "--provider", "acme", "--json", "--address", address,
            status=1,
        )  # fmt: skip
        error = json.loads(as_json.stdout)["error"]
        assert (error["reason"], error["path"], error["stage"]) == ("BILL_FILE_REFUSED", "bad.csv", "read")
        assert [(p["number"], p["unit"]) for p in error["problems"]] == [(2, "line")]
        assert "line 2" in as_json.stderr
    finally:
        servers.kill_all()


def test_a_refused_bill_file_records_nothing_and_names_its_line(tmp_path: Path) -> None:
    servers = Servers(tmp_path)
    try:
        _, address = servers.start(tmp_path / "ledger.db")
        channel = grpc.insecure_channel(address)
        spend = spend_pb2_grpc.SpendStub(channel)

        def pull(name: str, *options: str, status: int = 0) -> subprocess.CompletedProcess[str]:
            return cli(tmp_path, "spend", "pull", "--file", name, "--provider", "acme", "--address", address, *options,
                       status=status)  # fmt: skip

        def providers(at: int = 0) -> list[str]:  # The views as of position `at` (read your writes).
            request = spend_pb2.ReconcileRequest(min_position=at)
            return [p.provider for p in spend.Reconcile(request, timeout=10).providers]

        # 5,001 rows, two requests' worth; the last spans 400 days, more than the ledger takes.
        rows = [f"r{n},2026-11-30T00:00:00Z,2026-11-30T01:00:00Z,0.01" for n in range(5_000)]
        long = [*rows, "long,2026-01-01T00:00:00Z,2027-02-05T00:00:00Z,0.01"]
        header = "line_id,interval_start,interval_end,amount\n"
        (tmp_path / "long.csv").write_text(header + "\n".join(long) + "\n")
        refused = pull("long.csv", status=1)
        assert "line 5002: refused by the ledger (INVALID_INTERVAL)" in refused.stderr
        assert "lines[" not in refused.stderr and "Traceback" not in refused.stderr
        assert providers() == []

        # Hostile amounts and documents: each a refusal naming its line, never a traceback.
        day = "2026-11-30,2026-12-01"
        (tmp_path / "hostile.csv").write_text(
            header + f"a,{day},1e999999\nb,{day},\u0661\u0662\nc,{day},1e30\n", encoding="utf-8"
        )
        hostile = pull("hostile.csv", status=1)
        assert "line 2: amount '1e999999'" in hostile.stderr and "line 3: amount" in hostile.stderr
        assert "line 4: amount '1e30'" in hostile.stderr and "Traceback" not in hostile.stderr
        (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
        deep = pull("deep.json", status=1)
        assert "not JSON: nested too deeply" in deep.stderr and "Traceback" not in deep.stderr
        assert providers() == []

        # The whole file is recorded, and --json prints an object.
        (tmp_path / "good.csv").write_text(header + "\n".join(rows) + "\n")
        pulled = json.loads(pull("good.csv", "--json").stdout)
        assert {key: pulled[key] for key in ("recorded", "restated", "unchanged", "lines", "requests")} == {
            "recorded": 5_000,
            "restated": 0,
            "unchanged": 0,
            "lines": 5_000,
            "requests": 1,
        }
        assert pulled["position"] > 0 and providers(pulled["position"]) == ["acme"]
    finally:
        servers.kill_all()
