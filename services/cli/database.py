"""The commands on a database itself: `serve` it (the gRPC API and the dashboard), `project` it (a
projection worker, PostgreSQL), `rebuild` its views from the log and `backup` a SQLite ledger; and
`database_of`, the database a command opens.

    trainledger serve [--db PATH | --database-url URL] [--listen HOST:PORT] [--http HOST:PORT | --no-http]
                      [--metrics HOST:PORT] [--no-metrics] [--log-format text|json]
    trainledger project --database-url URL      # a projection worker (PostgreSQL)
    trainledger rebuild | backup --to FILE
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from services.cli.options import DefaultDatabase, command_is, database_options
from services.cli.output import Failure

__all__ = ["add_backup_parser", "add_rebuild_parser", "add_serve_parsers", "database_of"]

LISTEN_DEFAULT = "127.0.0.1:50051"
HTTP_DEFAULT = "127.0.0.1:8080"


def _command(commands: Any, name: str, handler: Any, help: str) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = commands.add_parser(name, help=help)
    database_options(sub, read=False)
    sub.set_defaults(handler=handler)
    return sub


def add_serve_parsers(commands: Any, asked: str | None) -> None:
    """Add `serve` and `project` to the CLI's commands (the TLS and dashboard options of `serve`
    only when it is `asked` for)."""
    serve_parser = _command(commands, "serve", serve, "serve the gRPC API and the web dashboard")
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
    _command(commands, "project", project, "run a projection worker until SIGTERM (PostgreSQL only)")


def add_rebuild_parser(commands: Any) -> None:
    _command(
        commands,
        "rebuild",
        rebuild,
        help="drop every view and project it again from the log (stop servers on this database first)",
    )


def add_backup_parser(commands: Any) -> None:
    _command(commands, "backup", backup, help="copy a SQLite ledger, served or not, to a new file").add_argument(
        "--to", required=True, metavar="FILE", help="the new file (never overwritten)"
    )


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
    """`services.cli.local.rebuild` while holding a SQLite database: never under a server that projects it."""
    from services.cli import local
    from services.runtime.holder import HolderError, held

    if "://" not in args.database and not os.path.exists(args.database):
        local.rebuild(args)  # Reports the missing file; creates nothing.
        return
    try:
        with held(args.database, "rebuild"):
            local.rebuild(args)
    except HolderError as error:
        raise Failure(str(error)) from None
