"""The client side of the CLI: how a command reaches a server, and how it names a run.

A command that talks to a server takes `--address HOST:PORT` (else TRAINLEDGER_ADDRESS, else
127.0.0.1:50051); its token and TLS settings come from the options `--token-file`, `--tls`,
`--ca-file` or, like every clients.LedgerClient, from the environment (TRAINLEDGER_TOKEN,
TRAINLEDGER_TLS, TRAINLEDGER_CA_FILE, ...). A person is waiting, so a server that does not answer
is tried again for OUTAGE_S only, then is one line on stderr naming the address (exit status 2);
an error the server answers is its message and reason on one line (exit status 1; 3 when it
refuses the token itself), both as `Failure`.

Runs are named the way people remember them (`resolve_run`): a run id, a unique prefix of one (at
least 4 characters), a run name (exact; else a unique case-insensitive part of one) or the run key
it was opened with. The matching itself (`choose_run`) only needs a way to list runs by id prefix
and by part of the name, so offline inspection of a database (services.cli.local) names runs the
same way.

The commands through a server: the reads (`runs_list`, `runs_show`, `spend_show`,
`registry_list`, `registry_show`, `events_export`) and `runs_retract` print what services.cli.local
prints from a database file (services.render). The writes operators make by hand (`spend_cap`,
`runs_retract`, `registry_register`, `registry_promote`, `registry_rollback`) are recorded with the
operating-system user as principal unless a token names one. Promote and rollback are
compare-and-set on the current version
(--expected-current; by default the current version as read just before).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from services import render
from services.cli.local import Failure
from services.render import status_text
from services.render.tables import to_json

if TYPE_CHECKING:
    from clients import LedgerClient

__all__ = [
    "ADDRESS_DEFAULT",
    "PREFIX_MIN",
    "Candidate",
    "add_server_options",
    "address_of",
    "choose_run",
    "NoRun",
    "connect",
    "failure_of",
    "resolve_run",
    "talking",
    "runs_list",
    "runs_show",
    "spend_show",
    "spend_cap",
    "registry_list",
    "registry_show",
    "registry_promote",
    "registry_rollback",
    "registry_register",
    "runs_retract",
    "events_export",
]

ADDRESS_DEFAULT = "127.0.0.1:50051"
# Each call's deadline, and how long a server that does not answer is tried again: a person is
# waiting, so a restart of a second or two is ridden out and nothing longer.
TIMEOUT_S = 10.0
OUTAGE_S = 2.0
# A shorter prefix of a uuid would match too much to mean one run.
PREFIX_MIN = 4
# The candidates an ambiguous name lists before "and N more".
CANDIDATES_SHOWN = 10
# Runs read per page while matching, and the most matching a name looks through.
MATCH_PAGE = 500
MATCH_MAX = 5_000
_ID_PREFIX = re.compile(r"[0-9a-fA-F-]+")
_FULL_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# ledger.domain.base.NAMESPACE (a test keeps them equal), here so that naming a run by its key
# does not load the ledger.
RUN_ID_NAMESPACE = "6f1d3c52-8a4e-5b7a-9c3d-2e8f4a1b7c60"


# The exit status of a command whose token the server refuses (UNAUTHENTICATED): a script tells a
# credential to replace from a failed run (1) and a server that does not answer (2).
AUTH_STATUS = 3


class NoRun(Failure):
    """No run answers to a reference (status 1); `trainledger watch` waits for one to appear."""

    def __init__(self, ref: str, hint: str = "") -> None:
        super().__init__(f"no run {ref}{hint}", status=1)


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
    sub.add_argument("--ca-file", default="", metavar="FILE", help="TLS: the CA to trust (PEM; TRAINLEDGER_CA_FILE)")
    sub.add_argument(
        "--cert-file", default="", metavar="FILE", help="mutual TLS: the client certificate (TRAINLEDGER_CERT_FILE)"
    )
    sub.add_argument("--key-file", default="", metavar="FILE", help="mutual TLS: its key (PEM; TRAINLEDGER_KEY_FILE)")
    sub.add_argument(
        "--tls-server-name",
        default="",
        metavar="NAME",
        help="TLS: the name the server's certificate carries (TRAINLEDGER_TLS_SERVER_NAME)",
    )
    if json:
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def connect(args: argparse.Namespace) -> LedgerClient:
    """A client of the server the options name, who runs the command as its principal."""
    from clients import LedgerClient

    token: str | None = None
    if getattr(args, "token_file", ""):
        try:
            with open(args.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as error:
            raise Failure(f"cannot read the token file {args.token_file}: {error.strerror or error}") from None
        except UnicodeDecodeError:
            token = "\x00"  # Not text: refused just below, naming the file.
        if any(character.isspace() or not character.isprintable() for character in token):
            raise Failure(
                f"the token file {args.token_file} holds more than a token: a bearer token is one word of"
                " printable characters (the first line `trainledger tokens create` prints)"
            )
    try:
        return LedgerClient(
            address_of(args),
            principal=_user(),
            token=token,
            tls=_tls(args),
            timeout_s=TIMEOUT_S,
            outage_budget_s=OUTAGE_S,
        )
    except ValueError as error:  # A TLS file that cannot be read, an address that is not one.
        raise Failure(str(error)) from None


def _tls(args: argparse.Namespace) -> Any:
    """The TLS of the options, each over its environment variable (clients.TLS.from_environment):
    a flag replaces its variable, the others stay. None (plaintext) when neither asks for TLS."""
    from clients import TLS

    given = {name: getattr(args, option, "") for name, (option, _) in _TLS_OPTIONS.items()}
    switch = os.environ.get("TRAINLEDGER_TLS", "").strip().lower()
    off = switch in ("0", "false", "no", "off")  # Off whatever the other variables say.
    environ = {name: "" if off else os.environ.get(variable, "") for name, (_, variable) in _TLS_OPTIONS.items()}
    files = ("ca_file", "cert_file", "key_file")
    wanted = getattr(args, "tls", False) or (switch != "" and not off) or any(environ[n] for n in files)
    if not (wanted or any(given.values())):
        return None
    try:
        return TLS(**{name: given[name] or environ[name] for name in _TLS_OPTIONS})
    except ValueError:
        raise Failure(
            "a client certificate needs both --cert-file and --key-file"
            " (or TRAINLEDGER_CERT_FILE and TRAINLEDGER_KEY_FILE)"
        ) from None


_TLS_OPTIONS = {
    "ca_file": ("ca_file", "TRAINLEDGER_CA_FILE"),
    "cert_file": ("cert_file", "TRAINLEDGER_CERT_FILE"),
    "key_file": ("key_file", "TRAINLEDGER_KEY_FILE"),
    "server_name": ("tls_server_name", "TRAINLEDGER_TLS_SERVER_NAME"),
}


def _user() -> str:
    """Who runs the command, recorded on what it writes when no token says who (a token does)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def failure_of(error: Exception, address: str) -> Failure:
    """The one line a client error is shown as: a server that does not answer names the address
    and the way to read a database file instead (exit status 2); an answered error is its message
    and reason (exit status 1; AUTH_STATUS when the server refuses the token itself: missing,
    invalid, expired or revoked)."""
    from clients import DeadlineExceeded, LedgerClientError, Unauthenticated, Unavailable

    if isinstance(error, Unavailable | DeadlineExceeded) and error.reason in ("", error.code.name):
        message = error.message or error.reason
        for python, flags in _IN_FLAGS:
            message = message.replace(python, flags)
        if "TLS" in message:  # Something answered: the way the client speaks to it is at fault.
            return Failure(f"cannot talk to the ledger at {address} ({message})")
        return Failure(
            f"no ledger answers at {address} ({message});"
            " start one with `trainledger serve`, pass --address HOST:PORT, or read a database file with --db PATH"
        )
    if isinstance(error, LedgerClientError):
        status = AUTH_STATUS if isinstance(error, Unauthenticated) else 1
        return Failure(f"{error.message} ({error.reason})" if error.message else error.reason, status=status)
    return Failure(str(error), status=1)


# The client's hints (clients.transport.explained) name its Python arguments; a command's, its flags.
_IN_FLAGS = (
    ("tls=TLS(cert_file=..., key_file=...)", "--cert-file FILE --key-file FILE"),
    ("tls=TLS(ca_file=...)", "--ca-file FILE"),
    ("TLS(server_name=...)", "--tls-server-name NAME"),
    ("tls=True", "--tls"),
)


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
    """The id of the run `ref` names, through the server (see `choose_run`). A whole run id is
    looked up by a read of that run first, so a token that may read the run but not list runs
    (a trainer's) finds it; such a token is told to name a run by its id or run key, which it may
    read. Raises Failure (status 1) for no run or an ambiguous reference; client errors propagate."""
    from clients import PermissionDenied
    from ledger.domain.reasons import Reason

    if _FULL_ID.fullmatch(ref.strip()) and _readable(client, ref.strip().lower()):
        return ref.strip().lower()
    try:
        return choose_run(ref, _lister(client))
    except PermissionDenied as error:
        if error.reason != Reason.ROLE_NOT_ALLOWED:
            raise
        keyed = key_run_id(ref.strip())
        if _readable(client, keyed):
            return keyed
        hint = " this token may read: it cannot list runs, so name a run by its run id or run key"
        raise NoRun(ref.strip(), hint) from None


def _readable(client: LedgerClient, run_id: str) -> bool:
    """Whether run `run_id` exists and the caller may read it (a scoped token is told "outside
    the scope" of a run that does not exist too)."""
    from clients import NotFound, PermissionDenied
    from ledger.domain.reasons import Reason

    try:
        client.get_run_state(run_id=run_id)
    except NotFound:
        return False
    except PermissionDenied as error:
        if error.reason == Reason.OUTSIDE_SCOPE:
            return False
        raise
    return True


def _lister(client: LedgerClient) -> Lister:
    """The runs the server lists by id prefix and part of the name, page by page."""

    def lister(prefix: str, contains: str) -> Iterator[Candidate]:
        token = ""
        while True:
            page = client.list_runs(
                page_size=MATCH_PAGE,
                page_token=token,
                run_id_prefix=prefix,
                name_contains=contains,
                include_retracted=True,
            )
            for run in page.runs:
                yield Candidate(run.run_id, run.name, status_text(run.status, run.current_attempt))
            token = page.next_page_token
            if not token:
                return

    return lister


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
    raise NoRun(ref)


def _by_key(ref: str, runs: Lister) -> str | None:
    """The run opened with run key `ref`, if any (its id is the uuid5 of the key)."""
    run_id = key_run_id(ref)
    for run in runs(run_id, ""):
        if run.run_id == run_id:
            return run_id
    return None


def key_run_id(run_key: str) -> str:
    """The id of the run opened with `run_key` (the uuid5 of the key)."""
    from uuid import UUID, uuid5  # Here: the parser does not need it.

    return str(uuid5(UUID(RUN_ID_NAMESPACE), f"run:{run_key}"))


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


# The read and write commands through a server. Each handler takes the parsed arguments.

RUNS_PAGE = 500
SERIES_PAGE_MAX = 10_000
EVENTS_PAGE = 1_000


def _emit(args: argparse.Namespace, value: Any, text: str | Callable[[], str]) -> None:
    print(to_json(value) if args.json else (text if isinstance(text, str) else text()))


def runs_list(args: argparse.Namespace) -> None:
    """Runs newest first, filtered by status, part of the name and account; at most --limit."""
    runs: list[Any] = []
    more = False
    with talking(args) as client:
        token = ""
        while len(runs) < args.limit:
            page = client.list_runs(
                page_size=min(RUNS_PAGE, args.limit - len(runs)),
                page_token=token,
                status=args.status,
                name_contains=args.name,
                account=args.account,
                include_retracted=args.include_retracted,
            )
            runs += page.runs
            token = page.next_page_token
            if not token:
                break
        more = bool(token)
    hint = f"\n(more runs: --limit {args.limit * 2})" if more else ""
    _emit(args, runs, lambda: (render.runs_table(runs) if runs else "(no run)") + hint)


def runs_show(args: argparse.Namespace) -> None:
    """A run's state, spec, metrics, checkpoints, attempts and last steps."""
    with talking(args) as client:
        run_id = resolve_run(client, args.run)
        state = client.get_run_state(run_id=run_id)
        position = state.position
        metrics = client.get_metrics(run_id=run_id, min_position=position)
        checkpoints: list[Any] = []
        token = ""
        while True:
            page = client.list_checkpoints(run_id=run_id, page_token=token, min_position=position)
            checkpoints += page.checkpoints
            token = page.next_page_token
            if not token:
                break
        series = _last_steps(client, run_id, state.last_step, args.steps, position)
    value = {"state": state, "metrics": metrics, "checkpoints": checkpoints, "series": series}
    _emit(args, value, lambda: render.run_text(state, metrics, checkpoints, series))


def runs_retract(args: argparse.Namespace) -> None:
    """Retract a run (operators): hidden from lists, refused new writes, its history kept."""
    with talking(args) as client:
        run_id = resolve_run(client, args.run)
        receipt = client.retract_run(run_id=run_id, reason=args.reason)
        name = client.get_run_state(run_id=run_id, min_position=receipt.position).run.name
    _emit(args, receipt, render.retract_text(run_id, name, receipt.position, receipt.duplicate))


def _last_steps(client: LedgerClient, run_id: str, last: int | None, count: int, position: int) -> Any:
    """The last `count` steps of the run's live line (none when count is 0 or no step is)."""
    from clients.models import SeriesPage

    count = max(0, min(count, SERIES_PAGE_MAX))
    if count == 0 or last is None:
        return SeriesPage()
    return client.get_series(run_id=run_id, from_step=max(0, last - count + 1), page_size=count, min_position=position)


def _account(client: LedgerClient, ref: str) -> Any:
    """The account `ref` names: an account, else a run's (any way resolve_run takes)."""
    from clients import NotFound

    try:
        return client.get_account(account=ref)
    except NotFound:
        pass
    try:
        run_id = resolve_run(client, ref)
    except Failure as failure:
        if str(failure).startswith("no run"):
            raise Failure(f"no account or run {ref}", status=1) from None
        raise
    return client.get_account(account=run_id)


def spend_show(args: argparse.Namespace) -> None:
    """An account's totals and a page of its reservations (--limit, --page)."""
    with talking(args) as client:
        account = _account(client, args.account)
        page = client.list_reservations(account=account.account, page_size=args.limit, page_token=args.page)
        if (
            page.next_page_token
            and not client.list_reservations(
                account=account.account, page_size=1, page_token=page.next_page_token
            ).reservations
        ):
            page = type(page)(reservations=page.reservations)  # A full last page: nothing follows.
    more = (
        f"(more reservations: trainledger spend show {args.account} --page {page.next_page_token})"
        if page.next_page_token
        else ""
    )
    value = {"account": account, "reservations": page.reservations, "next_page_token": page.next_page_token}
    _emit(args, value, lambda: render.account_text(account, page.reservations, more))


def spend_cap(args: argparse.Namespace) -> None:
    """Set (or with "none" lift) the cap of an account or a run."""
    cap = cap_of(args.amount)
    with talking(args) as client:
        account = _account(client, args.account)
        receipt = client.set_cap(account=account.account, cap_usd_micro=cap)
        run_name = _run_name(client, account.account)
    after = receipt.account or account
    _emit(args, receipt, lambda: render.cap_text(after, receipt.position, run_name))


def _run_name(client: LedgerClient, account: str) -> str | None:
    """The name of the run whose account is `account` (named by the run's id), None for an
    account of no run."""
    from uuid import UUID  # Here: the parser does not need it.

    from clients import NotFound

    try:
        UUID(account)
        return client.get_run_state(run_id=account).run.name
    except (ValueError, NotFound):
        return None


def cap_of(text: str) -> int | None:
    """A cap as typed: dollars ("25", "12.50", "$1,000") to micro-dollars, "none" for no cap."""
    from trainledger.bills import usd_micro_from_text

    if text.strip().lower() in ("none", "no", "-"):
        return None
    try:
        micro = usd_micro_from_text(text)
    except ValueError as error:
        raise Failure(f"{error} (a cap is dollars, like 25 or 12.50, or none)") from None
    if micro < 0:
        raise Failure(f"a cap cannot be negative: {text}")
    return micro


def registry_list(args: argparse.Namespace) -> None:
    families: list[Any] = []
    with talking(args) as client:
        token = ""
        while True:
            page = client.list_families(page_token=token)
            families += page.families
            token = page.next_page_token
            if not token:
                break
    _emit(args, families, lambda: render.families_table(families) if families else "(no family)")


def _family(client: LedgerClient, family: str) -> tuple[int, list[Any], list[Any], Any]:
    """(current, versions, history, last page: its aliases and retirement) of a family, every page."""
    versions: list[Any] = []
    history: list[Any] = []
    token = ""
    while True:
        page = client.list_versions(family=family, page_token=token)
        versions += page.versions
        history += page.history
        token = page.next_page_token
        if not token:
            return page.current, versions, history, page


def registry_show(args: argparse.Namespace) -> None:
    with talking(args) as client:
        current, versions, history, page = _family(client, args.family)
    if not versions:
        raise Failure(f"no family {args.family}", status=1)
    value = {
        "family": args.family,
        "current": current,
        "versions": versions,
        "history": history,
        "aliases": page.aliases,
        "retired": page.retired,
    }
    _emit(
        args,
        value,
        lambda: render.family_text(args.family, current, versions, history, page.aliases, page.retired),
    )


def registry_register(args: argparse.Namespace) -> None:
    """Register a version of a family: from a run's checkpoint (--from-checkpoint RUN:STEP or RUN@STEP, its
    digest checked by the ledger), from a run and step (--source-run, not checked) or alone."""
    from clients.models import SourceCheckpoint

    metadata = _metadata_of(args.metadata)
    with talking(args) as client:
        source: SourceCheckpoint | None = None
        run_id, step, described = "", 0, ""
        if args.from_checkpoint:
            ref, step = _run_at_step(args.from_checkpoint)
            run_id = resolve_run(client, ref)
            digest = args.checkpoint_digest or _checkpoint_digest(client, run_id, step)
            source = SourceCheckpoint(run_id=run_id, step=step, checkpoint_digest=digest)
            run_id, step, described = "", 0, f"run {ref}'s checkpoint at step {step}"
        elif args.source_run:
            run_id, step = resolve_run(client, args.source_run), args.source_step
            described = f"run {args.source_run} at step {step}"
        receipt = client.register(
            family=args.family,
            artifact_uri=args.artifact_uri,
            digest=args.digest,
            source_run_id=run_id,
            source_step=step,
            metadata=metadata,
            source_checkpoint=source,
        )
    _emit(
        args,
        receipt,
        render.register_text(args.family, receipt.version, receipt.position, receipt.duplicate, described),
    )


def _metadata_of(text: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        metadata = json.loads(text)
    except ValueError as error:
        raise Failure(f"--metadata is not JSON: {error}") from None
    if not isinstance(metadata, dict):
        raise Failure("--metadata takes a JSON object")
    return metadata


def _run_at_step(text: str) -> tuple[str, int]:
    """RUN@STEP (or RUN:STEP) as (RUN, STEP)."""
    cut = max(text.rfind("@"), text.rfind(":"))
    ref, step = text[: max(cut, 0)], text[cut + 1 :]
    if cut < 0 or not ref or not step.isdigit():
        raise Failure(f"--from-checkpoint takes RUN@STEP or RUN:STEP, not {text!r}")
    return ref, int(step)


def _checkpoint_digest(client: LedgerClient, run_id: str, step: int) -> str:
    """The digest the usable checkpoint at `step` was saved with (the one a resume would take)."""
    token, found = "", []
    while True:
        page = client.list_checkpoints(run_id=run_id, page_token=token)
        found += [c for c in page.checkpoints if c.step == step]
        token = page.next_page_token
        if not token:
            break
    usable = [c for c in found if not c.superseded and c.deleted_at is None]
    if not usable:
        raise Failure(f"run {run_id} has no usable checkpoint at step {step}", status=1)
    if not usable[-1].digest:
        raise Failure(f"the checkpoint at step {step} was saved without a digest: pass --checkpoint-digest", status=1)
    return str(usable[-1].digest)


def verdict_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The gate verdict a promotion asserts: --gate-json FILE, or --passed/--failed, --reason and
    --stat KEY=VALUE (values read as JSON when they are JSON: 0.91, true, "text"); None with
    --gate-rule, which the ledger evaluates itself."""
    if getattr(args, "gate_rule", ""):
        return None
    if args.gate_json:
        try:
            with open(args.gate_json, encoding="utf-8") as file:
                verdict = json.load(file)
        except (OSError, ValueError) as error:
            raise Failure(f"cannot read the gate verdict {args.gate_json}: {error}") from None
        if not isinstance(verdict, dict) or not isinstance(verdict.get("passed"), bool):
            raise Failure(f'{args.gate_json}: a gate verdict is {{"passed": true|false, "reason": ..., "stats": {{}}}}')
        return verdict
    stats: dict[str, Any] = {}
    for pair in args.stat:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise Failure(f"--stat takes KEY=VALUE, not {pair!r}")
        try:
            stats[key] = json.loads(text)
        except ValueError:
            stats[key] = text
    return {"passed": bool(args.passed), "reason": args.reason, "stats": stats}


def registry_promote(args: argparse.Namespace) -> None:
    """Make a version current through its gate, by compare-and-set on the current version: a gate
    rule the ledger evaluates (--gate-rule, on the version's source checkpoint's scores or
    --eval-run's summary), or a verdict asserted here. A refusal is recorded by the ledger."""
    verdict = verdict_of(args)
    if getattr(args, "eval_run", "") and not getattr(args, "gate_rule", ""):
        raise Failure("--eval-run goes with --gate-rule")
    with talking(args) as client:
        expected = args.expected_current
        if expected is None:
            expected = client.list_versions(family=args.family, page_size=1).current
        evaluation_run_id = resolve_run(client, args.eval_run) if getattr(args, "eval_run", "") else ""
        receipt = client.promote(
            family=args.family,
            version=args.version,
            expected_current=expected,
            verdict=verdict,
            gate_rule=getattr(args, "gate_rule", ""),
            evaluation_run_id=evaluation_run_id,
        )
    moved = render.move_text(
        "promoted", args.family, receipt.current, receipt.previous, receipt.position, receipt.duplicate
    )
    gate = render.verdict_text(receipt.verdict)
    _emit(args, receipt, moved + (f"\ngate: {gate}" if gate else ""))


def registry_rollback(args: argparse.Namespace) -> None:
    """Make a version current again that was current before (default: the previous current)."""
    with talking(args) as client:
        current, _, history, _ = _family(client, args.family)
        expected = current if args.expected_current is None else args.expected_current
        version = args.version if args.version is not None else _previous(history, current)
        if version is None:
            raise Failure(f"{args.family}: no version was current before; name the version", status=1)
        receipt = client.rollback(family=args.family, version=version, expected_current=expected, reason=args.reason)
    _emit(
        args,
        receipt,
        render.move_text(
            "rolled back", args.family, receipt.current, receipt.previous, receipt.position, receipt.duplicate
        ),
    )


def _previous(history: list[Any], current: int) -> int | None:
    """The version current before `current` (what the latest move replaced); refused promotions
    never made a version current."""
    moved = next((p for p in reversed(history) if p.kind != "refused"), None)
    return moved.previous if moved is not None and 0 < moved.previous != current else None


def events_export(args: argparse.Namespace) -> None:
    """The log from --from as JSON lines, as the server sends it (each event with its digest),
    page by page."""
    from clients import InvalidArgument

    with talking(args) as client:
        position = max(1, args.from_position)
        while True:
            count = 0
            try:
                events = list(client.read_events(from_position=position, limit=EVENTS_PAGE, types=args.types))
            except InvalidArgument as refused:
                from ledger.domain.reasons import Reason
                from ledger.domain.topics import event_topics, unknown_types_text

                if refused.reason != Reason.UNKNOWN_EVENT_TYPE:
                    raise

                unknown = [name for name in args.types if not event_topics(name)]
                raise Failure(unknown_types_text(unknown) if unknown else refused.message, status=2) from None
            for event in events:
                sys.stdout.write(to_json(event, indent=None) + "\n")
                position = event.position + 1
                count += 1
            if count < EVENTS_PAGE:
                return
