"""Group commit across processes: several processes, each with several writer threads whose
commands its ledger gathers into shared transactions, reserve against one parent's cap on the
same database. Version races between the processes are settled by deciding the losing groups
again; the cap is never crossed, every hold granted is held exactly once, and the log (folded
afresh) agrees with the answers the writers got.
"""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest

from ledger import CapExceeded, Ledger

pytestmark = pytest.mark.subprocess

PROCESSES, THREADS, TRIES, AMOUNT, CAP = 2, 4, 12, 9, 500


def reserve_in_threads(database: str, process: int, results: Any) -> None:
    """One process: THREADS writers, each on its own account under the team, TRIES holds each.
    Puts (positions granted, refusals, failures) on `results`."""
    ledger = Ledger.open(database, project=False)
    granted: list[int] = []
    refused: list[str] = []
    failures: list[str] = []
    lock = threading.Lock()

    def writer(thread: int) -> None:
        account = f"trainer-{process}-{thread}"
        for n in range(TRIES):
            try:
                receipt = ledger.reserve(account=account, reservation_id=f"r{n}", amount_usd_micro=AMOUNT)
            except CapExceeded as refusal:
                with lock:
                    refused.append(refusal.account)
            except Exception as error:  # Reported to the test, which fails on any.
                with lock:
                    failures.append(repr(error))
            else:
                with lock:
                    granted.append(receipt.position)

    try:
        threads = [threading.Thread(target=writer, args=(thread,)) for thread in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        ledger.close()
    results.put((granted, refused, failures))


def test_writers_in_several_processes_never_cross_a_shared_cap(database: str) -> None:
    ledger = Ledger.open(database, project=False)
    try:
        ledger.open_account(account="team", cap_usd_micro=CAP)
        for process in range(PROCESSES):
            for thread in range(THREADS):
                ledger.open_account(account=f"trainer-{process}-{thread}", parent="team")
    finally:
        ledger.close()
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [context.Process(target=reserve_in_threads, args=(database, n, results)) for n in range(PROCESSES)]
    for worker in workers:
        worker.start()
    answers = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    granted = [position for positions, _, _ in answers for position in positions]
    refused = [account for _, accounts, _ in answers for account in accounts]
    assert [failures for _, _, failures in answers] == [[]] * PROCESSES
    # 500 // 9 = 55 holds fit under the cap, each granted once; every other request was refused
    # by the team's cap.
    assert len(granted) == len(set(granted)) == 55
    assert refused == ["team"] * (PROCESSES * THREADS * TRIES - 55)
    folded = Ledger.open(database, project=False)
    try:
        team = folded.account_now("team")
        trainers = [
            folded.account_now(f"trainer-{process}-{thread}").pending_usd_micro
            for process in range(PROCESSES)
            for thread in range(THREADS)
        ]
    finally:
        folded.close()
    assert (team.pending_usd_micro, team.committed_usd_micro, sum(trainers)) == (55 * AMOUNT, 0, 55 * AMOUNT)
