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
    __slots__ = ("account", "parent", "cap_usd_micro", "committed_usd_micro", "pending_usd_micro", "remaining_usd_micro", "overrun_usd_micro")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PENDING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    REMAINING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    account: str
    parent: str
    cap_usd_micro: int
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int
    overrun_usd_micro: int
    def __init__(self, account: _Optional[str] = ..., parent: _Optional[str] = ..., cap_usd_micro: _Optional[int] = ..., committed_usd_micro: _Optional[int] = ..., pending_usd_micro: _Optional[int] = ..., remaining_usd_micro: _Optional[int] = ..., overrun_usd_micro: _Optional[int] = ...) -> None: ...

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
