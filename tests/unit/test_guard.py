"""services.runtime.guard on its own (no sockets): a guarded stream hands on its items in order and their
error, and a check that refuses ends the stream, after the stream's own cleanup has run, whether
the stream is waiting for its next item or its caller is busy with the last one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from ledger.domain.errors import Unauthenticated
from ledger.domain.reasons import Reason
from services.runtime.guard import guarded


class Broken(Exception):
    pass


async def never_refuse() -> None:
    return None


def test_items_and_their_error_pass_through_in_order() -> None:
    async def items() -> AsyncIterator[int]:
        for item in (1, 2, 3):
            yield item
        raise Broken("the stream's own failure")

    async def scenario() -> list[int]:
        seen = []
        with pytest.raises(Broken):
            async for item in guarded(items(), never_refuse, 0.01):
                seen.append(item)
        return seen

    assert asyncio.run(scenario()) == [1, 2, 3]


def test_a_refusing_check_ends_a_waiting_stream_after_its_cleanup() -> None:
    events: list[str] = []
    checks = 0

    async def items() -> AsyncIterator[str]:
        try:
            yield "first"
            await asyncio.Event().wait()  # Nothing more comes: a quiet run.
            yield "never"
        finally:
            events.append("cleaned up")

    async def check() -> None:
        nonlocal checks
        checks += 1
        if checks == 3:
            raise Unauthenticated("token t was revoked", reason=Reason.TOKEN_REVOKED)

    async def scenario() -> list[str]:
        with pytest.raises(Unauthenticated) as refused:
            async for item in guarded(items(), check, 0.01):
                events.append(item)
        events.append(str(refused.value.reason))
        return events

    assert asyncio.run(scenario()) == ["first", "cleaned up", "TOKEN_REVOKED"]
    assert checks == 3


def test_a_refusal_while_the_caller_holds_an_item_ends_the_stream_before_the_next() -> None:
    events: list[str] = []
    refuse = asyncio.Event()

    async def items() -> AsyncIterator[str]:
        try:
            for item in ("first", "second"):
                yield item
        finally:
            events.append("cleaned up")

    async def check() -> None:
        if refuse.is_set():
            raise Unauthenticated("token t has expired", reason=Reason.TOKEN_EXPIRED)

    async def scenario() -> list[str]:
        with pytest.raises(Unauthenticated) as refused:
            async for item in guarded(items(), check, 0.01):
                events.append(item)
                refuse.set()
                await asyncio.sleep(0.05)  # The caller is busy with its item: several checks pass.
        events.append(str(refused.value.reason))
        return events

    assert asyncio.run(scenario()) == ["first", "cleaned up", "TOKEN_EXPIRED"]
