import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainledger.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Account(_message.Message):
    __slots__ = ("account", "parent", "cap_usd_micro", "committed_usd_micro", "pending_usd_micro", "remaining_usd_micro", "overrun_usd_micro", "bill", "plan", "presumed_usd_micro")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PENDING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    REMAINING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BILL_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PRESUMED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    account: str
    parent: str
    cap_usd_micro: int
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int
    overrun_usd_micro: int
    bill: _common_pb2.BillTotals
    plan: _common_pb2.PlanHold
    presumed_usd_micro: int
    def __init__(self, account: _Optional[str] = ..., parent: _Optional[str] = ..., cap_usd_micro: _Optional[int] = ..., committed_usd_micro: _Optional[int] = ..., pending_usd_micro: _Optional[int] = ..., remaining_usd_micro: _Optional[int] = ..., overrun_usd_micro: _Optional[int] = ..., bill: _Optional[_Union[_common_pb2.BillTotals, _Mapping]] = ..., plan: _Optional[_Union[_common_pb2.PlanHold, _Mapping]] = ..., presumed_usd_micro: _Optional[int] = ...) -> None: ...

class OpenAccountRequest(_message.Message):
    __slots__ = ("account", "parent", "cap_usd_micro")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    account: str
    parent: str
    cap_usd_micro: int
    def __init__(self, account: _Optional[str] = ..., parent: _Optional[str] = ..., cap_usd_micro: _Optional[int] = ...) -> None: ...

class OpenAccountResponse(_message.Message):
    __slots__ = ("position", "created", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    created: bool
    account: Account
    def __init__(self, position: _Optional[int] = ..., created: _Optional[bool] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class SetCapRequest(_message.Message):
    __slots__ = ("account", "cap_usd_micro")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    account: str
    cap_usd_micro: int
    def __init__(self, account: _Optional[str] = ..., cap_usd_micro: _Optional[int] = ...) -> None: ...

class SetCapResponse(_message.Message):
    __slots__ = ("position", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    account: Account
    def __init__(self, position: _Optional[int] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class ReserveRequest(_message.Message):
    __slots__ = ("account", "reservation_id", "amount_usd_micro", "basis", "ttl", "attempt")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    account: str
    reservation_id: str
    amount_usd_micro: int
    basis: _common_pb2.CostBasis
    ttl: _duration_pb2.Duration
    attempt: int
    def __init__(self, account: _Optional[str] = ..., reservation_id: _Optional[str] = ..., amount_usd_micro: _Optional[int] = ..., basis: _Optional[_Union[_common_pb2.CostBasis, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., attempt: _Optional[int] = ...) -> None: ...

class ReserveResponse(_message.Message):
    __slots__ = ("position", "duplicate", "expires_at", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    expires_at: _timestamp_pb2.Timestamp
    account: Account
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class ReservePlanRequest(_message.Message):
    __slots__ = ("account", "reservation_id", "amount_usd_micro", "basis", "ttl", "attempt")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    account: str
    reservation_id: str
    amount_usd_micro: int
    basis: _common_pb2.CostBasis
    ttl: _duration_pb2.Duration
    attempt: int
    def __init__(self, account: _Optional[str] = ..., reservation_id: _Optional[str] = ..., amount_usd_micro: _Optional[int] = ..., basis: _Optional[_Union[_common_pb2.CostBasis, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., attempt: _Optional[int] = ...) -> None: ...

class ReservePlanResponse(_message.Message):
    __slots__ = ("position", "duplicate", "expires_at", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    expires_at: _timestamp_pb2.Timestamp
    account: Account
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class CommitRequest(_message.Message):
    __slots__ = ("account", "reservation_id", "actual_usd_micro", "basis")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    account: str
    reservation_id: str
    actual_usd_micro: int
    basis: _common_pb2.CostBasis
    def __init__(self, account: _Optional[str] = ..., reservation_id: _Optional[str] = ..., actual_usd_micro: _Optional[int] = ..., basis: _Optional[_Union[_common_pb2.CostBasis, _Mapping]] = ...) -> None: ...

class CommitResponse(_message.Message):
    __slots__ = ("position", "duplicate", "overrun_usd_micro", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    overrun_usd_micro: int
    account: Account
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., overrun_usd_micro: _Optional[int] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("account", "reservation_id", "reason")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    account: str
    reservation_id: str
    reason: str
    def __init__(self, account: _Optional[str] = ..., reservation_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ("position", "duplicate", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    account: Account
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class ChargeRequest(_message.Message):
    __slots__ = ("account", "charge_id", "amount_usd_micro", "basis", "reason")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    CHARGE_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    account: str
    charge_id: str
    amount_usd_micro: int
    basis: _common_pb2.CostBasis
    reason: str
    def __init__(self, account: _Optional[str] = ..., charge_id: _Optional[str] = ..., amount_usd_micro: _Optional[int] = ..., basis: _Optional[_Union[_common_pb2.CostBasis, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class ChargeResponse(_message.Message):
    __slots__ = ("position", "duplicate", "overrun_usd_micro", "account")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    overrun_usd_micro: int
    account: Account
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., overrun_usd_micro: _Optional[int] = ..., account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class GetAccountRequest(_message.Message):
    __slots__ = ("account", "min_position")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    account: str
    min_position: int
    def __init__(self, account: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class GetAccountResponse(_message.Message):
    __slots__ = ("account",)
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    account: Account
    def __init__(self, account: _Optional[_Union[Account, _Mapping]] = ...) -> None: ...

class ListReservationsRequest(_message.Message):
    __slots__ = ("account", "page_size", "page_token", "min_position")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    account: str
    page_size: int
    page_token: str
    min_position: int
    def __init__(self, account: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class ListReservationsResponse(_message.Message):
    __slots__ = ("reservations", "next_page_token")
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    reservations: _containers.RepeatedCompositeFieldContainer[Reservation]
    next_page_token: str
    def __init__(self, reservations: _Optional[_Iterable[_Union[Reservation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Reservation(_message.Message):
    __slots__ = ("reservation_id", "kind", "state", "amount_usd_micro", "actual_usd_micro", "overrun_usd_micro", "basis", "actual_basis", "reason", "attempt", "reserved_at", "settled_at", "expires_at", "position")
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_BASIS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RESERVED_AT_FIELD_NUMBER: _ClassVar[int]
    SETTLED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    reservation_id: str
    kind: str
    state: str
    amount_usd_micro: int
    actual_usd_micro: int
    overrun_usd_micro: int
    basis: _common_pb2.CostBasis
    actual_basis: _common_pb2.CostBasis
    reason: str
    attempt: int
    reserved_at: _timestamp_pb2.Timestamp
    settled_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    position: int
    def __init__(self, reservation_id: _Optional[str] = ..., kind: _Optional[str] = ..., state: _Optional[str] = ..., amount_usd_micro: _Optional[int] = ..., actual_usd_micro: _Optional[int] = ..., overrun_usd_micro: _Optional[int] = ..., basis: _Optional[_Union[_common_pb2.CostBasis, _Mapping]] = ..., actual_basis: _Optional[_Union[_common_pb2.CostBasis, _Mapping]] = ..., reason: _Optional[str] = ..., attempt: _Optional[int] = ..., reserved_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., settled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., position: _Optional[int] = ...) -> None: ...

class BilledLine(_message.Message):
    __slots__ = ("line_id", "interval_start", "interval_end", "amount_usd_micro", "amount_text", "currency", "quantities", "run_id", "account", "session_id", "tags", "description")
    class QuantitiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LINE_ID_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_START_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_END_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_TEXT_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    QUANTITIES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    line_id: str
    interval_start: _timestamp_pb2.Timestamp
    interval_end: _timestamp_pb2.Timestamp
    amount_usd_micro: int
    amount_text: str
    currency: str
    quantities: _containers.ScalarMap[str, float]
    run_id: str
    account: str
    session_id: str
    tags: _containers.ScalarMap[str, str]
    description: str
    def __init__(self, line_id: _Optional[str] = ..., interval_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., interval_end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., amount_usd_micro: _Optional[int] = ..., amount_text: _Optional[str] = ..., currency: _Optional[str] = ..., quantities: _Optional[_Mapping[str, float]] = ..., run_id: _Optional[str] = ..., account: _Optional[str] = ..., session_id: _Optional[str] = ..., tags: _Optional[_Mapping[str, str]] = ..., description: _Optional[str] = ...) -> None: ...

class RecordBilledUsageRequest(_message.Message):
    __slots__ = ("provider", "lines", "cost_data_through", "validate_only")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    COST_DATA_THROUGH_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    provider: str
    lines: _containers.RepeatedCompositeFieldContainer[BilledLine]
    cost_data_through: _timestamp_pb2.Timestamp
    validate_only: bool
    def __init__(self, provider: _Optional[str] = ..., lines: _Optional[_Iterable[_Union[BilledLine, _Mapping]]] = ..., cost_data_through: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class RecordBilledUsageResponse(_message.Message):
    __slots__ = ("position", "duplicate", "recorded", "restated", "unchanged")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    RESTATED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    recorded: int
    restated: int
    unchanged: int
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., recorded: _Optional[int] = ..., restated: _Optional[int] = ..., unchanged: _Optional[int] = ...) -> None: ...

class ReconcileRequest(_message.Message):
    __slots__ = ("run_id", "account", "threshold_percent", "page_size", "page_token", "min_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_PERCENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    account: str
    threshold_percent: float
    page_size: int
    page_token: str
    min_position: int
    def __init__(self, run_id: _Optional[str] = ..., account: _Optional[str] = ..., threshold_percent: _Optional[float] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class Reconciliation(_message.Message):
    __slots__ = ("run_id", "name", "account", "parent", "bill", "providers", "token_classes")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    BILL_FIELD_NUMBER: _ClassVar[int]
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_CLASSES_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    name: str
    account: str
    parent: str
    bill: _common_pb2.BillTotals
    providers: _containers.RepeatedScalarFieldContainer[str]
    token_classes: _containers.RepeatedCompositeFieldContainer[TokenClassDrift]
    def __init__(self, run_id: _Optional[str] = ..., name: _Optional[str] = ..., account: _Optional[str] = ..., parent: _Optional[str] = ..., bill: _Optional[_Union[_common_pb2.BillTotals, _Mapping]] = ..., providers: _Optional[_Iterable[str]] = ..., token_classes: _Optional[_Iterable[_Union[TokenClassDrift, _Mapping]]] = ...) -> None: ...

class TokenClassDrift(_message.Message):
    __slots__ = ("token_class", "ledger_tokens", "billed_tokens", "drift_tokens")
    TOKEN_CLASS_FIELD_NUMBER: _ClassVar[int]
    LEDGER_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BILLED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    DRIFT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    token_class: str
    ledger_tokens: int
    billed_tokens: int
    drift_tokens: int
    def __init__(self, token_class: _Optional[str] = ..., ledger_tokens: _Optional[int] = ..., billed_tokens: _Optional[int] = ..., drift_tokens: _Optional[int] = ...) -> None: ...

class ProviderBill(_message.Message):
    __slots__ = ("provider", "billed_usd_micro", "unattributed_usd_micro", "lines", "unattributed_lines", "restatements", "cost_data_through", "first_interval_start", "last_interval_end")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BILLED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    UNATTRIBUTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    UNATTRIBUTED_LINES_FIELD_NUMBER: _ClassVar[int]
    RESTATEMENTS_FIELD_NUMBER: _ClassVar[int]
    COST_DATA_THROUGH_FIELD_NUMBER: _ClassVar[int]
    FIRST_INTERVAL_START_FIELD_NUMBER: _ClassVar[int]
    LAST_INTERVAL_END_FIELD_NUMBER: _ClassVar[int]
    provider: str
    billed_usd_micro: int
    unattributed_usd_micro: int
    lines: int
    unattributed_lines: int
    restatements: int
    cost_data_through: _timestamp_pb2.Timestamp
    first_interval_start: _timestamp_pb2.Timestamp
    last_interval_end: _timestamp_pb2.Timestamp
    def __init__(self, provider: _Optional[str] = ..., billed_usd_micro: _Optional[int] = ..., unattributed_usd_micro: _Optional[int] = ..., lines: _Optional[int] = ..., unattributed_lines: _Optional[int] = ..., restatements: _Optional[int] = ..., cost_data_through: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., first_interval_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_interval_end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UnattributedGroup(_message.Message):
    __slots__ = ("provider", "source", "billed_usd_micro", "lines")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    BILLED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    provider: str
    source: str
    billed_usd_micro: int
    lines: int
    def __init__(self, provider: _Optional[str] = ..., source: _Optional[str] = ..., billed_usd_micro: _Optional[int] = ..., lines: _Optional[int] = ...) -> None: ...

class ReconcileResponse(_message.Message):
    __slots__ = ("runs", "accounts", "providers", "unattributed", "next_page_token", "threshold_percent", "position")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    UNATTRIBUTED_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_PERCENT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Reconciliation]
    accounts: _containers.RepeatedCompositeFieldContainer[Reconciliation]
    providers: _containers.RepeatedCompositeFieldContainer[ProviderBill]
    unattributed: _containers.RepeatedCompositeFieldContainer[UnattributedGroup]
    next_page_token: str
    threshold_percent: float
    position: int
    def __init__(self, runs: _Optional[_Iterable[_Union[Reconciliation, _Mapping]]] = ..., accounts: _Optional[_Iterable[_Union[Reconciliation, _Mapping]]] = ..., providers: _Optional[_Iterable[_Union[ProviderBill, _Mapping]]] = ..., unattributed: _Optional[_Iterable[_Union[UnattributedGroup, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., threshold_percent: _Optional[float] = ..., position: _Optional[int] = ...) -> None: ...

class AdjustToBillRequest(_message.Message):
    __slots__ = ("run_id", "account")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    account: str
    def __init__(self, run_id: _Optional[str] = ..., account: _Optional[str] = ...) -> None: ...

class Adjustment(_message.Message):
    __slots__ = ("account", "run_id", "adjustment_id", "amount_usd_micro", "overrun_usd_micro", "position", "duplicate")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ADJUSTMENT_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    account: str
    run_id: str
    adjustment_id: str
    amount_usd_micro: int
    overrun_usd_micro: int
    position: int
    duplicate: bool
    def __init__(self, account: _Optional[str] = ..., run_id: _Optional[str] = ..., adjustment_id: _Optional[str] = ..., amount_usd_micro: _Optional[int] = ..., overrun_usd_micro: _Optional[int] = ..., position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class AdjustToBillResponse(_message.Message):
    __slots__ = ("adjustments", "position")
    ADJUSTMENTS_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    adjustments: _containers.RepeatedCompositeFieldContainer[Adjustment]
    position: int
    def __init__(self, adjustments: _Optional[_Iterable[_Union[Adjustment, _Mapping]]] = ..., position: _Optional[int] = ...) -> None: ...
