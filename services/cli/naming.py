"""How people name a run: a run id, a unique prefix of one (at least PREFIX_MIN characters), a run
name (exact; else a unique case-insensitive part of one) or the run key it was opened with.

The matching (`choose_run`) only needs a way to list runs by id prefix and by part of the name (a
`Lister`), so a command through a server (services.cli.remote.resolve_run) and one on a database
file (services.cli.local.resolve_run) name runs the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from services.cli.output import Failure

__all__ = [
    "PREFIX_MIN",
    "RUN_ID_NAMESPACE",
    "Candidate",
    "Lister",
    "MATCH_PAGE",
    "NoRun",
    "account_of",
    "choose_run",
    "is_run_id",
    "key_run_id",
]

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


class NoRun(Failure):
    """No run answers to a reference (status 1); `trainledger watch` waits for one to appear."""

    def __init__(self, ref: str, hint: str = "") -> None:
        super().__init__(f"no run {ref}{hint}", status=1)


class Candidate(NamedTuple):
    """A run a reference may mean: its id, name, status and when it was opened."""

    run_id: str
    name: str
    status: str
    opened_at: datetime | None = None


# Lists runs: (run_id_prefix, name_contains) -> every run matching both ("" matches all).
Lister = Callable[[str, str], Iterator[Candidate]]


def is_run_id(ref: str) -> bool:
    """Whether `ref` is a whole run id (a uuid), in any case."""
    return _FULL_ID.fullmatch(ref) is not None


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
    """One line: each candidate's id, name, status and opening time, and how to name one."""
    shown = "; ".join(
        f"{c.run_id} ({c.name or 'no name'}, {c.status}"
        + (f", opened {c.opened_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if c.opened_at is not None else "")
        + ")"
        for c in candidates[:CANDIDATES_SHOWN]
    )
    more = len(candidates) - CANDIDATES_SHOWN
    tail = f"; and {more}{'+' if len(candidates) >= MATCH_MAX else ''} more" if more > 0 else ""
    how = f"; name one by its run id, a unique prefix of it ({PREFIX_MIN}+ characters) or its run key"
    return Failure(f"{ref} is ambiguous: {len(candidates)} {what}: {shown}{tail}{how}", status=1)


def account_of(ref: str, account: Callable[[str], Any], missing: type[Exception], resolve: Callable[[str], str]) -> Any:
    """The account `ref` names: `account(ref)` (which raises `missing` when there is no such
    account), else the account of the run `ref` names (`resolve`: any way a run is named); "no
    account or run REF" (status 1) when neither answers."""
    try:
        return account(ref)
    except missing:
        pass
    try:
        run_id = resolve(ref)
    except Failure as failure:
        if str(failure).startswith("no run"):
            raise Failure(f"no account or run {ref}", status=1) from None
        raise
    return account(run_id)
