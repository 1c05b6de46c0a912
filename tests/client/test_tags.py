"""Tags and the run search through the clients (sync and asyncio), against a real server."""

from __future__ import annotations

import asyncio

import pytest

from clients import AsyncLedgerClient, InvalidArgument, LedgerClient
from tests.client.conftest import new_run


def test_tags_are_set_removed_and_searched(client: LedgerClient) -> None:
    run_id, _ = new_run(client)
    other, _ = new_run(client)
    client.set_tags(run_id, {"team": "vision", "stage": "a"})
    client.set_tags(other, {"team": "audio"})
    receipt = client.remove_tags(run_id, ["stage"])
    assert client.get_run_state(run_id=run_id, min_position=receipt.position).tags == {"team": "vision"}
    page = client.search_runs("tags.team = 'vision'", min_position=receipt.position)
    assert [run.run_id for run in page.runs] == [run_id] and page.runs[0].tags == {"team": "vision"}
    ordered = client.search_runs(order_by="tags.team", page_size=1)
    assert [run.run_id for run in ordered.runs] == [other] and ordered.next_page_token
    following = client.search_runs(order_by="tags.team", page_size=1, page_token=ordered.next_page_token)
    assert [run.run_id for run in following.runs] == [run_id]


def test_a_refused_search_names_its_position(client: LedgerClient) -> None:
    with pytest.raises(InvalidArgument) as raised:
        client.search_runs("spec.lr >>> 3")
    assert raised.value.reason == "INVALID_QUERY" and raised.value.metadata["position"] == "10"
    run_id, _ = new_run(client)
    with pytest.raises(InvalidArgument) as raised:
        client.set_tags(run_id, {"a b": "c"})
    assert raised.value.reason == "INVALID_TAG"


def test_the_async_client_sets_tags_and_searches(server) -> None:
    async def scenario() -> tuple[dict[str, str], list[str], str]:
        async with AsyncLedgerClient(server.address, principal="tests") as client:
            run_id = (await client.open_run(run_key="async-tags", name="a")).state.run.run_id
            await client.set_tags(run_id, {"team": "vision", "stage": "a"})
            receipt = await client.remove_tags(run_id, ["stage"])
            state = await client.get_run_state(run_id=run_id, min_position=receipt.position)
            page = await client.search_runs("tags.team = 'vision'")
            return state.tags, [run.run_id for run in page.runs], run_id

    tags, found, run_id = asyncio.run(scenario())
    assert tags == {"team": "vision"} and found == [run_id]
