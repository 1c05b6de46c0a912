"""The real modal SDK pulls a billing report and tags an App against the loopback FakeModalServer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

modal = pytest.importorskip("modal")
from modal.exception import AuthError, NotFoundError, PermissionDeniedError  # noqa: E402

from tests.fakes.modal_server import FakeModalServer  # noqa: E402

DAY = datetime(2026, 11, 30, tzinfo=UTC)
END = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture
def server(monkeypatch, tmp_path) -> Iterator[FakeModalServer]:
    fake = FakeModalServer().start()
    monkeypatch.setenv("MODAL_SERVER_URL", fake.server_url)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "no-modal.toml"))
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def sdk(server: FakeModalServer) -> Iterator[Any]:
    client = modal.Client.from_credentials(FakeModalServer.TOKEN_ID, FakeModalServer.TOKEN_SECRET)
    try:
        yield client
    finally:
        client.close()


def hour(h: int) -> datetime:
    return datetime(2026, 11, 30, h, tzinfo=UTC)


def fill(server: FakeModalServer) -> None:
    server.add_item(
        object_id="ap-A",
        description="sft-trainer",
        environment_name="main",
        interval_start=hour(9),
        cost="1.25",
        cost_by_resource={"CPU": "0.05", "GPU (H100)": "1.20"},
        tags={"trainledger_run_id": "run-a", "team": "nlp"},
    )
    server.add_item(
        object_id="ap-B",
        description="eval",
        environment_name="staging",
        interval_start=hour(10),
        cost="0.0000015",
        tags={"team": "eval"},
    )
    server.add_item(  # the day before the window
        object_id="ap-A",
        description="sft-trainer",
        environment_name="main",
        interval_start=hour(0).replace(day=29),
        cost="9",
    )


def test_report_through_the_sdk_keeps_costs_as_decimals_and_every_tag(server, sdk) -> None:
    fill(server)
    items = modal.Workspace.from_context(client=sdk).billing.report(
        start=DAY,
        end=END,
        resolution="h",
        tag_names=["*"],
    )
    assert [(i.object_id, i.environment_name, i.interval_start, i.cost) for i in items] == [
        ("ap-A", "main", hour(9), Decimal("1.25")),
        ("ap-B", "staging", hour(10), Decimal("0.0000015")),
    ]
    assert items[0].cost_by_resource == {"CPU": Decimal("0.05"), "GPU (H100)": Decimal("1.20")}
    assert items[0].tags == {"trainledger_run_id": "run-a", "team": "nlp"}
    assert items[1].cost_by_resource == {}
    assert server.calls == ["WorkspaceNameLookup", "WorkspaceBillingReport"]
    (request,) = server.report_requests
    assert (request.start, request.end, request.resolution, request.tag_names) == (
        DAY,
        END,
        "h",
        ["*"],
    )


def test_tag_names_select_tags_and_whole_intervals_only(server, sdk) -> None:
    fill(server)
    workspace = modal.Workspace.from_context(client=sdk)
    named = workspace.billing.report(start=DAY, end=END, resolution="h", tag_names=["team"])
    assert [i.tags for i in named] == [{"team": "nlp"}, {"team": "eval"}]
    untagged = workspace.billing.report(start=DAY, end=END, resolution="h")
    assert [i.tags for i in untagged] == [{}, {}]
    # An end inside the 10:00 hour leaves that partial interval out; a start inside 09:00 rounds down.
    partial = workspace.billing.report(
        start=hour(9).replace(minute=30), end=hour(10).replace(minute=59), resolution="h"
    )
    assert [i.object_id for i in partial] == ["ap-A"]


def test_environment_report_keeps_that_environment(server, sdk) -> None:
    fill(server)
    environment = modal.Environment.from_name("staging", client=sdk)
    items = environment.billing.report(start=DAY, end=END, resolution="h", tag_names=["*"])
    assert [i.object_id for i in items] == ["ap-B"]
    assert server.report_requests[0].environment_ids == [environment.object_id]


def test_wrong_credentials_are_refused(server) -> None:
    client = modal.Client.from_credentials("ak-someone-else", "as-wrong")
    try:
        with pytest.raises(AuthError):
            modal.Workspace.from_context(client=client).billing.report(start=DAY, end=END)
    finally:
        client.close()


def test_app_tags_are_replaced_and_recorded(server, sdk) -> None:
    existing = server.add_app("trainer", tags={"team": "nlp"})
    app = modal.App.lookup("trainer", client=sdk)
    assert app.app_id == existing.app_id
    assert app.get_tags() == {"team": "nlp"}
    app.set_tags({"trainledger_run_id": "run-a"})  # set_tags replaces every tag
    assert app.get_tags() == {"trainledger_run_id": "run-a"}
    assert server.set_tags_calls == [(existing.app_id, {"trainledger_run_id": "run-a"})]
    with pytest.raises(NotFoundError):
        modal.App.lookup("nobody-made-this", client=sdk)
    made = modal.App.lookup("made-now", client=sdk, create_if_missing=True)
    assert server.apps[made.app_id].name == "made-now"


def test_fail_next_fails_one_call(server, sdk) -> None:
    server.add_app("trainer")
    app = modal.App.lookup("trainer", client=sdk)
    server.fail_next("AppSetTags")
    with pytest.raises(PermissionDeniedError):
        app.set_tags({"a": "b"})
    app.set_tags({"a": "c"})
    assert [tags for _, tags in server.set_tags_calls] == [{"a": "c"}]


def test_an_unserved_rpc_is_unimplemented(server, sdk) -> None:
    with pytest.raises(Exception, match="not served by the fake Modal server"):
        modal.Workspace.from_context(client=sdk).billing.rates()
