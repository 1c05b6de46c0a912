"""The tries of one logical call (clients.retry.Tries), which the sync and asyncio clients share:
what is sent again, how often, and for how long. No server: failed tries are made up here."""

from __future__ import annotations

import time

import grpc
import pytest

from clients import DeadlineExceeded, FailedPrecondition, RetryPolicy, Unavailable
from clients.retry import Tries

POLICY = RetryPolicy(attempts=3, initial_backoff_s=0.4, max_backoff_s=0.4, multiplier=1.0, total_s=10.0)


class Failed(grpc.RpcError, grpc.Call):
    """A failed try with a status code and no ErrorInfo."""

    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "made up"

    def trailing_metadata(self) -> tuple[()]:
        return ()

    def initial_metadata(self) -> tuple[()]:
        return ()


def test_unavailable_is_tried_again_for_as_long_as_the_budget_lasts() -> None:
    tries = Tries(POLICY, idempotent=False)
    for _ in range(10):  # Far more tries than `attempts`: the budget alone bounds an outage.
        error, delay_s = tries.failed(Failed(grpc.StatusCode.UNAVAILABLE))
        assert isinstance(error, Unavailable) and delay_s is not None and 0.2 <= delay_s <= 0.4
    tries.began = time.monotonic() - 9.9  # A tenth of a second of the budget left: the wait is cut to it.
    error, delay_s = tries.failed(Failed(grpc.StatusCode.UNAVAILABLE))
    assert delay_s is not None and delay_s <= 0.1
    tries.began = time.monotonic() - 10.0
    assert tries.failed(Failed(grpc.StatusCode.UNAVAILABLE))[1] is None


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_deadline_is_tried_again_only_where_a_repeat_changes_nothing(idempotent: bool) -> None:
    tries = Tries(POLICY, idempotent=idempotent)
    waits = [tries.failed(Failed(grpc.StatusCode.DEADLINE_EXCEEDED)) for _ in range(3)]
    assert all(isinstance(error, DeadlineExceeded) for error, _ in waits)
    # Three attempts in all: two retries, then the third failure is final.
    assert [delay_s is not None for _, delay_s in waits] == ([True, True, False] if idempotent else [False] * 3)


def test_a_refusal_is_never_tried_again() -> None:
    error, delay_s = Tries(POLICY, idempotent=True).failed(Failed(grpc.StatusCode.FAILED_PRECONDITION))
    assert isinstance(error, FailedPrecondition) and delay_s is None


def test_no_retry_tries_once() -> None:
    assert Tries(RetryPolicy.of(0), idempotent=True).failed(Failed(grpc.StatusCode.UNAVAILABLE))[1] is None
