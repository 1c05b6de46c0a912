"""A run's tags: short key/value metadata (team=vision, sweep=lr-3) that a search names as
`tags.KEY` (ledger.views.search). Tags change with Run.TagsChanged, also after the run finished
(they describe the run, not its training); a retracted run refuses them as every other write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ledger.domain.base import Audit
from ledger.domain.errors import Conflict, Invalid
from ledger.domain.limits import check_text
from ledger.domain.reasons import Reason
from ledger.domain.runs import Run

__all__ = ["TAGS_MAX", "TAG_CHANGES_MAX", "TAG_KEY_LENGTH_MAX", "TAG_VALUE_LENGTH_MAX", "check_tags", "set_tags"]

# How many tags one run carries at most (each RunState and each listed run carries them all).
TAGS_MAX = 64
# How many keys one request sets and removes at most, together.
TAG_CHANGES_MAX = 64
TAG_KEY_LENGTH_MAX = 128
TAG_VALUE_LENGTH_MAX = 256
_KEY = re.compile(r"[A-Za-z0-9_./-]{1,128}")


def check_tags(changes: Any, removed: Any) -> tuple[dict[str, str], list[str]]:
    """The changes of one request, checked: keys of 1..128 letters, digits, `_ - . /` (INVALID_TAG),
    values text of at most 256 characters under check_text's rules, at most TAG_CHANGES_MAX keys
    in all (TOO_MANY_TAGS), no key both set and removed, at least one change (MISSING_FIELD)."""
    if not isinstance(changes, Mapping) or isinstance(removed, (str, bytes)) or not isinstance(removed, Sequence):
        raise Invalid("tags are a map of text and a list of keys", reason=Reason.INVALID_FIELD, field="tags")
    keys = [*changes, *removed]
    if len(keys) > TAG_CHANGES_MAX:
        raise Invalid(
            f"a request changes at most {TAG_CHANGES_MAX} tags, this one {len(keys)}",
            reason=Reason.TOO_MANY_TAGS,
            limit=TAG_CHANGES_MAX,
        )
    if not keys:
        raise Invalid("set or remove at least one tag", reason=Reason.MISSING_FIELD, field="tags")
    for key in keys:
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            raise Invalid(
                f"tag key {str(key)[:140]!r} is not 1 to {TAG_KEY_LENGTH_MAX} letters, digits, _ - . or /",
                reason=Reason.INVALID_TAG,
                key=str(key)[:TAG_KEY_LENGTH_MAX],
            )
    both = sorted(set(changes) & set(removed))
    if both:
        raise Invalid(f"tag {both[0]} is both set and removed", reason=Reason.INVALID_TAG, key=both[0])
    for key, value in changes.items():
        try:
            check_text(value, f"tags.{key}", limit=TAG_VALUE_LENGTH_MAX)
        except Invalid as error:
            raise Invalid(str(error), reason=Reason.INVALID_TAG, key=key) from None
    return dict(changes), list(dict.fromkeys(removed))


def set_tags(run: Run, audit: Audit, *, changes: dict[str, str], removed: list[str]) -> int | None:
    """Set and remove tags. The same request id again answers with the version of its change
    (EXISTS_WITH_DIFFERENT_PAYLOAD when the tags asked for differ); a request that changes
    nothing answers with the run's version. At most TAGS_MAX tags (TOO_MANY_TAGS)."""
    first = run.__dict__.get("tag_requests", {}).get(audit.request_id) if audit.request_id else None
    if first is not None:
        if dict(first[0]) == changes and list(first[1]) == removed:
            return int(first[2])
        raise Conflict(
            f"request {audit.request_id} changed other tags",
            reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
            request_id=audit.request_id,
        )
    tags = run.tags
    if all(tags.get(key) == value for key, value in changes.items()) and not set(removed) & set(tags):
        return run.version
    run.check_not_retracted()
    kept = {key: value for key, value in tags.items() if key not in removed}
    count = len({**kept, **changes})
    if count > TAGS_MAX:
        raise Invalid(
            f"a run carries at most {TAGS_MAX} tags; this change would leave {count}",
            reason=Reason.TOO_MANY_TAGS,
            limit=TAGS_MAX,
        )
    run.record(Run.TagsChanged, audit, set=changes, removed=removed)
    return None
