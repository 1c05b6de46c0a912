"""A run's tags and the run search as client methods (the Runs RPCs SetTags, and ListRuns with a
search: docs/search.md); each takes `timeout_s`, the per-try deadline (the client's default when
None)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clients import codec
from clients.methods import Transport, reply
from clients.models import RunPage, SummaryReceipt
from trainledger.v1 import runs_pb2

__all__ = ["TagsMethods"]


class TagsMethods(Transport):
    def set_tags(
        self, run_id: str, tags: Mapping[str, str], *, remove: Sequence[str] = (), timeout_s: float | None = None
    ) -> SummaryReceipt:
        """Set the run's `tags` (key: value) and remove the keys `remove`, also after it finished:
        the position. A key is 1..128 letters, digits, _ - . or /, a value at most 256 characters;
        a run carries at most 64 tags (InvalidArgument INVALID_TAG, TOO_MANY_TAGS)."""
        request = runs_pb2.SetTagsRequest(run_id=run_id, set=dict(tags), remove=list(remove))
        return self._ask("Runs", "SetTags", request, reply(SummaryReceipt), timeout_s=timeout_s)

    def remove_tags(self, run_id: str, keys: Sequence[str], *, timeout_s: float | None = None) -> SummaryReceipt:
        """Remove the run's tags `keys` (a key it does not carry is no change): the position."""
        return self.set_tags(run_id, {}, remove=keys, timeout_s=timeout_s)

    def search_runs(
        self,
        where: str = "",
        *,
        order_by: str = "",
        descending: bool = False,
        page_size: int = 0,
        page_token: str = "",
        status: str = "",
        name_contains: str = "",
        account: str = "",
        include_retracted: bool = False,
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> RunPage:
        """A page of the runs the search `where` selects (docs/search.md), in `order_by`'s order
        (a field, optionally then asc or desc; newest first when empty); pass next_page_token back
        for the next page. The list_runs filters given are ANDed with `where`. A query refused is
        InvalidArgument INVALID_QUERY or QUERY_TOO_LARGE, its metadata the position of the fault."""
        request = runs_pb2.ListRunsRequest(
            where=where,
            order_by=order_by,
            descending=descending,
            page_size=page_size,
            page_token=page_token,
            status=codec.status(status),
            name_contains=name_contains,
            account=account,
            include_retracted=include_retracted,
            min_position=min_position,
        )
        return self._ask("Runs", "ListRuns", request, reply(RunPage), timeout_s=timeout_s)
