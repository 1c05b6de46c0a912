"""The fields a run search can name, and what each is made of (ledger.views.search.compile turns
them into SQL).

- `spec.KEY`, `summary.KEY`, `tags.KEY`: a value of the run's spec (given at OpenRun), of its
  summary (FinishRun, NoteSummary) or a tag; a nested key is dotted (`spec.lora.r`), a key that is
  not letters, digits and `_` is quoted in backticks (spec.`warmup-steps`). Each is a number, a
  string or true/false (view_run_fields); a comparison holds only where the run has the key with
  a value of the literal's kind (`spec.lr > 3` never holds for a run whose lr is a string).
- `metrics.NAME.last`, `.min`, `.max`: the last value the run recorded of a metric (at its latest
  attempt and step), its least and its greatest (view_run_metrics). A dotted or odd name is
  quoted: metrics.`train/loss`.min.
- Run fields: status (running, done, failed, stopped, lost), name, account (the account the run's spend
  rolls up to; absent when none), attempts (how many were started), started and finished (times:
  a time literal or a quoted ISO 8601 time, UTC unless it says otherwise), elapsed (finished, or
  now while running, less started: a duration, or a number of seconds), spend_committed_usd_micro
  and cap_usd_micro (integer micro-dollars), spend_committed_usd and cap_usd (the same in dollars,
  a literal of at most 6 decimal places, compared exactly as micro-dollars: never a float).

Field names are ASCII; a name that is not is refused (INVALID_QUERY) at its first other
character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledger.domain.runs import RUN_STATUSES
from ledger.views.search.grammar import invalid_query
from trainledger.fields import key_segment

__all__ = ["DOCUMENTS", "METRIC_STATS", "RUN_FIELDS", "STATUSES", "Field", "RunField", "key_segment", "resolve"]

#: The documents whose keys a search reaches, by the prefix that names them.
DOCUMENTS = ("spec", "summary", "tags")
METRIC_STATS = ("last", "min", "max")
#: Every status a run can have (a run whose attempt's lease lapsed is lost until it writes again).
STATUSES = RUN_STATUSES


@dataclass(frozen=True, slots=True)
class RunField:
    """A field of the run itself: the literal it takes (string, number, time, duration, usd), its
    SQL over view_runs r and view_accounts a (`?` stands for the query's now, in seconds), and
    whether a run may lack it."""

    takes: str
    sql: str
    nullable: bool


RUN_FIELDS: dict[str, RunField] = {
    "status": RunField("string", "r.status", False),
    "name": RunField("string", "r.name", False),
    "account": RunField("string", "NULLIF(a.parent, '')", True),
    "attempts": RunField("number", "COALESCE(r.current_attempt, 0)", False),
    "started": RunField("time", "r.opened_at", False),
    "finished": RunField("time", "r.finished_at", True),
    "elapsed": RunField("duration", "(COALESCE(r.finished_at, ?) - r.opened_at)", False),
    "spend_committed_usd_micro": RunField("number", "COALESCE(a.committed, 0)", False),
    "spend_committed_usd": RunField("usd", "COALESCE(a.committed, 0)", False),
    "cap_usd_micro": RunField("number", "a.cap", True),
    "cap_usd": RunField("usd", "a.cap", True),
}


@dataclass(frozen=True, slots=True)
class Field:
    """A resolved field: `source` is document (key: the row's key in view_run_fields, e.g.
    "spec.lora.r"), metric (key: the metric's name, stat: last, min or max) or run (key: the
    run field's name)."""

    name: str
    source: str
    key: str
    stat: str = ""

    @property
    def run(self) -> RunField:
        return RUN_FIELDS[self.key]


_SEGMENT = re.compile(r"`([^`]*)`|(\w+)", re.ASCII)
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")
_EXPECTED_FIELD = "spec.KEY, summary.KEY, tags.KEY, metrics.NAME.last|min|max or one of " + ", ".join(RUN_FIELDS)


def _segments(name: str, position: int) -> list[str]:
    """The dot-separated parts of `name`, backticks unquoted."""
    parts, at = [], 0
    while at <= len(name):
        found = _SEGMENT.match(name, at)
        if found is None or (found.group(1) is not None and not found.group(1)):
            raise invalid_query(f"field {name!r} has an empty key", position + at, "a key")
        parts.append(found.group(1) if found.group(1) is not None else found.group(2))
        at = found.end() + 1
    return parts


def resolve(name: str, position: int) -> Field:
    """The field `name` names (written at `position`); INVALID_QUERY when none."""
    odd = _NOT_ASCII.search(name)
    if odd is not None:
        raise invalid_query(
            f"field {name!r} is not ASCII ({odd.group()!r})", position + odd.start(), "an ASCII field name"
        )
    parts = _segments(name, position)
    head = parts[0].lower()
    if head in DOCUMENTS and len(parts) > 1:
        # A part never holds a backtick (the grammar's FIELD has none inside one), so each has a segment.
        return Field(name, "document", ".".join([head, *(key_segment(part) or part for part in parts[1:])]))
    if head == "metrics" and len(parts) > 2:
        stat = parts[-1].lower()
        if stat not in METRIC_STATS:
            at = position + len(name) - len(parts[-1])
            raise invalid_query(f"{parts[-1]!r} is not a metric statistic", at, "last, min or max")
        return Field(name, "metric", ".".join(parts[1:-1]), stat)
    if len(parts) == 1 and head in RUN_FIELDS:
        return Field(name, "run", head)
    if head in DOCUMENTS or head == "metrics":
        shape = "metrics.NAME.last|min|max" if head == "metrics" else f"{head}.KEY"
        raise invalid_query(f"field {name!r} names no key", position, shape)
    raise invalid_query(f"unknown field {name!r}", position, _EXPECTED_FIELD)
