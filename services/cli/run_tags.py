"""`runs tag` and `runs untag`: set and remove a run's tags through a server (the run named as
`runs show` names it: services.cli.remote.resolve_run). A tag is KEY=VALUE; searches name it as
`tags.KEY` (`runs list --where`)."""

from __future__ import annotations

import argparse
from typing import Any

from services.cli.connection import talking
from services.cli.options import add_writing
from services.cli.output import Failure, emit
from services.cli.remote import resolve_run

__all__ = ["add_tag_parsers", "parse_tags", "runs_tag", "runs_untag"]


def add_tag_parsers(group: Any) -> None:
    """Add `tag` and `untag` to the `runs` group (an add_subparsers)."""
    tagged = add_writing(group, "tag", runs_tag, "set tags on a run (KEY=VALUE), also after it finished")
    tagged.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    tagged.add_argument("tags", nargs="+", metavar="KEY=VALUE", help="a tag to set (its value replaces the one before)")
    untagged = add_writing(group, "untag", runs_untag, "remove tags from a run")
    untagged.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    untagged.add_argument("keys", nargs="+", metavar="KEY", help="a tag to remove")


def parse_tags(words: list[str]) -> dict[str, str]:
    """KEY=VALUE words as a map (the value may be empty or hold "="); Failure for a word without "="."""
    tags: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals:
            raise Failure(f"{word!r} is not KEY=VALUE", 2)
        tags[key] = value
    return tags


def runs_tag(args: argparse.Namespace) -> None:
    """Set tags on a run."""
    _change(args, parse_tags(args.tags), [])


def runs_untag(args: argparse.Namespace) -> None:
    """Remove tags from a run."""
    _change(args, {}, list(args.keys))


def _change(args: argparse.Namespace, tags: dict[str, str], remove: list[str]) -> None:
    with talking(args) as client:
        run_id = resolve_run(client, args.run)
        receipt = client.set_tags(run_id, tags, remove=remove)
        state = client.get_run_state(run_id=run_id, min_position=receipt.position)
    shown = " ".join(f"{key}={value}" for key, value in sorted(state.tags.items())) or "(none)"
    value = {"run_id": run_id, "position": receipt.position, "tags": state.tags}
    emit(args, value, f"{run_id} ({state.run.name}): tags {shown}" if state.run.name else f"{run_id}: tags {shown}")
