"""The `trainledger` command: `serve`, `project`, read commands through a server or on a database
file, and the writes operators make by hand.

    trainledger serve [--db PATH | --database-url URL] [--listen HOST:PORT] [--http HOST:PORT | --no-http]
                      [--metrics HOST:PORT] [--no-metrics] [--log-format text|json]
    trainledger project --database-url URL      # a projection worker (PostgreSQL)
    trainledger runs list [--status S] [--name TEXT] [--account A] [--include-retracted] | runs show RUN
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
default (services.cli.remote: --address HOST:PORT, else TRAINLEDGER_ADDRESS, else 127.0.0.1:50051);
--db PATH, --database-url URL or TRAINLEDGER_DATABASE_URL switch them to offline inspection of a
database (services.cli.local). Both print the same tables (services.render), fitted to the terminal
(--wide: values whole), or JSON with --json. A run is named by id, unique id prefix, name or part of
one (services.cli.remote.resolve_run). A server that does not answer, a database that cannot be opened,
a listen address in use or a SQLite file another `serve` or `rebuild` holds is one line on stderr
and exit status 2; an error the server answers is one line and exit status 1.

Starting is cheap: the parser imports nothing heavy (grpc, the clients and the ledger are imported
by the handler that needs them, and the parsers of other modules' commands only when that command
is asked for), so `trainledger --help` and a read through a server start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from services.cli.local import DATABASE_DEFAULT, DefaultDatabase, Failure
from services.cli.remote import add_server_options
from services.render import tables

__all__ = ["main", "parser"]

LISTEN_DEFAULT = "127.0.0.1:50051"
HTTP_DEFAULT = "127.0.0.1:8080"


def database_of(args: argparse.Namespace) -> str:
    """The database a command opens ("" for the commands that talk to a server: a read command
    given no --db, --database-url nor TRAINLEDGER_DATABASE_URL). A flag given beats the environment."""
    if not hasattr(args, "db"):
        return ""
    if args.database_url:
        return str(args.database_url)
    if args.db and not isinstance(args.db, DefaultDatabase):
        return str(args.db)  # A --db given beats the environment.
    return os.environ.get("TRAINLEDGER_DATABASE_URL") or args.db or ""


def serve(args: argparse.Namespace) -> None:
    import asyncio

    from services.runtime.logs import configure
    from services.runtime.tls import TLSError, from_arguments
    from services.server import StartupError
    from services.server import serve as run_server
    from services.web import serving

    if args.metrics and args.no_metrics:
        raise Failure("--metrics serves the counters --no-metrics turns off: give one or the other")
    configure(args.log_format)
    try:
        asyncio.run(
            run_server(
                args.listen,
                database_of(args),
                project=args.project,
                auth=args.auth,
                insecure=args.insecure,
                tls=from_arguments(args),
                http=None if args.no_http else args.http,
                http_options=serving.from_arguments(args),
                allow_unsealed=args.allow_unsealed,
                metrics=args.metrics,
                instrument=not args.no_metrics,
            )
        )
    except (StartupError, TLSError) as error:
        raise Failure(str(error)) from None


def project(args: argparse.Namespace) -> None:
    """A projection worker: the projector loop over a PostgreSQL database until SIGTERM or
    SIGINT. Any number of workers and servers may project one database: each event is applied
    once (ledger.storage.postgres.storage locks the views' tracking rows)."""
    import logging
    import signal
    import threading

    from ledger import Ledger
    from ledger.backend import is_postgres_url
    from services.runtime.describe import describe
    from services.runtime.holder import HolderError, held

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    database = args.database
    if not is_postgres_url(database):
        raise Failure(
            "projection workers need a PostgreSQL database (--database-url or TRAINLEDGER_DATABASE_URL); "
            "on SQLite the server projects by itself"
        )
    stopping = threading.Event()
    previous = {signum: signal.signal(signum, lambda *_: stopping.set()) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        with held(database, "project"):  # Holds nothing on PostgreSQL: any number of workers share it.
            try:
                ledger = Ledger.open(database, project=False)
            except Exception as error:
                raise Failure(f"cannot open database {describe(database)}: {error}") from None
            try:
                ledger.projector.start()
                print(f"trainledger: projecting (database {describe(database)})", flush=True)
                while not stopping.wait(1.0):
                    pass
                logging.getLogger("trainledger.services").info("stopping: the projector finishes its chunk")
            finally:
                ledger.close()
    except HolderError as error:
        raise Failure(str(error)) from None
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def backup(args: argparse.Namespace) -> None:
    """services.cli.backup: a copy of a SQLite ledger taken while it may be served (no holder lock)."""
    from services.cli.backup import BackupError
    from services.cli.backup import backup as copy

    try:
        made = copy(args.database, args.to)
    except BackupError as error:
        raise Failure(str(error)) from None
    print(f"backed up {args.database} to {made.path}: the log up to position {made.position} ({made.size_bytes} bytes)")


def rebuild(args: argparse.Namespace) -> None:
    """`reports.rebuild` while holding a SQLite database: never under a server that projects it."""
    from services.cli import local as reports
    from services.runtime.holder import HolderError, held

    if "://" not in args.database and not os.path.exists(args.database):
        reports.rebuild(args)  # Reports the missing file; creates nothing.
        return
    try:
        with held(args.database, "rebuild"):
            reports.rebuild(args)
    except HolderError as error:
        raise Failure(str(error)) from None


def _database_options(sub: argparse.ArgumentParser, *, read: bool = True) -> None:
    sub.add_argument("--db", default=DATABASE_DEFAULT, metavar="PATH", help="SQLite file (default: %(default)s)")
    sub.add_argument("--database-url", default="", metavar="URL", help="postgresql:// URL (overrides --db)")
    if read:
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def _reader(name: str) -> Callable[[argparse.Namespace], None]:
    """A read command's handler: through the server (services.cli.remote), or on the database that
    --db, --database-url or TRAINLEDGER_DATABASE_URL names (services.cli.local)."""

    def read(args: argparse.Namespace) -> None:
        if args.database:
            from services.cli import local as reports

            getattr(reports, name)(args)
        else:
            from services.cli import remote

            getattr(remote, name)(args)

    read.__name__ = name
    return read


def _writer(name: str) -> Callable[[argparse.Namespace], None]:
    """A write command's handler: always through the server (services.cli.remote)."""

    def write(args: argparse.Namespace) -> None:
        from services.cli import remote

        getattr(remote, name)(args)

    write.__name__ = name
    return write


def read_options(sub: argparse.ArgumentParser) -> None:
    """A read command's options: the server's, or a database file's for offline inspection."""
    add_server_options(sub)
    sub.add_argument("--db", default="", metavar="PATH", help="read this SQLite file instead of a server")
    sub.add_argument(
        "--database-url", default="", metavar="URL", help="read this database (postgresql://) instead of a server"
    )
    sub.add_argument("--wide", action="store_true", help="show every value whole (default: fit the terminal)")


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
    others' modules are not imported (None: build every command whole)."""
    top = argparse.ArgumentParser(prog="trainledger", description="An event-sourced ledger for training runs.")
    top.add_argument("--version", action=_Version, help="print the version and exit")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str,
        run: Callable[[argparse.Namespace], None],
        parent: argparse._SubParsersAction[argparse.ArgumentParser] = commands,
        *,
        read: bool = True,
        help: str,
    ) -> argparse.ArgumentParser:
        sub = parent.add_parser(name, help=help)
        _database_options(sub, read=read)
        sub.set_defaults(handler=run)
        return sub

    def reading(
        name: str, parent: argparse._SubParsersAction[argparse.ArgumentParser], handler: str, help: str
    ) -> argparse.ArgumentParser:
        sub = parent.add_parser(name, help=help)
        read_options(sub)
        sub.set_defaults(handler=_reader(handler))
        return sub

    def writing(
        name: str, parent: argparse._SubParsersAction[argparse.ArgumentParser], handler: str, help: str
    ) -> argparse.ArgumentParser:
        sub = parent.add_parser(name, help=help)
        add_server_options(sub)
        sub.set_defaults(handler=_writer(handler))
        return sub

    serve_parser = command("serve", serve, read=False, help="serve the gRPC API and the web dashboard")
    serve_parser.add_argument("--listen", default=LISTEN_DEFAULT, metavar="HOST:PORT", help="(default: %(default)s)")
    serve_parser.add_argument(
        "--no-project",
        dest="project",
        action="store_false",
        help="leave projection to `trainledger project` workers (PostgreSQL only)",
    )
    serve_parser.add_argument("--auth", action="store_true", help="require a bearer token even before one is issued")
    serve_parser.add_argument(
        "--insecure", action="store_true", help="serve a non-loopback address without authentication"
    )
    serve_parser.add_argument(
        "--http",
        default=os.environ.get("TRAINLEDGER_HTTP") or HTTP_DEFAULT,
        metavar="HOST:PORT",
        help="serve the web dashboard and its JSON API here (default: TRAINLEDGER_HTTP, else %(default)s)",
    )
    serve_parser.add_argument("--no-http", action="store_true", help="serve no dashboard")
    serve_parser.add_argument(
        "--allow-unsealed",
        action="store_true",
        help=(
            "serve a log whose seals are missing (read only until `trainledger seal`) or whose chain is"
            " broken, tampered events included (`trainledger verify` says where)"
        ),
    )
    serve_parser.add_argument(
        "--metrics",
        default=None,
        metavar="HOST:PORT",
        help="serve /metrics, /healthz and /readyz here too, without authentication (works with --no-http)",
    )
    serve_parser.add_argument("--no-metrics", action="store_true", help="count nothing for /metrics")
    serve_parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="json: one object per line (default: text)"
    )
    if command_is(asked, "serve"):
        from services.runtime.tls import add_arguments
        from services.web import serving

        add_arguments(serve_parser)
        serving.add_arguments(serve_parser)
    command("project", project, read=False, help="run a projection worker until SIGTERM (PostgreSQL only)")

    runs = commands.add_parser("runs", help="training runs").add_subparsers(dest="action", required=True)
    listed = reading("list", runs, "runs_list", "list runs, newest first")
    listed.add_argument("--status", choices=("running", "lost", "done", "failed", "stopped"), default="")
    listed.add_argument("--name", default="", metavar="TEXT", help="runs whose name holds TEXT (any case)")
    listed.add_argument("--account", default="", help="runs whose spend lies under this account")
    listed.add_argument("--limit", type=_positive, default=100, help="at most this many (default: %(default)s)")
    listed.add_argument("--include-retracted", action="store_true", help="list retracted runs too (marked)")
    shown = reading("show", runs, "runs_show", "a run's state, spec, metrics, checkpoints, attempts and last steps")
    shown.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    shown.add_argument("--steps", type=int, default=10, help="how many of the last steps to show (default: 10)")
    retracted = reading("retract", runs, "runs_retract", "retract a run: hidden from lists, refused new writes")
    retracted.add_argument("run", metavar="RUN", help="run id, unique id prefix (4+ characters), name or part of one")
    retracted.add_argument("--reason", required=True, help="why (recorded; retracting again takes the same reason)")

    spend = commands.add_parser("spend", help="spend accounts").add_subparsers(dest="action", required=True)
    spent = reading("show", spend, "spend_show", "an account's totals against its cap and its reservations")
    spent.add_argument("account", metavar="RUN_OR_ACCOUNT")
    spent.add_argument("--limit", type=_positive, default=50, help="reservations per page (default: %(default)s)")
    spent.add_argument("--page", default="", metavar="TOKEN", help="the page a previous `spend show` pointed to")
    capped = writing("cap", spend, "spend_cap", "set the cap of an account or a run, or lift it (none)")
    capped.add_argument("account", metavar="RUN_OR_ACCOUNT")
    capped.add_argument("amount", metavar="AMOUNT", help="dollars (25, 12.50) or none")
    if command_is(asked, "spend"):
        from services.cli import bills as cli_bills

        cli_bills.add_parsers(spend)

    registry = commands.add_parser("registry", help="model registry").add_subparsers(dest="action", required=True)
    reading("list", registry, "registry_list", "families and their current versions")
    reading("show", registry, "registry_show", "a family's versions and promotion history").add_argument(
        "family", metavar="FAMILY"
    )
    registered = writing("register", registry, "registry_register", "register a version of a family")
    registered.add_argument("family", metavar="FAMILY")
    registered.add_argument("artifact_uri", metavar="ARTIFACT_URI", help="where the model's files are")
    registered.add_argument(
        "--digest", required=True, help="the artifact's digest (sha256:...); the version's identity"
    )
    source = registered.add_mutually_exclusive_group()
    source.add_argument(
        "--from-checkpoint",
        default="",
        metavar="RUN:STEP",
        help="the run's checkpoint it was made from (checked, and kept from retention)",
    )
    source.add_argument("--source-run", default="", metavar="RUN", help="the run it came from (not checked)")
    registered.add_argument("--source-step", type=int, default=0, metavar="STEP", help="with --source-run")
    registered.add_argument(
        "--checkpoint-digest",
        default="",
        metavar="DIGEST",
        help="with --from-checkpoint: the digest the checkpoint must have (default: the one it was saved with)",
    )
    registered.add_argument("--metadata", default="", metavar="JSON", help="a JSON object kept with the version")
    promoted = writing("promote", registry, "registry_promote", "make a version current through its gate")
    promoted.add_argument("family", metavar="FAMILY")
    promoted.add_argument("version", metavar="VERSION", type=_positive)
    gate = promoted.add_mutually_exclusive_group(required=True)
    gate.add_argument(
        "--gate-rule",
        default="",
        metavar="RULE",
        help='a rule the ledger evaluates on recorded scores, e.g. "eval_loss <= 0.5 and accuracy >= 0.8"',
    )
    gate.add_argument(
        "--gate-json", default="", metavar="FILE", help='an asserted verdict: {"passed", "reason", "stats"}'
    )
    gate.add_argument("--passed", action="store_true", default=None, help="assert that the gate passed")
    gate.add_argument(
        "--failed", dest="passed", action="store_false", help="assert that the gate failed (refused, recorded)"
    )
    promoted.add_argument(
        "--eval-run",
        default="",
        metavar="RUN",
        help="with --gate-rule: evaluate on this run's summary, not the version's source checkpoint's scores",
    )
    promoted.add_argument(
        "--reason", default="", help="the gate's reason (an asserted verdict needs one: who checked what)"
    )
    promoted.add_argument("--stat", action="append", default=[], metavar="KEY=VALUE", help="a statistic of the gate")
    _expected(promoted)
    rolled = writing("rollback", registry, "registry_rollback", "make a version current again that was current before")
    rolled.add_argument("family", metavar="FAMILY")
    rolled.add_argument(
        "version", metavar="VERSION", type=_positive, nargs="?", default=None, help="(default: the previous current)"
    )
    rolled.add_argument("--reason", required=True, help="why (recorded)")
    _expected(rolled)
    if command_is(asked, "registry"):
        from services.cli import registry as cli_registry

        cli_registry.add_parsers(registry)

    events = commands.add_parser("events", help="the event log").add_subparsers(dest="action", required=True)
    exported = reading("export", events, "events_export", "events as JSON lines")
    exported.add_argument("--from", dest="from_position", type=int, default=1, metavar="N")
    exported.add_argument("--types", nargs="*", default=[], metavar="TYPE")

    command(
        "rebuild",
        rebuild,
        read=False,
        help="drop every view and project it again from the log (stop servers on this database first)",
    )
    for name, help in OTHERS.items():
        if command_is(asked, name):
            from importlib import import_module

            import_module(f"services.cli.{name}").add_parser(commands)
        else:
            commands.add_parser(name, help=help, add_help=False)
    command("backup", backup, read=False, help="copy a SQLite ledger, served or not, to a new file").add_argument(
        "--to", required=True, metavar="FILE", help="the new file (never overwritten)"
    )
    if command_is(asked, "restore"):
        from services.cli import restore

        restore.add_parser(commands)
    else:
        commands.add_parser("restore", help="make a verified new SQLite ledger of a backup", add_help=False)
    return top


def command_is(asked: str | None, name: str) -> bool:
    """Whether the parser for `name` is built whole: it is the command asked for, or all are."""
    return asked is None or asked == name


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _expected(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--expected-current",
        type=int,
        default=None,
        metavar="VERSION",
        help="refuse unless this version is current (compare-and-set; 0: none; default: the current one as read now)",
    )


def _command_of(argv: Sequence[str]) -> str:
    """The command named in `argv` (its first word that is no option), "" for none."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser(_command_of(words)).parse_args(words)
    args.database = database_of(args)
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
