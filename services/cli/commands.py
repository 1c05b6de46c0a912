"""The `trainledger` command: `serve`, `project`, read commands through a server or on a database
file, and the writes operators make by hand.

    trainledger serve [--db PATH | --database-url URL] [--listen HOST:PORT] [--http HOST:PORT | --no-http]
                      [--metrics HOST:PORT] [--no-metrics] [--log-format text|json]
    trainledger project --database-url URL      # a projection worker (PostgreSQL)
    trainledger runs list [--status S] [--name TEXT] [--account A] [--include-retracted] | runs show RUN
    trainledger runs diff RUN RUN [RUN...] [--all]   # spec, summary, spend, best checkpoint side by side
    trainledger runs retract RUN --reason TEXT    # operators: hidden from lists, refused new writes
    trainledger checkpoints list RUN | checkpoints prune RUN|--all [--root DIR]... [--dry-run|--yes]
    trainledger spend show RUN_OR_ACCOUNT [--limit N] | spend cap RUN_OR_ACCOUNT AMOUNT|none
    trainledger registry list | show FAMILY | register FAMILY URI --digest D [--from-checkpoint RUN:STEP]
    trainledger registry promote FAMILY VERSION --gate-rule RULE|--passed|--failed | rollback FAMILY [VERSION]
    trainledger registry alias FAMILY ALIAS VERSION [--expect N] | retire FAMILY --reason TEXT
    trainledger events export --from N | rebuild | backup --to FILE | verify | tokens ... | watch RUN
    trainledger restore FILE --db NEW            # a backup made into a new ledger, verified first
    trainledger spend pull | spend reconcile    # providers' bills, through a server (services.cli.bills)

Read commands (runs, spend show, registry list|show, events export, checkpoints) and the
operator's `runs retract` and `checkpoints prune` go through a server by
default (services.cli.connection: --address HOST:PORT, else TRAINLEDGER_ADDRESS, else 127.0.0.1:50051);
--db PATH, --database-url URL or TRAINLEDGER_DATABASE_URL switch them to offline inspection of a
database (services.cli.local). Both print the same tables (services.render), fitted to the terminal
(--wide: values whole), or JSON with --json. A run is named by id, unique id prefix, name or part of
one (services.cli.naming). A server that does not answer, a database that cannot be opened,
a listen address in use or a SQLite file another `serve` or `rebuild` holds is one line on stderr
and exit status 2; an error the server answers is one line and exit status 1.

Starting is cheap: the parser imports nothing heavy (grpc, the clients and the ledger are imported
by the handler that needs them, and the parsers of other modules' commands only when that command
is asked for), so `trainledger --help` and a read through a server start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from services.cli import database, registry, remote, run_tags
from services.cli.options import command_is
from services.cli.output import Failure
from services.render import tables

__all__ = ["main", "parser"]


class _Version(argparse.Action):
    """--version: the installed distribution's version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("trainledger")
        except PackageNotFoundError:
            number = "unknown (not installed)"
        from ledger.storage.version import SCHEMA_VERSION

        print(f"trainledger {number} (ledger schema version {SCHEMA_VERSION})")
        parser.exit()


# Commands whose parsers other modules add, with the help the top-level list shows; a module is
# imported (with what it imports) only when its command is the one asked for.
OTHERS = {
    "verify": "recompute the hash chain over the log and check the snapshots and views",
    "seal": "seal a log that has no seals, as it stands (recorded with who and why)",
    "tokens": "bearer tokens: create, list, revoke",
    "watch": "a live view of a run in the terminal, until it finishes",
    "checkpoints": "a run's checkpoints: the retention plan, and pruning what it offers",
}


def parser(asked: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. `asked`: the command asked for, whose parser is built whole;
    others' modules are not imported (None: build every command whole). Each group of commands is
    added by the module of its handlers."""
    top = argparse.ArgumentParser(prog="trainledger", description="An event-sourced ledger for training runs.")
    top.add_argument("--version", action=_Version, help="print the version and exit")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    database.add_serve_parsers(commands, asked)
    run_tags.add_tag_parsers(remote.add_runs_parser(commands))
    spend = remote.add_spend_parser(commands)
    if command_is(asked, "spend"):
        from services.cli import bills

        bills.add_parsers(spend)
    registry.add_parser(commands)
    remote.add_events_parser(commands)
    database.add_rebuild_parser(commands)
    for name, help in OTHERS.items():
        _add_when_asked(commands, asked, name, help)
    database.add_backup_parser(commands)
    _add_when_asked(commands, asked, "restore", "make a verified new SQLite ledger of a backup")
    return top


def _add_when_asked(commands: Any, asked: str | None, name: str, help: str) -> None:
    """The command `name` of module services.cli.<name>, built whole when it is `asked` for; else
    only its line in the list of commands."""
    if command_is(asked, name):
        from importlib import import_module

        import_module(f"services.cli.{name}").add_parser(commands)
    else:
        commands.add_parser(name, help=help, add_help=False)


def _command_of(argv: Sequence[str]) -> str:
    """The command named in `argv` (its first word that is no option), "" for none."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser(_command_of(words)).parse_args(words)
    args.database = database.database_of(args)
    tables.fit_to(None if getattr(args, "wide", False) else tables.terminal_width())
    try:
        args.handler(args)
    except Failure as failure:
        print(f"trainledger: {failure}", file=sys.stderr)
        return failure.status
    except BrokenPipeError:  # `trainledger events export | head`
        sys.stderr.close()
    except KeyboardInterrupt:
        return 130
    finally:
        tables.fit_to(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
