"""`runs tag`, `runs untag` and `runs list --where` through a server, run as a user runs them (the
world of tests.e2e.test_remote_cli: one `trainledger serve` process with runs recorded)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_remote_cli import World, cli, out, world  # noqa: F401 - world is a fixture

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.subprocess]


def test_runs_tag_and_untag_show_in_runs_show_and_the_list(world: World) -> None:  # noqa: F811
    dpo = world.ids["dpo"]
    tagged = out(world, "runs", "tag", "dpo-mistral", "team=rl", "stage=b", "note=a=b")
    assert tagged == f"{dpo} (dpo-mistral): tags note=a=b stage=b team=rl\n"
    assert out(world, "runs", "untag", dpo[:8], "stage", "note") == f"{dpo} (dpo-mistral): tags team=rl\n"
    assert "tags:      team=rl" in out(world, "runs", "show", "mistral", "--steps", "0")
    listed = {run["run_id"]: run for run in json.loads(out(world, "runs", "list", "--json"))}
    assert listed[dpo]["tags"] == {"team": "rl"}
    assert listed[world.ids["sft"]]["tags"] == {}


def test_bad_tags_are_one_line(world: World) -> None:  # noqa: F811
    assert cli(world, "runs", "tag", "mistral", "no-equals", status=2).stderr == (
        "trainledger: 'no-equals' is not KEY=VALUE\n"
    )
    refused = cli(world, "runs", "tag", "mistral", "bad key=x", status=1).stderr
    assert refused.startswith("trainledger: ") and "INVALID_TAG" in refused and len(refused.splitlines()) == 1
    assert cli(world, "runs", "untag", "nothing-like-it", "team", status=1).stderr == (
        "trainledger: no run nothing-like-it\n"
    )


def test_runs_list_searches_with_where_and_order_by(world: World) -> None:  # noqa: F811
    sft, dpo, big = world.ids["sft"], world.ids["dpo"], world.ids["70b"]
    out(world, "runs", "tag", sft, "family=llama")
    out(world, "runs", "tag", big, "family=llama")
    ascending = ["runs", "list", "--where", "tags.family = 'llama'", "--order-by", "spec.lr", "--json"]
    found = json.loads(out(world, *ascending))
    assert [run["run_id"] for run in found] == [big, sft]  # lr 0.00002, then 0.0001
    descending = ["runs", "list", "--where", "tags.family = 'llama'", "--order-by", "spec.lr", "--desc", "--json"]
    assert [run["run_id"] for run in json.loads(out(world, *descending))] == [sft, big]
    named = json.loads(out(world, "runs", "list", "--where", "tags.family = 'llama'", "--name", "70b", "--json"))
    assert [run["run_id"] for run in named] == [big]
    by_reward = json.loads(out(world, "runs", "list", "--order-by", "metrics.reward.last desc", "--json"))
    assert by_reward[0]["run_id"] == dpo
    offline = ["runs", "list", "--where", "tags.family = 'llama'", "--order-by", "spec.lr"]
    assert out(world, *offline, "--db", str(world.database)) == out(world, *offline)


def test_a_refused_search_is_one_line_with_its_position(world: World) -> None:  # noqa: F811
    refused = cli(world, "runs", "list", "--where", "name = 'a' and colour = 1", status=1).stderr
    assert refused.startswith("trainledger: ") and "at position 16" in refused
    assert len(refused.splitlines()) == 1
