"""The Spend, Registry and Events RPCs as client methods (see clients.methods); each takes
`timeout_s`, the per-try deadline (the client's default when None)."""

from __future__ import annotations

from collections.abc import Sequence

from clients import codec
from clients.methods import Doc, Transport, merged, new_id, unwrap
from clients.methods_runs import RunsMethods
from trainledger.v1 import events_pb2, registry_pb2, spend_pb2

__all__ = ["LedgerMethods"]


class LedgerMethods(RunsMethods, Transport):
    """Every RPC of trainledger.v1 as a keyword-only method; see the .proto files for the fields."""

    def open_account(self, *, account: str, parent: str = "", cap_usd_micro: int | None = None,
                     timeout_s: float | None = None):
        request = spend_pb2.OpenAccountRequest(account=account, parent=parent, cap_usd_micro=cap_usd_micro)
        return self._unary("Spend", "OpenAccount", request, timeout_s=timeout_s)

    def set_cap(self, *, account: str, cap_usd_micro: int | None, timeout_s: float | None = None):
        """Set (or with None remove) a cap. Not retried on a deadline: a late repeat could undo
        another caller's change made in between."""
        request = spend_pb2.SetCapRequest(account=account, cap_usd_micro=cap_usd_micro)
        return self._unary("Spend", "SetCap", request, idempotent=False, timeout_s=timeout_s)

    def reserve(self, *, account: str, amount_usd_micro: int, reservation_id: str | None = None,
                basis: Doc | None = None, ttl_s: float | None = None, attempt: int = 0,
                timeout_s: float | None = None):
        """Hold an amount before spending it: {"reservation_id", "position", "duplicate", "expires_at",
        "account"}. Raises SpendCapExceeded when a cap would be crossed."""
        reservation_id = reservation_id or new_id()
        request = spend_pb2.ReserveRequest(account=account, reservation_id=reservation_id,
                                           amount_usd_micro=amount_usd_micro, basis=codec.basis(basis),
                                           ttl=codec.duration(ttl_s), attempt=attempt)
        return self._unary("Spend", "Reserve", request, decode=merged(reservation_id=reservation_id),
                           timeout_s=timeout_s)

    def commit(self, *, account: str, reservation_id: str, actual_usd_micro: int, basis: Doc | None = None,
               timeout_s: float | None = None):
        request = spend_pb2.CommitRequest(account=account, reservation_id=reservation_id,
                                          actual_usd_micro=actual_usd_micro, basis=codec.basis(basis))
        return self._unary("Spend", "Commit", request, timeout_s=timeout_s)

    def release(self, *, account: str, reservation_id: str, reason: str = "", timeout_s: float | None = None):
        request = spend_pb2.ReleaseRequest(account=account, reservation_id=reservation_id, reason=reason)
        return self._unary("Spend", "Release", request, timeout_s=timeout_s)

    def charge(self, *, account: str, amount_usd_micro: int, charge_id: str | None = None,
               basis: Doc | None = None, reason: str = "", timeout_s: float | None = None):
        charge_id = charge_id or new_id()
        request = spend_pb2.ChargeRequest(account=account, charge_id=charge_id, amount_usd_micro=amount_usd_micro,
                                          basis=codec.basis(basis), reason=reason)
        return self._unary("Spend", "Charge", request, decode=merged(charge_id=charge_id), timeout_s=timeout_s)

    def get_account(self, *, account: str, min_position: int = 0, timeout_s: float | None = None):
        request = spend_pb2.GetAccountRequest(account=account, min_position=min_position)
        return self._unary("Spend", "GetAccount", request, decode=unwrap("account"), timeout_s=timeout_s)

    def list_reservations(self, *, account: str, page_size: int = 0, page_token: str = "",
                          min_position: int = 0, timeout_s: float | None = None):
        request = spend_pb2.ListReservationsRequest(account=account, page_size=page_size,
                                                    page_token=page_token, min_position=min_position)
        return self._unary("Spend", "ListReservations", request, timeout_s=timeout_s)

    def register(self, *, family: str, artifact_uri: str, digest: str, source_run_id: str = "",
                 source_step: int = 0, metadata: Doc | None = None, timeout_s: float | None = None):
        request = registry_pb2.RegisterRequest(family=family, artifact_uri=artifact_uri, digest=digest,
                                               source_run_id=source_run_id, source_step=source_step,
                                               metadata=codec.struct(metadata or {}))
        return self._unary("Registry", "Register", request, timeout_s=timeout_s)

    def promote(self, *, family: str, version: int, expected_current: int, verdict: Doc,
                timeout_s: float | None = None):
        """Compare-and-set the current version; raises GateNotPassed or CurrentVersionMoved."""
        request = registry_pb2.PromoteRequest(family=family, version=version, expected_current=expected_current,
                                              verdict=codec.verdict(verdict))
        return self._unary("Registry", "Promote", request, timeout_s=timeout_s)

    def rollback(self, *, family: str, version: int, expected_current: int, reason: str,
                 timeout_s: float | None = None):
        request = registry_pb2.RollbackRequest(family=family, version=version, expected_current=expected_current,
                                               reason=reason)
        return self._unary("Registry", "Rollback", request, timeout_s=timeout_s)

    def get_current(self, *, family: str, min_position: int = 0, timeout_s: float | None = None):
        """The current version as a dict, or None when no version is current."""
        request = registry_pb2.GetCurrentRequest(family=family, min_position=min_position)
        return self._unary("Registry", "GetCurrent", request, decode=unwrap("version"), timeout_s=timeout_s)

    def list_versions(self, *, family: str, page_size: int = 0, page_token: str = "", min_position: int = 0,
                      timeout_s: float | None = None):
        """A page of a family's versions and promotion history: {"versions", "current", "history",
        "next_page_token"}; pass next_page_token back for the next page (empty after the last)."""
        request = registry_pb2.ListVersionsRequest(family=family, page_size=page_size, page_token=page_token,
                                                   min_position=min_position)
        return self._unary("Registry", "ListVersions", request, timeout_s=timeout_s)

    def read_events(self, *, from_position: int = 1, limit: int = 0, types: Sequence[str] = (),
                    timeout_s: float | None = None):
        """The log from a position, as dicts ("data_json" decoded); under the default deadline."""
        request = events_pb2.ReadEventsRequest(from_position=from_position, limit=limit, types=types)
        return self._server_stream("Events", "ReadEvents", request, decode=codec.to_dict,
                                   timeout_s=timeout_s if timeout_s is not None else getattr(self, "timeout_s", None))
