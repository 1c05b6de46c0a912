import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadEventsRequest(_message.Message):
    __slots__ = ("from_position", "limit", "types")
    FROM_POSITION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    from_position: int
    limit: int
    types: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, from_position: _Optional[int] = ..., limit: _Optional[int] = ..., types: _Optional[_Iterable[str]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("position", "type", "originator_id", "originator_version", "recorded_at", "principal", "request_id", "data_json", "digest")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ORIGINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINATOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    position: int
    type: str
    originator_id: str
    originator_version: int
    recorded_at: _timestamp_pb2.Timestamp
    principal: str
    request_id: str
    data_json: bytes
    digest: str
    def __init__(self, position: _Optional[int] = ..., type: _Optional[str] = ..., originator_id: _Optional[str] = ..., originator_version: _Optional[int] = ..., recorded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., request_id: _Optional[str] = ..., data_json: _Optional[bytes] = ..., digest: _Optional[str] = ...) -> None: ...

class ChainHead(_message.Message):
    __slots__ = ("position", "digest")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    position: int
    digest: str
    def __init__(self, position: _Optional[int] = ..., digest: _Optional[str] = ...) -> None: ...

class GetHeadRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetHeadResponse(_message.Message):
    __slots__ = ("position", "digest")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    position: int
    digest: str
    def __init__(self, position: _Optional[int] = ..., digest: _Optional[str] = ...) -> None: ...

class VerifyRequest(_message.Message):
    __slots__ = ("expect_head", "skip_views")
    EXPECT_HEAD_FIELD_NUMBER: _ClassVar[int]
    SKIP_VIEWS_FIELD_NUMBER: _ClassVar[int]
    expect_head: ChainHead
    skip_views: bool
    def __init__(self, expect_head: _Optional[_Union[ChainHead, _Mapping]] = ..., skip_views: _Optional[bool] = ...) -> None: ...

class VerifyResponse(_message.Message):
    __slots__ = ("ok", "head", "checked", "broken_at", "problem", "detail")
    OK_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    BROKEN_AT_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    head: ChainHead
    checked: int
    broken_at: int
    problem: str
    detail: str
    def __init__(self, ok: _Optional[bool] = ..., head: _Optional[_Union[ChainHead, _Mapping]] = ..., checked: _Optional[int] = ..., broken_at: _Optional[int] = ..., problem: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class VerifyProgress(_message.Message):
    __slots__ = ("stage", "checked", "outcome")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    stage: str
    checked: int
    outcome: VerifyResponse
    def __init__(self, stage: _Optional[str] = ..., checked: _Optional[int] = ..., outcome: _Optional[_Union[VerifyResponse, _Mapping]] = ...) -> None: ...
