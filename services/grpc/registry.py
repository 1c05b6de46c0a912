"""The Registry service: decode, call the ledger in a worker thread, encode. ListVersions answers in
pages: a family's versions and promotions only grow."""

from __future__ import annotations

from typing import Any

import grpc

from ledger.domain.aliases import check_alias
from ledger.domain.errors import NotFound, Unavailable
from ledger.domain.limits import check_reference
from ledger.domain.reasons import Reason
from ledger.views.models import Family, FamilyPage, FamilySummary
from ledger.views.registry.reads import to_verdict
from services.grpc import codec
from services.grpc.codec import messages
from services.grpc.interceptors import audit
from services.runtime.edge import Edge
from services.runtime.paging import (
    name_after,
    name_token,
    protected_after,
    protected_token,
    versions_after,
    versions_token,
)
from trainledger.v1 import registry_pb2, registry_pb2_grpc

__all__ = ["RegistryServicer"]

Context = grpc.aio.ServicerContext[Any, Any]
VERSIONS_PAGE_DEFAULT = 100
FAMILIES_PAGE_DEFAULT = 100
PROTECTED_PAGE_DEFAULT = 100


class RegistryServicer(registry_pb2_grpc.RegistryServicer):
    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.ledger = edge.ledger

    async def _family(self, family: str, min_position: int, context: Context) -> Family:
        timeout_s = await self.edge.caught_up(min_position, self.edge.timeout_s(context))
        return await self.edge.call(self.ledger.family, family, min_position=min_position, timeout_s=timeout_s)

    async def Register(self, request: registry_pb2.RegisterRequest, context: Context) -> registry_pb2.RegisterResponse:
        receipt = await self.edge.call(
            self.ledger.register,
            family=request.family,
            artifact_uri=request.artifact_uri,
            digest=request.digest,
            source_run_id=request.source_run_id,
            source_step=request.source_step,
            metadata=codec.document(request.metadata, "metadata"),
            source_checkpoint=_source_checkpoint(request),
            **audit(),
        )
        return registry_pb2.RegisterResponse(
            position=receipt.position, version=receipt.version, duplicate=receipt.duplicate
        )

    async def Promote(self, request: registry_pb2.PromoteRequest, context: Context) -> registry_pb2.PromoteResponse:
        verdict = request.verdict
        asserted = None
        if request.HasField("verdict") or not request.gate_rule:
            asserted = {
                "passed": verdict.passed,
                "reason": verdict.reason,
                "stats": codec.document(verdict.stats, "verdict"),
            }
        receipt = await self.edge.call(
            self.ledger.promote,
            family=request.family,
            version=request.version,
            expected_current=request.expected_current,
            verdict=asserted,
            gate_rule=request.gate_rule,
            evaluation_run_id=request.evaluation_run_id,
            **audit(),
        )
        return registry_pb2.PromoteResponse(
            position=receipt.position,
            duplicate=receipt.duplicate,
            current=receipt.version,
            previous=receipt.previous,
            verdict=messages.verdict(to_verdict(receipt.verdict)),
        )

    async def Rollback(self, request: registry_pb2.RollbackRequest, context: Context) -> registry_pb2.RollbackResponse:
        receipt = await self.edge.call(
            self.ledger.rollback,
            family=request.family,
            version=request.version,
            expected_current=request.expected_current,
            reason=request.reason,
            **audit(),
        )
        return registry_pb2.RollbackResponse(
            position=receipt.position, duplicate=receipt.duplicate, current=receipt.version, previous=receipt.previous
        )

    async def GetCurrent(
        self, request: registry_pb2.GetCurrentRequest, context: Context
    ) -> registry_pb2.GetCurrentResponse:
        family = await self._family(request.family, request.min_position, context)
        if request.alias:
            check_alias(request.alias)
            wanted = next((a.version for a in family.aliases if a.alias == request.alias), 0)
        else:
            wanted = family.current
        current = next((v for v in family.versions if v.version == wanted), None)
        promotion = next(
            (p for p in reversed(family.history) if p.kind != "refused" and p.version == wanted),
            None,
        )
        return registry_pb2.GetCurrentResponse(
            version=None if current is None else messages.model_version(current),
            promotion=None if promotion is None else messages.promotion(promotion),
            retired=messages.retirement(family.retired),
        )

    async def MoveAlias(
        self, request: registry_pb2.MoveAliasRequest, context: Context
    ) -> registry_pb2.MoveAliasResponse:
        receipt = await self.edge.call(
            self.ledger.move_alias,
            family=request.family,
            alias=request.alias,
            version=request.version,
            expected_version=request.expected_version,
            **audit(),
        )
        return registry_pb2.MoveAliasResponse(
            position=receipt.position, duplicate=receipt.duplicate, version=receipt.version, previous=receipt.previous
        )

    async def RetireFamily(
        self, request: registry_pb2.RetireFamilyRequest, context: Context
    ) -> registry_pb2.RetireFamilyResponse:
        receipt = await self.edge.call(
            self.ledger.retire_family, family=request.family, reason=request.reason, **audit()
        )
        return registry_pb2.RetireFamilyResponse(position=receipt.position, duplicate=receipt.duplicate)

    async def ListVersions(
        self, request: registry_pb2.ListVersionsRequest, context: Context
    ) -> registry_pb2.ListVersionsResponse:
        size = codec.page_size(request.page_size, VERSIONS_PAGE_DEFAULT)
        after_version, after_position = versions_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))

        def read() -> FamilyPage:
            check_reference(request.family, "family")
            self.ledger.wait(request.min_position, timeout_s)
            try:
                page = self.ledger.views.family_page(
                    request.family, after_version=after_version, after_position=after_position, limit=size
                )
            except self.ledger.storage.outage_errors as error:
                raise Unavailable(f"storage is unavailable: {error}") from error
            if page is None:
                raise NotFound(f"no family {request.family}", reason=Reason.FAMILY_NOT_FOUND, family=request.family)
            return page

        page = await self.edge.call(read)
        token = ""
        if page.more:
            token = versions_token(
                page.versions[-1].version if page.versions else after_version,
                page.history[-1].position if page.history else after_position,
            )
        return registry_pb2.ListVersionsResponse(
            versions=[messages.model_version(v) for v in page.versions],
            current=page.current,
            history=[messages.promotion(p) for p in page.history],
            next_page_token=token,
            aliases=[messages.alias(a) for a in page.aliases],
            retired=messages.retirement(page.retired),
        )

    async def ListFamilies(
        self, request: registry_pb2.ListFamiliesRequest, context: Context
    ) -> registry_pb2.ListFamiliesResponse:
        size = codec.page_size(request.page_size, FAMILIES_PAGE_DEFAULT)
        after = name_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))

        def read() -> list[FamilySummary]:
            self.ledger.wait(request.min_position, timeout_s)
            return self.ledger.families(after=after, limit=size + 1)

        found = await self.edge.call(read)
        page = found[:size]
        return registry_pb2.ListFamiliesResponse(
            families=[
                registry_pb2.FamilySummary(
                    family=f.family, current=f.current, version_count=f.version_count, retired=f.retired
                )
                for f in page
            ],
            next_page_token=name_token(page[-1].family) if len(found) > size else "",
        )

    async def ListProtectedStates(
        self, request: registry_pb2.ListProtectedStatesRequest, context: Context
    ) -> registry_pb2.ListProtectedStatesResponse:
        """A page of the states no prune may delete (ledger.views.models.ProtectedPage)."""
        size = codec.page_size(request.page_size, PROTECTED_PAGE_DEFAULT)
        after = protected_after(request.page_token)
        timeout_s = await self.edge.caught_up(request.min_position, self.edge.timeout_s(context))
        page = await self.edge.call(
            self.ledger.protected_states,
            after=after,
            limit=size,
            min_position=request.min_position,
            timeout_s=timeout_s,
        )
        return registry_pb2.ListProtectedStatesResponse(
            states=[registry_pb2.ProtectedState(uri=s.uri, backend=s.backend, why=s.why) for s in page.states],
            next_page_token=protected_token(page.after),
        )


def _source_checkpoint(request: registry_pb2.RegisterRequest) -> dict[str, Any] | None:
    """The checkpoint a version is made from, as the ledger takes it; None when unset."""
    if not request.HasField("source_checkpoint"):
        return None
    source = request.source_checkpoint
    return {
        "run_id": source.run_id,
        "step": source.step,
        "attempt": source.attempt,
        "checkpoint_digest": source.checkpoint_digest,
    }
