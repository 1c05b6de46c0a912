"""The Registry service: decode, call the ledger in a worker thread, encode."""

from __future__ import annotations

from typing import Any

import grpc

from services import codec
from services.codec import messages
from services.edge import Edge
from services.interceptors import audit
from trainledger.v1 import registry_pb2, registry_pb2_grpc

__all__ = ["RegistryServicer"]

Context = grpc.aio.ServicerContext


class RegistryServicer(registry_pb2_grpc.RegistryServicer):
    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.ledger = edge.ledger

    async def _family(self, family: str, min_position: int, context: Context) -> dict[str, Any]:
        timeout_s = await self.edge.caught_up(min_position, self.edge.timeout_s(context))
        return await self.edge.call(self.ledger.family, family, min_position=min_position, timeout_s=timeout_s)

    async def Register(self, request: registry_pb2.RegisterRequest, context: Context) -> registry_pb2.RegisterResponse:
        receipt = await self.edge.call(
            self.ledger.register, family=request.family, artifact_uri=request.artifact_uri, digest=request.digest,
            source_run_id=request.source_run_id, source_step=request.source_step,
            metadata=codec.document(request.metadata, "metadata"), **audit())
        return registry_pb2.RegisterResponse(position=receipt.position, version=receipt.version,
                                             duplicate=receipt.duplicate)

    async def Promote(self, request: registry_pb2.PromoteRequest, context: Context) -> registry_pb2.PromoteResponse:
        verdict = request.verdict
        receipt = await self.edge.call(
            self.ledger.promote, family=request.family, version=request.version,
            expected_current=request.expected_current,
            verdict={"passed": verdict.passed, "reason": verdict.reason, "stats": codec.document(verdict.stats, "verdict")},
            **audit())
        return registry_pb2.PromoteResponse(position=receipt.position, duplicate=receipt.duplicate,
                                            current=receipt.version, previous=receipt.previous)

    async def Rollback(self, request: registry_pb2.RollbackRequest, context: Context) -> registry_pb2.RollbackResponse:
        receipt = await self.edge.call(
            self.ledger.rollback, family=request.family, version=request.version,
            expected_current=request.expected_current, reason=request.reason, **audit())
        return registry_pb2.RollbackResponse(position=receipt.position, duplicate=receipt.duplicate,
                                             current=receipt.version, previous=receipt.previous)

    async def GetCurrent(self, request: registry_pb2.GetCurrentRequest, context: Context) -> registry_pb2.GetCurrentResponse:
        family = await self._family(request.family, request.min_position, context)
        current = next((v for v in family["versions"] if v["version"] == family["current"]), None)
        return registry_pb2.GetCurrentResponse(version=None if current is None else messages.model_version(current))

    async def ListVersions(self, request: registry_pb2.ListVersionsRequest,
                           context: Context) -> registry_pb2.ListVersionsResponse:
        family = await self._family(request.family, request.min_position, context)
        return registry_pb2.ListVersionsResponse(
            versions=[messages.model_version(v) for v in family["versions"]], current=family["current"] or 0,
            history=[messages.promotion(p) for p in family["history"]])
