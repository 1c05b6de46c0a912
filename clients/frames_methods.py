"""`runs_frame` and `series_frame`: runs and series as pandas DataFrames (the `frames` extra), on
LedgerClient (`FrameReads`) and awaited on AsyncLedgerClient (`AsyncFrameReads`). The rows and
columns are clients.frames'; this module reads every page the server answers to make them.

A runs frame reads the search's pages, then each run's state (its finished time, spec and
summary are not part of a list's page): one GetRunState per run, hence the lower max_rows."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar, cast

from clients.frames import RunsGathered, SeriesGathered, run_record, runs_frame_of
from clients.integrations.extras import extra
from clients.methods_ledger import LedgerMethods

__all__ = ["AsyncFrameReads", "FrameReads", "RUNS_FRAME_ROWS_MAX", "SERIES_FRAME_ROWS_MAX"]

#: The most runs a runs frame holds unless told otherwise (each costs one read of its state).
RUNS_FRAME_ROWS_MAX = 10_000
#: The most (step, attempt) rows a series frame holds unless told otherwise.
SERIES_FRAME_ROWS_MAX = 1_000_000
# The runs and the steps one read asks for (the server's largest page).
PAGE_SIZE_MAX = 10_000

T = TypeVar("T")


def _pandas() -> None:
    """Fail before any read when the frames extra is missing (MissingExtra names it)."""
    with extra("frames"):
        import pandas  # noqa: F401


class FrameReads(LedgerMethods):
    """The frames of the blocking client."""

    def runs_frame(
        self,
        where: str = "",
        *,
        order_by: str = "",
        descending: bool = False,
        limit: int | None = None,
        max_rows: int = RUNS_FRAME_ROWS_MAX,
        timeout_s: float | None = None,
    ) -> Any:
        """The runs the search `where` selects (docs/search.md; every run when empty), in
        `order_by`'s order (newest first when empty), as a pandas DataFrame of one row per run
        (columns: clients.frames). `limit`: only the first so many. A search of more than
        `max_rows` runs raises FrameTooLarge (nothing is cut off silently); a refused query
        InvalidArgument; a missing extra MissingExtra."""
        _pandas()
        gathered = RunsGathered(limit=limit, max_rows=max_rows, page_size_max=PAGE_SIZE_MAX)
        token = ""
        while True:
            page = self.search_runs(
                where,
                order_by=order_by,
                descending=descending,
                page_size=gathered.page_size(),
                page_token=token,
                timeout_s=timeout_s,
            )
            token = gathered.add(page.runs, page.next_page_token)
            if not token:
                break
        states = [self.get_run_state(run_id=run.run_id, timeout_s=timeout_s) for run in gathered.runs]
        return runs_frame_of([run_record(run, state) for run, state in zip(gathered.runs, states, strict=True)])

    def series_frame(
        self,
        run_id: str,
        metrics: list[str] | tuple[str, ...] | None = None,
        *,
        include_superseded: bool = True,
        max_rows: int = SERIES_FRAME_ROWS_MAX,
        timeout_s: float | None = None,
    ) -> Any:
        """The run's step series as a wide pandas DataFrame: one row per (step, attempt) with
        step, attempt, superseded (steps a later attempt resumed before; left out unless
        `include_superseded`) and one float column per metric (only `metrics` when given), NaN
        where a step has no value of it. More than `max_rows` rows raises FrameTooLarge."""
        _pandas()
        gathered = SeriesGathered(max_rows=max_rows)
        from_step: int | None = 0
        while from_step is not None:
            page = self.get_series(
                run_id=run_id,
                from_step=from_step,
                page_size=PAGE_SIZE_MAX,
                metrics=tuple(metrics or ()),
                include_superseded=include_superseded,
                timeout_s=timeout_s,
            )
            gathered.add(page)
            from_step = page.next_from_step
        return gathered.frame()


async def _awaited(value: T) -> T:
    """What an AsyncLedgerClient method answers: an awaitable of the typed result it names."""
    return await cast(Awaitable[T], value)


class AsyncFrameReads(LedgerMethods):
    """The frames of the asyncio client: as FrameReads', awaited."""

    async def runs_frame(
        self,
        where: str = "",
        *,
        order_by: str = "",
        descending: bool = False,
        limit: int | None = None,
        max_rows: int = RUNS_FRAME_ROWS_MAX,
        timeout_s: float | None = None,
    ) -> Any:
        """As LedgerClient.runs_frame."""
        _pandas()
        gathered = RunsGathered(limit=limit, max_rows=max_rows, page_size_max=PAGE_SIZE_MAX)
        token = ""
        while True:
            page = await _awaited(
                self.search_runs(
                    where,
                    order_by=order_by,
                    descending=descending,
                    page_size=gathered.page_size(),
                    page_token=token,
                    timeout_s=timeout_s,
                )
            )
            token = gathered.add(page.runs, page.next_page_token)
            if not token:
                break
        records = []
        for run in gathered.runs:
            state = await _awaited(self.get_run_state(run_id=run.run_id, timeout_s=timeout_s))
            records.append(run_record(run, state))
        return runs_frame_of(records)

    async def series_frame(
        self,
        run_id: str,
        metrics: list[str] | tuple[str, ...] | None = None,
        *,
        include_superseded: bool = True,
        max_rows: int = SERIES_FRAME_ROWS_MAX,
        timeout_s: float | None = None,
    ) -> Any:
        """As LedgerClient.series_frame."""
        _pandas()
        gathered = SeriesGathered(max_rows=max_rows)
        from_step: int | None = 0
        while from_step is not None:
            page = await _awaited(
                self.get_series(
                    run_id=run_id,
                    from_step=from_step,
                    page_size=PAGE_SIZE_MAX,
                    metrics=tuple(metrics or ()),
                    include_superseded=include_superseded,
                    timeout_s=timeout_s,
                )
            )
            gathered.add(page)
            from_step = page.next_from_step
        return gathered.frame()
