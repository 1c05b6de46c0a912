"""The `trainledger` command: `serve`, `project`, and read commands that open the database directly.

    trainledger serve [--db PATH | --database-url URL] [--listen HOST:PORT] [--no-project]
    trainledger project --database-url URL      # a projection worker (PostgreSQL)
    trainledger runs list | runs show RUN | spend show RUN_OR_ACCOUNT
    trainledger registry list | registry show FAMILY | events export --from N | rebuild
    trainledger backup --to FILE                # a consistent copy of a SQLite ledger, served or not
    trainledger spend pull | spend reconcile    # providers' bills, through a server (services.cli_bills)

TRAINLEDGER_DATABASE_URL and --database-url override --db. Read commands print aligned tables,
or JSON with --json. A database that cannot be opened is one line on stderr and exit status 2, and
so is a listen address in use or not HOST:PORT, and a SQLite file another `serve` or `rebuild`
holds (services.holder: one SQLite file has one serving process; read commands take no lock).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from services import cli_bills, cli_tokens, cli_verify, cli_watch, reports
from services.reports import Failure
from services.tls import TLSError, add_arguments, from_arguments

__all__ = ["main", "parser"]

DATABASE_DEFAULT = "trainledger.db"
LISTEN_DEFAULT = "127.0.0.1:50051"
HTTP_DEFAULT = "127.0.0.1:8080"


def database_of(args: argparse.Namespace) -> str:
    """The database a command opens ("" for the commands that talk to a server)."""
    if not hasattr(args, "db"):
        return ""
    return args.database_url or os.environ.get("TRAINLEDGER_DATABASE_URL") or args.db


def serve(args: argparse.Namespace) -> None:
    from services.server import StartupError
    from services.server import serve as run_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
            )
        )
    except (StartupError, TLSError) as error:
        raise Failure(str(error)) from None


def project(args: argparse.Namespace) -> None:
    """A projection worker: the projector loop over a PostgreSQL database until SIGTERM or
    SIGINT. Any number of workers and servers may project one database: each event is applied
    once (ledger.storage.postgres.storage locks the views' tracking rows)."""
    from ledger import Ledger
    from ledger.backend import is_postgres_url
    from services.describe import describe
    from services.holder import HolderError, held

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
    """services.backup: a copy of a SQLite ledger taken while it may be served (no holder lock)."""
    from services.backup import BackupError
    from services.backup import backup as copy

    try:
        made = copy(args.database, args.to)
    except BackupError as error:
        raise Failure(str(error)) from None
    print(f"backed up {args.database} to {made.path}: the log up to position {made.position} ({made.size_bytes} bytes)")


def rebuild(args: argparse.Namespace) -> None:
    """`reports.rebuild` while holding a SQLite database: never under a server that projects it."""
    from services.holder import HolderError, held

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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="trainledger", description="An event-sourced ledger for training runs.")
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

    serve_parser = command("serve", serve, read=False, help="serve the gRPC API")
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
        default=HTTP_DEFAULT,
        metavar="HOST:PORT",
        help="serve the web dashboard and its JSON API here (default: %(default)s)",
    )
    serve_parser.add_argument("--no-http", action="store_true", help="serve no dashboard")
    add_arguments(serve_parser)
    command("project", project, read=False, help="run a projection worker until SIGTERM (PostgreSQL only)")

    runs = commands.add_parser("runs", help="training runs").add_subparsers(dest="action", required=True)
    listed = command("list", reports.runs_list, runs, help="list runs, newest first")
    listed.add_argument("--status", choices=("running", "done", "failed", "stopped"), default="")
    listed.add_argument("--limit", type=int, default=100)
    shown = command("show", reports.runs_show, runs, help="a run's state, attempts, checkpoints and last steps")
    shown.add_argument("run", metavar="RUN", help="run id or run key")
    shown.add_argument("--steps", type=int, default=10, help="how many of the last steps to show")

    spend = commands.add_parser("spend", help="spend accounts").add_subparsers(dest="action", required=True)
    command("show", reports.spend_show, spend, help="an account's reservations and totals").add_argument(
        "account", metavar="RUN_OR_ACCOUNT"
    )
    cli_bills.add_parsers(spend)

    registry = commands.add_parser("registry", help="model registry").add_subparsers(dest="action", required=True)
    command("list", reports.registry_list, registry, help="families and their current versions")
    command("show", reports.registry_show, registry, help="a family's versions and history").add_argument(
        "family", metavar="FAMILY"
    )

    events = commands.add_parser("events", help="the event log").add_subparsers(dest="action", required=True)
    exported = command("export", reports.events_export, events, read=False, help="events as JSON lines")
    exported.add_argument("--from", dest="from_position", type=int, default=1, metavar="N")
    exported.add_argument("--types", nargs="*", default=[], metavar="TYPE")

    command(
        "rebuild",
        rebuild,
        read=False,
        help="drop every view and project it again from the log (stop servers on this database first)",
    )
    cli_verify.add_parser(commands)
    cli_tokens.add_parser(commands)
    cli_watch.add_parser(commands)
    command("backup", backup, read=False, help="copy a SQLite ledger, served or not, to a new file").add_argument(
        "--to", required=True, metavar="FILE", help="the new file (never overwritten)"
    )
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.database = database_of(args)
    try:
        args.handler(args)
    except Failure as failure:
        print(f"trainledger: {failure}", file=sys.stderr)
        return failure.status
    except BrokenPipeError:  # `trainledger events export | head`
        sys.stderr.close()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
