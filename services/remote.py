"""The client side of the CLI: how a command reaches a server, and how it names a run.

A command that talks to a server takes `--address HOST:PORT` (else TRAINLEDGER_ADDRESS, else
127.0.0.1:50051); its token and TLS settings come from the options `--token-file`, `--tls`,
`--ca-file` or, like every clients.LedgerClient, from the environment (TRAINLEDGER_TOKEN,
TRAINLEDGER_TLS, TRAINLEDGER_CA_FILE, ...). Calls are not retried: a person is waiting, so a server
that does not answer is one line on stderr naming the address (exit status 2), and an error the
server answers is its message and reason on one line (exit status 1), both as `Failure`.

Runs are named the way people remember them (`resolve_run`): a run id, a unique prefix of one (at
least 4 characters), a run name (exact; else a unique case-insensitive part of one) or the run key
it was opened with. The matching itself (`choose_run`) only needs a way to list runs by id prefix
and by part of the name, so offline inspection of a database (services.reports) names runs the
same way.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple
from uuid import UUID, uuid5

from services.reports import Failure

if TYPE_CHECKING:
    from clients import LedgerClient

__all__ = [
    "ADDRESS_DEFAULT",
    "PREFIX_MIN",
    "Candidate",
    "add_server_options",
    "address_of",
    "choose_run",
    "connect",
    "failure_of",
    "resolve_run",
    "status_text",
    "talking",
]

ADDRESS_DEFAULT = "127.0.0.1:50051"
# A shorter prefix of a uuid would match too much to mean one run.
PREFIX_MIN = 4
# The candidates an ambiguous name lists before "and N more".
CANDIDATES_SHOWN = 10
# Runs read per page while matching, and the most matching a name looks through.
MATCH_PAGE = 500
MATCH_MAX = 5_000
_ID_PREFIX = re.compile(r"[0-9a-fA-F-]+")
# ledger.domain.base.NAMESPACE (a test keeps them equal), here so that naming a run by its key
# does not load the ledger.
RUN_ID_NAMESPACE = UUID("6f1d3c52-8a4e-5b7a-9c3d-2e8f4a1b7c60")


class Candidate(NamedTuple):
    """A run a reference may mean: its id, name and status."""

    run_id: str
    name: str
    status: str


# Lists runs: (run_id_prefix, name_contains) -> every run matching both ("" matches all).
Lister = Callable[[str, str], Iterator[Candidate]]


def address_of(args: argparse.Namespace) -> str:
    """The server a command talks to: --address, else TRAINLEDGER_ADDRESS, else the default."""
    return getattr(args, "address", "") or os.environ.get("TRAINLEDGER_ADDRESS") or ADDRESS_DEFAULT


def add_server_options(sub: argparse.ArgumentParser, *, json: bool = True) -> None:
    """--address, --token-file, --tls, --ca-file (and --json)."""
    sub.add_argument(
        "--address",
        default="",
        metavar="HOST:PORT",
        help=f"the server (default: TRAINLEDGER_ADDRESS or {ADDRESS_DEFAULT})",
    )
    sub.add_argument(
        "--token-file", default="", metavar="FILE", help="a file holding the bearer token (default: TRAINLEDGER_TOKEN)"
    )
    sub.add_argument("--tls", action="store_true", help="speak TLS (default: TRAINLEDGER_TLS and the files it names)")
    sub.add_argument("--ca-file", default="", metavar="FILE", help="with TLS: the CA to trust (PEM)")
    if json:
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def connect(args: argparse.Namespace) -> LedgerClient:
    """A client of the server the options name (no retries: a person is waiting)."""
    from clients import TLS, LedgerClient

    token: str | None = None
    if getattr(args, "token_file", ""):
        try:
            with open(args.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as error:
            raise Failure(f"cannot read the token file {args.token_file}: {error.strerror or error}") from None
    tls: TLS | None = None
    if getattr(args, "ca_file", ""):
        tls = TLS(ca_file=args.ca_file)
    elif getattr(args, "tls", False):
        tls = TLS()
    try:
        return LedgerClient(address_of(args), token=token, tls=tls, timeout_s=10.0, retries=0)
    except ValueError as error:  # A TLS file that cannot be read, an address that is not one.
        raise Failure(str(error)) from None


def failure_of(error: Exception, address: str) -> Failure:
    """The one line a client error is shown as: a server that does not answer names the address
    and the way to read a database file instead (exit status 2); an answered error is its message
    and reason (exit status 1)."""
    from clients import DeadlineExceeded, LedgerClientError, Unavailable

    if isinstance(error, Unavailable | DeadlineExceeded) and error.reason in ("", "UNAVAILABLE", "DEADLINE_EXCEEDED"):
        return Failure(
            f"no ledger answers at {address} ({error.message or error.reason});"
            " start one with `trainledger serve`, pass --address HOST:PORT, or read a database file with --db PATH"
        )
    if isinstance(error, LedgerClientError):
        return Failure(f"{error.message} ({error.reason})" if error.message else error.reason, status=1)
    return Failure(str(error), status=1)


@contextmanager
def talking(args: argparse.Namespace) -> Iterator[LedgerClient]:
    """A connected client for the length of a command; client errors become one-line Failures."""
    from clients import LedgerClientError

    client = connect(args)
    try:
        yield client
    except LedgerClientError as error:
        raise failure_of(error, address_of(args)) from None
    finally:
        client.close()


def resolve_run(client: LedgerClient, ref: str) -> str:
    """The id of the run `ref` names, through the server (see `choose_run`). Raises Failure
    (status 1) for no run or an ambiguous reference; client errors propagate."""

    def lister(prefix: str, contains: str) -> Iterator[Candidate]:
        token = ""
        while True:
            page = client.list_runs(
                page_size=MATCH_PAGE, page_token=token, run_id_prefix=prefix, name_contains=contains
            )
            for run in page.runs:
                yield Candidate(run.run_id, run.name, status_text(run.status, run.current_attempt))
            token = page.next_page_token
            if not token:
                return

    return choose_run(ref, lister)


def status_text(status: str, attempt: int) -> str:
    """A run's status as people read it: a run opened with no attempt yet is not running."""
    if status in ("", "running") and attempt == 0:
        return "opened (no attempt yet)"
    return status


def choose_run(ref: str, runs: Lister) -> str:
    """The run `ref` names, in this order: a run id; a unique id prefix of at least PREFIX_MIN
    characters; the exact name of one run; the run key it was opened with; a unique
    case-insensitive part of a name. Several runs matching at the first step that matches any is
    a Failure listing them; none is "no run REF"."""
    ref = ref.strip()
    if not ref:
        raise Failure("no run given", status=1)
    if len(ref) >= PREFIX_MIN and _ID_PREFIX.fullmatch(ref):
        by_prefix = _take(runs(ref.lower(), ""))
        exact = [run for run in by_prefix if run.run_id == ref.lower()]
        if exact:
            return exact[0].run_id
        if len(by_prefix) == 1:
            return by_prefix[0].run_id
        if by_prefix:
            raise _ambiguous(ref, "runs whose id starts with it", by_prefix)
    by_name = _take(runs("", ref))
    named = [run for run in by_name if run.name == ref]
    if len(named) == 1:
        return named[0].run_id
    if named:
        raise _ambiguous(ref, "runs of that name", named)
    keyed = _by_key(ref, runs)
    if keyed is not None:
        return keyed
    if len(by_name) == 1:
        return by_name[0].run_id
    if by_name:
        raise _ambiguous(ref, "runs whose name holds it", by_name)
    raise Failure(f"no run {ref}", status=1)


def _by_key(ref: str, runs: Lister) -> str | None:
    """The run opened with run key `ref`, if any (its id is the uuid5 of the key)."""
    run_id = str(uuid5(RUN_ID_NAMESPACE, f"run:{ref}"))
    for run in runs(run_id, ""):
        if run.run_id == run_id:
            return run_id
    return None


def _take(candidates: Iterator[Candidate]) -> list[Candidate]:
    taken: list[Candidate] = []
    for candidate in candidates:
        taken.append(candidate)
        if len(taken) >= MATCH_MAX:
            break
    return taken


def _ambiguous(ref: str, what: str, candidates: list[Candidate]) -> Failure:
    shown = "; ".join(f"{c.run_id} ({c.name or 'no name'}, {c.status})" for c in candidates[:CANDIDATES_SHOWN])
    more = len(candidates) - CANDIDATES_SHOWN
    tail = f"; and {more}{'+' if len(candidates) >= MATCH_MAX else ''} more" if more > 0 else ""
    return Failure(f"{ref} is ambiguous: {len(candidates)} {what}: {shown}{tail}", status=1)
