"""Helpers for service tests: an in-process server on port 0 driven from a background asyncio
loop, real stubs over grpc.insecure_channel, and readers for errors on the wire."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from ledger import Ledger
from services import create_server
from trainledger.v1 import common_pb2, events_pb2_grpc, registry_pb2_grpc, runs_pb2, runs_pb2_grpc, spend_pb2_grpc

T = TypeVar("T")


class Stubs:
    """The four service stubs over one channel."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.channel = channel
        self.runs = runs_pb2_grpc.RunsStub(channel)
        self.spend = spend_pb2_grpc.SpendStub(channel)
        self.registry = registry_pb2_grpc.RegistryStub(channel)
        self.events = events_pb2_grpc.EventsStub(channel)


class Served:
    """A started server on 127.0.0.1:<port> over `ledger`, running on its own loop thread."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-server-loop", daemon=True)
        self.thread.start()
        self.server, self.port = self.run(self._start())
        self.address = f"127.0.0.1:{self.port}"
        self.stubs = self.connect()

    async def _start(self) -> tuple[Any, int]:
        server, port = create_server("127.0.0.1:0", ledger=self.ledger)
        await server.start()
        return server, port

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def connect(self) -> Stubs:
        return Stubs(grpc.insecure_channel(self.address))

    def close(self) -> None:
        self.stubs.channel.close()
        self.run(self.server.stop(1.0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def error_info(error: grpc.RpcError) -> error_details_pb2.ErrorInfo:
    """The ErrorInfo a refusal carries (every refusal carries exactly one)."""
    status = rpc_status.from_call(error)
    assert status is not None, f"no google.rpc.Status on {error}"
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    assert len(infos) == 1, status
    return infos[0]


def key() -> str:
    return f"run-{uuid.uuid4().hex}"


def batch(run_id: str, steps: range, *, attempt: int = 1, loss: float = 0.5, **columns: Any) -> common_pb2.StepBatch:
    message = common_pb2.StepBatch(run_id=run_id, attempt=attempt, steps=list(steps), **columns)
    message.metrics.add(name="loss", values=[loss] * len(steps))
    return message


def open_run(stubs: Stubs, *, cap: int | None = None, attempt: bool = True, **fields: Any) -> runs_pb2.OpenRunResponse:
    """Open a fresh run (and start its first attempt unless told not to)."""
    response = stubs.runs.OpenRun(runs_pb2.OpenRunRequest(run_key=key(), cap_usd_micro=cap, **fields), timeout=10)
    if attempt:
        stubs.runs.StartAttempt(
            runs_pb2.StartAttemptRequest(run_id=response.state.run.run_id, attempt_id="a1"), timeout=10
        )
    return response


def varint(value: int) -> bytes:
    """A protobuf varint, for requests built byte by byte on the wire."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field on the wire."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload
