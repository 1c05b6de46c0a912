#!/usr/bin/env python3
"""Write the command reference at the end of docs/cli.md from the `trainledger` parser itself.

Usage:
    python scripts/generate_cli_docs.py          # rewrite docs/cli.md below its marker line
    python scripts/generate_cli_docs.py --check  # exit 1 when that part is stale

Everything above MARKER is written by hand; everything below it is generated: one section per
command and subcommand, with its arguments and their help, read from services.cli.commands.parser() with
every command built whole. The TRAINLEDGER_* variables are cleared first, so defaults read from
the environment print as the code's own. tests/test_docs.py keeps the page current.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "cli.md"
MARKER = "<!-- Generated below by scripts/generate_cli_docs.py: do not edit by hand. -->"


Command = tuple[tuple[str, ...], argparse.ArgumentParser]


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """Every command and subcommand as (its words after `trainledger`, its parser), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


def helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each subcommand's one-line help, by name."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                found[choice.dest] = choice.help or ""
    return found


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def argument(action: argparse.Action) -> str:
    """How the argument is written: its flags and metavar, or its positional name."""
    if not action.option_strings:
        return action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if action.choices is not None and action.metavar is None:
        metavar = "{" + ",".join(str(c) for c in action.choices) + "}"
    return ", ".join(f"{flag} {metavar}" for flag in action.option_strings)


def section(words: tuple[str, ...], parser: argparse.ArgumentParser, summary: str) -> list[str]:
    lines = [f"### trainledger {' '.join(words)}", "", cell(summary or parser.description or ""), ""]
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        text = formatter._expand_help(action) if action.help and action.help != argparse.SUPPRESS else ""
        if action.help != argparse.SUPPRESS:
            rows.append(f"| `{argument(action)}` | {cell(text)} |")
    subs = helps(parser)
    if subs:
        lines += ["| subcommand | what it does |", "|---|---|"]
        for name, text in subs.items():
            lines.append(f"| [`{name}`](#trainledger-{'-'.join((*words, name))}) | {cell(text)} |")
        lines.append("")
    if rows:
        lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return lines


def render() -> str:
    """The generated part of the page, the marker line first."""
    for name in [n for n in os.environ if n.startswith("TRAINLEDGER_")]:
        del os.environ[name]
    os.environ["COLUMNS"] = "100"
    sys.path.insert(0, str(REPO))
    from services.cli import parser as make_parser

    top = make_parser()
    summaries = {(): helps(top)}
    lines = [MARKER, "", "## Every command", ""]
    for words, parser in commands(top):
        summaries[words] = helps(parser)
        lines += section(words, parser, summaries[words[:-1]].get(words[-1], ""))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    cli.add_argument("--check", action="store_true", help="exit 1 if the generated part of docs/cli.md is stale")
    args = cli.parse_args(argv)
    page = OUTPUT.read_text(encoding="utf-8")
    if MARKER not in page:
        print(f"{OUTPUT.relative_to(REPO)} has no marker line {MARKER!r}", file=sys.stderr)
        return 1
    written = page[: page.index(MARKER)] + render()
    if args.check:
        if written != page:
            print("docs/cli.md is out of date; run scripts/generate_cli_docs.py", file=sys.stderr)
            return 1
        print("docs/cli.md is up to date")
        return 0
    OUTPUT.write_text(written, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
