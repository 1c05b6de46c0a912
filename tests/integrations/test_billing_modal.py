"""Modal's bill: the report served by the loopback FakeModalServer through the real modal SDK,
turned into lines, recorded in a real ledger server, attributed to two runs by their tags and
reconciled; pulling again changes nothing. And the App tags that make that attribution: run_tags,
tag_app and open_recorder against the same fake."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

modal = pytest.importorskip("modal")

from clients import LedgerClient, run_key  # noqa: E402
from clients.billing.modal import modal_lines, pull_modal, report_items  # noqa: E402
from clients.billing.send import PullResult  # noqa: E402
from clients.integrations.modal import open_recorder, run_tags, tag_app  # noqa: E402
from clients.models import BilledLine  # noqa: E402
from tests.fakes.modal_server import FakeModalServer  # noqa: E402

START = datetime(2026, 11, 30, 9, tzinfo=UTC)
END = datetime(2026, 11, 30, 12, tzinfo=UTC)


def hour(h: int) -> datetime:
    return datetime(2026, 11, 30, h, tzinfo=UTC)


@pytest.fixture
def fake(monkeypatch, tmp_path) -> Iterator[FakeModalServer]:
    server = FakeModalServer().start()
    monkeypatch.setenv("MODAL_SERVER_URL", server.server_url)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "no-modal.toml"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sdk(fake: FakeModalServer) -> Iterator[Any]:
    """The real SDK's client, connected to the fake with the fake's credentials."""
    client = modal.Client.from_credentials(FakeModalServer.TOKEN_ID, FakeModalServer.TOKEN_SECRET)
    try:
        yield client
    finally:
        client.close()


def serve_report(fake: FakeModalServer, run_a: str, run_b: str) -> None:
    """Run A's trainer (account team-nlp) with a cost breakdown by resource over two hours, run B's
    eval for one hour, a sandbox no run tagged, and an hour before the window."""
    tags_a = {"trainledger_run_id": run_a, "trainledger_account": "team-nlp", "team": "nlp"}
    fake.add_item(
        object_id="ap-A1",
        description="sft-trainer",
        environment_name="main",
        interval_start=hour(8),
        cost="7.00",
        cost_by_resource={"GPU (H100)": "7.00"},
        tags=tags_a,
    )
    fake.add_item(
        object_id="ap-A1",
        description="sft-trainer",
        environment_name="main",
        interval_start=hour(9),
        cost="1.25",
        cost_by_resource={"CPU": "0.05", "GPU (H100)": "1.20"},
        tags=tags_a,
    )
    fake.add_item(
        object_id="ap-A1",
        description="sft-trainer",
        environment_name="main",
        interval_start=hour(10),
        cost="0.6000015",
        cost_by_resource={"CPU": "0.0000015", "GPU (H100)": "0.6"},
        tags=tags_a,
    )
    fake.add_item(
        object_id="ap-B1",
        description="eval",
        environment_name="main",
        interval_start=hour(10),
        cost="0.0734",
        tags={"trainledger_run_id": run_b},
    )
    fake.add_item(
        object_id="sb-X",
        description="sandbox",
        environment_name="staging",
        interval_start=hour(11),
        cost="0.25",
        tags={"team": "infra"},
    )


def expected_lines(run_a: str, run_b: str) -> list[BilledLine]:
    tags_a = {"trainledger_run_id": run_a, "trainledger_account": "team-nlp", "team": "nlp"}

    def line_a(resource: str, h: int, micro: int, text: str) -> BilledLine:
        return BilledLine(
            line_id=f"ap-A1/{resource}",
            interval_start=hour(h),
            interval_end=hour(h + 1),
            amount_usd_micro=micro,
            amount_text=text,
            currency="USD",
            run_id=run_a,
            account="team-nlp",
            tags=tags_a,
            description="sft-trainer (main)",
        )

    return [
        line_a("CPU", 9, 50_000, "0.05"),
        line_a("GPU (H100)", 9, 1_200_000, "1.20"),
        line_a("CPU", 10, 2, "0.0000015"),  # 1.5 micro-dollars, half to even
        line_a("GPU (H100)", 10, 600_000, "0.6"),
        BilledLine(
            line_id="ap-B1",
            interval_start=hour(10),
            interval_end=hour(11),
            amount_usd_micro=73_400,
            amount_text="0.0734",
            currency="USD",
            run_id=run_b,
            tags={"trainledger_run_id": run_b},
            description="eval (main)",
        ),
        BilledLine(
            line_id="sb-X",
            interval_start=hour(11),
            interval_end=hour(12),
            amount_usd_micro=250_000,
            amount_text="0.25",
            currency="USD",
            tags={"team": "infra"},
            description="sandbox (staging)",
        ),
    ]


# -- conversion ---------------------------------------------------------------------------------


def test_lines_from_the_sdks_report_items(fake, sdk) -> None:
    serve_report(fake, "run-a", "run-b")
    items = report_items(START, END, client=sdk)
    assert [type(item).__name__ for item in items] == ["BillingReportItem"] * 4
    assert fake.report_requests[0].tag_names == ["*"] and fake.report_requests[0].resolution == "h"
    assert modal_lines(items) == expected_lines("run-a", "run-b")


def test_one_environment_only(fake, sdk) -> None:
    serve_report(fake, "run-a", "run-b")
    items = report_items(START, END, environment="staging", client=sdk)
    assert [item.object_id for item in items] == ["sb-X"]


def test_daily_items_given_as_mappings() -> None:
    item = {
        "object_id": "ap-D",
        "description": "nightly",
        "environment_name": "",
        "interval_start": datetime(2026, 11, 29),  # naive: UTC, as Modal means it
        "cost": Decimal("12.5000005"),
        "tags": {"trainledger_account": "team-nlp"},
    }
    assert modal_lines([item], resolution="d") == [
        BilledLine(
            line_id="ap-D",
            interval_start=datetime(2026, 11, 29, tzinfo=UTC),
            interval_end=datetime(2026, 11, 30, tzinfo=UTC),
            amount_usd_micro=12_500_000,
            amount_text="12.5000005",
            currency="USD",
            account="team-nlp",
            tags={"trainledger_account": "team-nlp"},
            description="nightly",
        )
    ]


def test_items_that_cannot_be_lines_are_refused() -> None:
    good = {"object_id": "ap-1", "interval_start": hour(9), "cost": "1"}
    with pytest.raises(ValueError, match=r"report item 1 \(ap-2\): a cost must be a Decimal"):
        modal_lines([good, {**good, "object_id": "ap-2", "cost": 0.1}])
    with pytest.raises(ValueError, match=r"report item 0 \(ap-1\): not an amount"):
        modal_lines([{**good, "cost": "ten"}])
    with pytest.raises(ValueError, match="resolution must be 'h'"):
        modal_lines([good], resolution="w")


# -- tags ---------------------------------------------------------------------------------------


def test_run_tags() -> None:
    assert run_tags("run-1") == {"trainledger_run_id": "run-1"}
    assert run_tags("run-1", "team-nlp") == {"trainledger_run_id": "run-1", "trainledger_account": "team-nlp"}
    with pytest.raises(ValueError):
        run_tags("")


def test_tag_app_merges_with_the_apps_tags(fake, sdk) -> None:
    made = fake.add_app("trainer", tags={"team": "nlp", "trainledger_run_id": "an-older-run"})
    app = modal.App.lookup("trainer", client=sdk)
    tagged = tag_app(app, run_id="run-1", account="team-nlp")
    want = {"team": "nlp", "trainledger_run_id": "run-1", "trainledger_account": "team-nlp"}
    assert tagged == want
    assert fake.set_tags_calls == [(made.app_id, want)]
    assert tag_app(app, run_id="run-1", account="team-nlp") == want  # already tagged: not set again
    assert len(fake.set_tags_calls) == 1
    # The next run in the same App has no account: the previous run's account tag goes.
    assert tag_app(app, run_id="run-2") == {"team": "nlp", "trainledger_run_id": "run-2"}
    assert fake.apps[made.app_id].tags == {"team": "nlp", "trainledger_run_id": "run-2"}


def test_a_failed_tag_is_logged_not_raised(fake, sdk, caplog) -> None:
    fake.add_app("trainer")
    app = modal.App.lookup("trainer", client=sdk)
    fake.fail_next("AppGetTags")
    with caplog.at_level(logging.WARNING, logger="trainledger.clients.modal"):
        assert tag_app(app, run_id="run-1") is None
    assert "could not tag the Modal App with run run-1: PermissionDeniedError" in caplog.text
    assert fake.set_tags_calls == []
    # An App that is not running has no id to tag.
    with caplog.at_level(logging.WARNING, logger="trainledger.clients.modal"):
        assert tag_app(modal.App("never-run"), run_id="run-1") is None
    assert "not running (no App id)" in caplog.text


def test_outside_a_container_nothing_is_tagged(fake) -> None:
    assert tag_app(run_id="run-1") is None
    assert fake.calls == []


# -- against a real ledger ----------------------------------------------------------------------


def open_two_runs(client: LedgerClient) -> tuple[str, str]:
    client.open_account(account="team-nlp")
    run_a = client.open_run(run_key=run_key({"t": str(uuid.uuid4())}), name="sft", parent_account="team-nlp")
    run_b = client.open_run(run_key=run_key({"t": str(uuid.uuid4())}), name="eval")
    return run_a.state.run.run_id, run_b.state.run.run_id


def by_id(rows: list[Any], key: str) -> dict[str, Any]:
    return {getattr(row, key): row for row in rows}


def test_pull_records_attributes_by_tag_and_a_second_pull_is_a_no_op(fake, sdk, client: LedgerClient) -> None:
    run_a, run_b = open_two_runs(client)
    serve_report(fake, run_a, run_b)

    result = pull_modal(client, START, END, client=sdk)
    assert (result.recorded, result.restated, result.unchanged, result.lines, result.requests) == (6, 0, 0, 6, 1)

    report = client.reconcile(min_position=result.position)
    runs = by_id(report.runs, "run_id")
    assert runs[run_a].bill.billed_usd_micro == 1_850_002 and runs[run_a].bill.lines == 4
    assert runs[run_a].providers == ["modal"]
    assert runs[run_b].bill.billed_usd_micro == 73_400 and runs[run_b].bill.lines == 1
    accounts = by_id(report.accounts, "account")
    assert accounts["team-nlp"].bill.billed_usd_micro == 1_850_002
    (modal_bill,) = report.providers
    assert (modal_bill.provider, modal_bill.billed_usd_micro, modal_bill.lines) == ("modal", 2_173_402, 6)
    assert (modal_bill.unattributed_usd_micro, modal_bill.unattributed_lines) == (250_000, 1)
    assert (modal_bill.first_interval_start, modal_bill.last_interval_end) == (hour(9), hour(12))
    assert [(g.provider, g.source, g.billed_usd_micro, g.lines) for g in report.unattributed] == [
        ("modal", "sandbox (staging)", 250_000, 1)
    ]

    head = client.get_head()
    again = pull_modal(client, START, END, client=sdk)
    assert (again.recorded, again.restated, again.unchanged, again.lines) == (0, 0, 6, 6)
    assert client.get_head() == head

    # Modal revises an hour: pulling again restates that line and only that line.
    fake.items[3].cost = "0.0800"
    revised = pull_modal(client, START, END, client=sdk)
    assert (revised.recorded, revised.restated, revised.unchanged) == (0, 1, 5)
    runs = by_id(client.reconcile(run_id=run_b, min_position=revised.position).runs, "run_id")
    assert runs[run_b].bill.billed_usd_micro == 80_000 and runs[run_b].bill.lines == 1


def test_open_recorder_tags_the_app_so_the_bill_finds_the_run(fake, sdk, client: LedgerClient) -> None:
    client.open_account(account="team-nlp")
    made = fake.add_app("trainer", tags={"team": "nlp"})
    app = modal.App.lookup("trainer", client=sdk)
    spec = {"name": "modal-sft", "test": str(uuid.uuid4())}
    with open_recorder(client, run_key=run_key(spec), name="modal-sft", parent_account="team-nlp", app=app) as run:
        run_id = run.run_id
    assert fake.apps[made.app_id].tags == {
        "team": "nlp",
        "trainledger_run_id": run_id,
        "trainledger_account": "team-nlp",
    }

    # Modal bills the App's hour with the tags it had then.
    fake.add_item(
        object_id=made.app_id,
        description="trainer",
        environment_name="main",
        interval_start=hour(9),
        cost="3.95",
        tags=fake.apps[made.app_id].tags,
    )
    result = pull_modal(client, START, START + timedelta(hours=1), client=sdk)
    assert result == PullResult(recorded=1, lines=1, requests=1, position=result.position)
    state = client.get_run_state(run_id=run_id, min_position=result.position)
    assert state.spend.bill is not None and state.spend.bill.billed_usd_micro == 3_950_000


def test_open_recorder_outside_a_container_does_not_call_modal(fake, client: LedgerClient) -> None:
    spec = {"name": "local", "test": str(uuid.uuid4())}
    with open_recorder(client, run_key=run_key(spec), name="local") as run:
        assert run.run_id
    assert fake.calls == []
