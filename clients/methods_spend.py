"""The Spend, Registry and Events RPCs as client methods (see clients.methods); each takes
`timeout_s`, the per-try deadline (the client's default when None), and answers with a typed
result of clients.models."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from clients import codec
from clients.methods import Doc, Transport, field_of, new_id, reply
from clients.methods_runs import RunsMethods
from clients.models import (
    Account,
    AdjustReceipt,
    BilledLine,
    BilledUsageReceipt,
    ChainHead,
    ChargeReceipt,
    CommitReceipt,
    CurrentVersion,
    Event,
    Family,
    FamilyList,
    ModelVersion,
    MoveAliasReceipt,
    OpenAccountReceipt,
    PromoteReceipt,
    ProtectedState,
    ProtectedStates,
    ReconcileReport,
    RegisterReceipt,
    ReleaseReceipt,
    ReservationPage,
    ReservePlanReceipt,
    ReserveReceipt,
    RetireReceipt,
    RollbackReceipt,
    SetCapReceipt,
    SourceCheckpoint,
    Verification,
    VerifyProgress,
)
from trainledger.v1 import events_pb2, registry_pb2, spend_pb2

__all__ = ["LedgerMethods"]


class LedgerMethods(RunsMethods, Transport):
    """Every RPC of trainledger.v1 as a keyword-only method; see the .proto files for the fields."""

    def open_account(
        self, *, account: str, parent: str = "", cap_usd_micro: int | None = None, timeout_s: float | None = None
    ) -> OpenAccountReceipt:
        request = spend_pb2.OpenAccountRequest(account=account, parent=parent, cap_usd_micro=cap_usd_micro)
        return self._ask("Spend", "OpenAccount", request, reply(OpenAccountReceipt), timeout_s=timeout_s)

    def set_cap(self, *, account: str, cap_usd_micro: int | None, timeout_s: float | None = None) -> SetCapReceipt:
        """Set (or with None remove) a cap. Not retried on a deadline: a late repeat could undo
        another caller's change made in between. A token scoped to `account` itself may only
        lower its cap (PermissionDenied CAP_RAISE_OUTSIDE_SCOPE otherwise)."""
        request = spend_pb2.SetCapRequest(account=account, cap_usd_micro=cap_usd_micro)
        return self._ask("Spend", "SetCap", request, reply(SetCapReceipt), idempotent=False, timeout_s=timeout_s)

    def reserve(
        self,
        *,
        account: str,
        amount_usd_micro: int,
        reservation_id: str | None = None,
        basis: Doc | None = None,
        ttl_s: float | None = None,
        attempt: int = 0,
        timeout_s: float | None = None,
    ) -> ReserveReceipt:
        """Hold an amount before spending it: reservation_id, position, duplicate, expires_at, account.
        Raises SpendCapExceeded when a cap would be crossed."""
        reservation_id = reservation_id or new_id()
        request = spend_pb2.ReserveRequest(
            account=account,
            reservation_id=reservation_id,
            amount_usd_micro=amount_usd_micro,
            basis=codec.basis(basis),
            ttl=codec.duration(ttl_s),
            attempt=attempt,
        )
        return self._ask(
            "Spend", "Reserve", request, reply(ReserveReceipt, reservation_id=reservation_id), timeout_s=timeout_s
        )

    def reserve_plan(
        self,
        *,
        account: str,
        amount_usd_micro: int,
        reservation_id: str | None = None,
        basis: Doc | None = None,
        ttl_s: float | None = None,
        attempt: int = 0,
        timeout_s: float | None = None,
    ) -> ReservePlanReceipt:
        """Hold a run's whole projected cost up front (the ledger's default TTL is a day): the
        attempt's reservations draw it down, and what is left is released when the run ends.
        Answers reservation_id, position, duplicate, expires_at and the account with its plan.
        Raises SpendCapExceeded (with the remaining amount) when the plan would cross a cap."""
        reservation_id = reservation_id or new_id()
        request = spend_pb2.ReservePlanRequest(
            account=account,
            reservation_id=reservation_id,
            amount_usd_micro=amount_usd_micro,
            basis=codec.basis(basis),
            ttl=codec.duration(ttl_s),
            attempt=attempt,
        )
        return self._ask(
            "Spend",
            "ReservePlan",
            request,
            reply(ReservePlanReceipt, reservation_id=reservation_id),
            timeout_s=timeout_s,
        )

    def commit(
        self,
        *,
        account: str,
        reservation_id: str,
        actual_usd_micro: int,
        basis: Doc | None = None,
        timeout_s: float | None = None,
    ) -> CommitReceipt:
        request = spend_pb2.CommitRequest(
            account=account, reservation_id=reservation_id, actual_usd_micro=actual_usd_micro, basis=codec.basis(basis)
        )
        return self._ask("Spend", "Commit", request, reply(CommitReceipt), timeout_s=timeout_s)

    def release(
        self, *, account: str, reservation_id: str, reason: str = "", timeout_s: float | None = None
    ) -> ReleaseReceipt:
        request = spend_pb2.ReleaseRequest(account=account, reservation_id=reservation_id, reason=reason)
        return self._ask("Spend", "Release", request, reply(ReleaseReceipt), timeout_s=timeout_s)

    def charge(
        self,
        *,
        account: str,
        amount_usd_micro: int,
        charge_id: str | None = None,
        basis: Doc | None = None,
        reason: str = "",
        timeout_s: float | None = None,
    ) -> ChargeReceipt:
        charge_id = charge_id or new_id()
        request = spend_pb2.ChargeRequest(
            account=account,
            charge_id=charge_id,
            amount_usd_micro=amount_usd_micro,
            basis=codec.basis(basis),
            reason=reason,
        )
        return self._ask("Spend", "Charge", request, reply(ChargeReceipt, charge_id=charge_id), timeout_s=timeout_s)

    def record_billed_usage(
        self,
        *,
        provider: str,
        lines: Iterable[BilledLine],
        cost_data_through: datetime | None = None,
        validate_only: bool = False,
        timeout_s: float | None = None,
    ) -> BilledUsageReceipt:
        """Record lines of a provider's bill (at most BILLED_LINES_MAX per call; clients.billing
        sends larger bills in several calls). A line already recorded with the same payload is
        unchanged, with another payload a restatement: sending a bill again changes nothing.
        `validate_only`: the ledger checks the lines as a recording would and records nothing."""
        request = spend_pb2.RecordBilledUsageRequest(
            provider=provider,
            lines=[billed_line(line) for line in lines],
            cost_data_through=codec.timestamp(cost_data_through),
            validate_only=validate_only,
        )
        return self._ask("Spend", "RecordBilledUsage", request, reply(BilledUsageReceipt), timeout_s=timeout_s)

    def reconcile(
        self,
        *,
        run_id: str = "",
        account: str = "",
        threshold_percent: float = 0.0,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> ReconcileReport:
        """What the ledger estimated beside what the providers billed: per run (a page, largest
        drift first), per account rolled up, per provider, and the unattributed spend."""
        request = spend_pb2.ReconcileRequest(
            run_id=run_id,
            account=account,
            threshold_percent=threshold_percent,
            page_size=page_size,
            page_token=page_token,
            min_position=min_position,
        )
        return self._ask("Spend", "Reconcile", request, reply(ReconcileReport), timeout_s=timeout_s)

    def adjust_to_bill(self, *, run_id: str = "", account: str = "", timeout_s: float | None = None) -> AdjustReceipt:
        """Record each run's (or one run's or account's) unadjusted drift as an adjustment, so its
        committed spend, and the caps above it, reflect what was billed. Repeating it is a no-op."""
        request = spend_pb2.AdjustToBillRequest(run_id=run_id, account=account)
        return self._ask("Spend", "AdjustToBill", request, reply(AdjustReceipt), timeout_s=timeout_s)

    def get_account(self, *, account: str, min_position: int = 0, timeout_s: float | None = None) -> Account:
        request = spend_pb2.GetAccountRequest(account=account, min_position=min_position)
        return self._ask("Spend", "GetAccount", request, _account, timeout_s=timeout_s)

    def list_reservations(
        self,
        *,
        account: str,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> ReservationPage:
        request = spend_pb2.ListReservationsRequest(
            account=account, page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Spend", "ListReservations", request, reply(ReservationPage), timeout_s=timeout_s)

    def register(
        self,
        *,
        family: str,
        artifact_uri: str,
        digest: str,
        source_run_id: str = "",
        source_step: int = 0,
        metadata: Doc | None = None,
        source_checkpoint: SourceCheckpoint | None = None,
        timeout_s: float | None = None,
    ) -> RegisterReceipt:
        """Register an immutable version of a family (idempotent by digest): version, position,
        duplicate. With `source_checkpoint` the ledger checks the run's checkpoint exists, was not
        deleted and was saved with `checkpoint_digest` (source_run_id and source_step are filled
        from it), and keeps that checkpoint from retention."""
        request = registry_pb2.RegisterRequest(
            family=family,
            artifact_uri=artifact_uri,
            digest=digest,
            source_run_id=source_run_id,
            source_step=source_step,
            metadata=codec.struct(metadata or {}),
            source_checkpoint=codec.source_checkpoint(source_checkpoint),
        )
        return self._ask("Registry", "Register", request, reply(RegisterReceipt), timeout_s=timeout_s)

    def promote(
        self,
        *,
        family: str,
        version: int,
        expected_current: int,
        verdict: Doc | None = None,
        gate_rule: str = "",
        evaluation_run_id: str = "",
        timeout_s: float | None = None,
    ) -> PromoteReceipt:
        """Compare-and-set the current version through a gate: an asserted `verdict` {passed,
        reason, stats}, recorded as asserted, or a `gate_rule` ("eval_loss <= 0.5 and accuracy >=
        0.8") the ledger evaluates on the version's source checkpoint's scores, or on the summary
        of `evaluation_run_id`; the receipt's verdict is the one recorded, with its evidence. A
        refusal is recorded too: raises GateNotPassed or CurrentVersionMoved."""
        request = registry_pb2.PromoteRequest(
            family=family,
            version=version,
            expected_current=expected_current,
            verdict=None if verdict is None else codec.verdict(verdict),
            gate_rule=gate_rule,
            evaluation_run_id=evaluation_run_id,
        )
        return self._ask("Registry", "Promote", request, reply(PromoteReceipt), timeout_s=timeout_s)

    def rollback(
        self, *, family: str, version: int, expected_current: int, reason: str, timeout_s: float | None = None
    ) -> RollbackReceipt:
        request = registry_pb2.RollbackRequest(
            family=family, version=version, expected_current=expected_current, reason=reason
        )
        return self._ask("Registry", "Rollback", request, reply(RollbackReceipt), timeout_s=timeout_s)

    def get_current(
        self, *, family: str, alias: str = "", min_position: int = 0, timeout_s: float | None = None
    ) -> ModelVersion | None:
        """The current version (or the one `alias` names), or None when there is none."""
        request = registry_pb2.GetCurrentRequest(family=family, alias=alias, min_position=min_position)
        return self._ask("Registry", "GetCurrent", request, field_of("version", ModelVersion), timeout_s=timeout_s)

    def current_version(
        self, *, family: str, alias: str = "", min_position: int = 0, timeout_s: float | None = None
    ) -> CurrentVersion:
        """The current version (or the one `alias` names) with the promotion that made it current
        (its verdict asserted or evaluated) and the family's retirement, if any."""
        request = registry_pb2.GetCurrentRequest(family=family, alias=alias, min_position=min_position)
        return self._ask("Registry", "GetCurrent", request, reply(CurrentVersion), timeout_s=timeout_s)

    def move_alias(
        self, *, family: str, alias: str, version: int, expected_version: int, timeout_s: float | None = None
    ) -> MoveAliasReceipt:
        """Point `alias` at `version` (0 removes it), compare-and-set on the version it names now:
        raises Aborted (ALIAS_MOVED) when it names another."""
        request = registry_pb2.MoveAliasRequest(
            family=family, alias=alias, version=version, expected_version=expected_version
        )
        return self._ask("Registry", "MoveAlias", request, reply(MoveAliasReceipt), timeout_s=timeout_s)

    def retire_family(self, *, family: str, reason: str, timeout_s: float | None = None) -> RetireReceipt:
        """Retire a family: no further registrations, promotions, rollbacks or alias moves
        (FAMILY_RETIRED); its reads still work."""
        request = registry_pb2.RetireFamilyRequest(family=family, reason=reason)
        return self._ask("Registry", "RetireFamily", request, reply(RetireReceipt), timeout_s=timeout_s)

    def list_versions(
        self,
        *,
        family: str,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> Family:
        """A page of a family's versions and promotion history (versions, current, history,
        next_page_token); pass next_page_token back for the next page (empty after the last)."""
        request = registry_pb2.ListVersionsRequest(
            family=family, page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Registry", "ListVersions", request, reply(Family), timeout_s=timeout_s)

    def list_families(
        self, *, page_size: int = 0, page_token: str = "", min_position: int = 0, timeout_s: float | None = None
    ) -> FamilyList:
        """A page of the registry's families by name (family, current, version_count); pass
        next_page_token back for the next page (empty after the last)."""
        request = registry_pb2.ListFamiliesRequest(
            page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Registry", "ListFamilies", request, reply(FamilyList), timeout_s=timeout_s)

    def list_protected_states(
        self, *, min_position: int = 0, page_size: int = 0, timeout_s: float | None = None
    ) -> list[ProtectedState]:
        """Every state no prune may delete, across all runs and the registry: live resume and
        best checkpoints, those registry versions were made from, and every version's artifact.
        Every page is read (an operator's or admin's unscoped token)."""
        request = registry_pb2.ListProtectedStatesRequest(page_size=page_size, min_position=min_position)
        return self._all_pages(
            "Registry", "ListProtectedStates", request, reply(ProtectedStates), _states_of_page, timeout_s=timeout_s
        )

    def read_events(
        self, *, from_position: int = 1, limit: int = 0, types: Sequence[str] = (), timeout_s: float | None = None
    ) -> Iterator[Event]:
        """The log from a position, as Events ("data_json" decoded); under the default deadline."""
        request = events_pb2.ReadEventsRequest(from_position=from_position, limit=limit, types=types)
        return self._stream(
            "Events",
            "ReadEvents",
            request,
            reply(Event),
            timeout_s=timeout_s if timeout_s is not None else getattr(self, "timeout_s", None),
        )

    def get_head(self, *, timeout_s: float | None = None) -> ChainHead:
        """The head of the log's hash chain (position, digest): write it down to prove later, with
        `verify(expect_head=...)`, that nothing up to it changed."""
        return self._ask("Events", "GetHead", events_pb2.GetHeadRequest(), reply(ChainHead), timeout_s=timeout_s)

    def verify(
        self,
        *,
        expect_head: ChainHead | None = None,
        skip_views: bool = False,
        timeout_s: float | None = None,
    ) -> Verification:
        """Have the server recompute the chain from position 1 (and check the stored snapshots and,
        unless `skip_views`, the views against a rebuild); with `expect_head`, the chain must pass
        through that head. A broken log is an answer (ok False, broken_at, problem), not an error.
        It reads the whole log: give a `timeout_s` that fits its size."""
        head = (
            None
            if expect_head is None
            else events_pb2.ChainHead(position=expect_head.position, digest=expect_head.digest)
        )
        request = events_pb2.VerifyRequest(expect_head=head, skip_views=skip_views)
        return self._ask("Events", "Verify", request, reply(Verification), timeout_s=timeout_s)

    def verify_progress(
        self,
        *,
        expect_head: ChainHead | None = None,
        skip_views: bool = False,
        timeout_s: float | None = None,
    ) -> Iterator[VerifyProgress]:
        """`verify`, with its progress: VerifyProgress messages as it goes (stage, checked), the
        last one with the outcome. Closing the iterator early cancels the call, which stops the
        verification on the server. One runs at a time per ledger: another is refused with
        VERIFY_BUSY (a ResourceExhausted error)."""
        head = (
            None
            if expect_head is None
            else events_pb2.ChainHead(position=expect_head.position, digest=expect_head.digest)
        )
        request = events_pb2.VerifyRequest(expect_head=head, skip_views=skip_views)
        return self._stream("Events", "VerifyStream", request, reply(VerifyProgress), timeout_s=timeout_s)


def _account(response: spend_pb2.GetAccountResponse) -> Account:
    account = field_of("account", Account)(response)
    return account if account is not None else Account()


def billed_line(line: BilledLine) -> spend_pb2.BilledLine:
    """The message of one bill line."""
    return spend_pb2.BilledLine(
        line_id=line.line_id,
        interval_start=codec.timestamp(line.interval_start),
        interval_end=codec.timestamp(line.interval_end),
        amount_usd_micro=line.amount_usd_micro,
        amount_text=line.amount_text,
        currency=line.currency,
        quantities=line.quantities,
        run_id=line.run_id,
        account=line.account,
        session_id=line.session_id,
        tags=line.tags,
        description=line.description,
    )


def _states_of_page(page: ProtectedStates) -> list[ProtectedState]:
    return page.states
