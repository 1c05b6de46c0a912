import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModelVersion(_message.Message):
    __slots__ = ("family", "version", "artifact_uri", "digest", "source_run_id", "source_step", "metadata", "registered_at", "source_checkpoint", "source_retracted", "aliases")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_URI_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_STEP_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_RETRACTED_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    family: str
    version: int
    artifact_uri: str
    digest: str
    source_run_id: str
    source_step: int
    metadata: _struct_pb2.Struct
    registered_at: _timestamp_pb2.Timestamp
    source_checkpoint: SourceCheckpoint
    source_retracted: bool
    aliases: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, family: _Optional[str] = ..., version: _Optional[int] = ..., artifact_uri: _Optional[str] = ..., digest: _Optional[str] = ..., source_run_id: _Optional[str] = ..., source_step: _Optional[int] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., registered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., source_checkpoint: _Optional[_Union[SourceCheckpoint, _Mapping]] = ..., source_retracted: _Optional[bool] = ..., aliases: _Optional[_Iterable[str]] = ...) -> None: ...

class GateVerdict(_message.Message):
    __slots__ = ("passed", "reason", "stats", "mode", "rule", "evidence")
    PASSED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    passed: bool
    reason: str
    stats: _struct_pb2.Struct
    mode: str
    rule: str
    evidence: _containers.RepeatedCompositeFieldContainer[GateEvidence]
    def __init__(self, passed: _Optional[bool] = ..., reason: _Optional[str] = ..., stats: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., mode: _Optional[str] = ..., rule: _Optional[str] = ..., evidence: _Optional[_Iterable[_Union[GateEvidence, _Mapping]]] = ...) -> None: ...

class GateEvidence(_message.Message):
    __slots__ = ("name", "value", "source", "run_id", "step", "position")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    source: str
    run_id: str
    step: int
    position: int
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., source: _Optional[str] = ..., run_id: _Optional[str] = ..., step: _Optional[int] = ..., position: _Optional[int] = ...) -> None: ...

class Promotion(_message.Message):
    __slots__ = ("version", "previous", "kind", "verdict", "reason", "at", "principal", "position", "refusal", "expected_current")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_CURRENT_FIELD_NUMBER: _ClassVar[int]
    version: int
    previous: int
    kind: str
    verdict: GateVerdict
    reason: str
    at: _timestamp_pb2.Timestamp
    principal: str
    position: int
    refusal: str
    expected_current: int
    def __init__(self, version: _Optional[int] = ..., previous: _Optional[int] = ..., kind: _Optional[str] = ..., verdict: _Optional[_Union[GateVerdict, _Mapping]] = ..., reason: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., position: _Optional[int] = ..., refusal: _Optional[str] = ..., expected_current: _Optional[int] = ...) -> None: ...

class Alias(_message.Message):
    __slots__ = ("alias", "version", "moved_at", "principal", "position")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MOVED_AT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    alias: str
    version: int
    moved_at: _timestamp_pb2.Timestamp
    principal: str
    position: int
    def __init__(self, alias: _Optional[str] = ..., version: _Optional[int] = ..., moved_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., position: _Optional[int] = ...) -> None: ...

class Retirement(_message.Message):
    __slots__ = ("reason", "at", "principal", "position")
    REASON_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    reason: str
    at: _timestamp_pb2.Timestamp
    principal: str
    position: int
    def __init__(self, reason: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., position: _Optional[int] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("family", "artifact_uri", "digest", "source_run_id", "source_step", "metadata", "source_checkpoint")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_URI_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_STEP_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    family: str
    artifact_uri: str
    digest: str
    source_run_id: str
    source_step: int
    metadata: _struct_pb2.Struct
    source_checkpoint: SourceCheckpoint
    def __init__(self, family: _Optional[str] = ..., artifact_uri: _Optional[str] = ..., digest: _Optional[str] = ..., source_run_id: _Optional[str] = ..., source_step: _Optional[int] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., source_checkpoint: _Optional[_Union[SourceCheckpoint, _Mapping]] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("position", "version", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    version: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., version: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class PromoteRequest(_message.Message):
    __slots__ = ("family", "version", "expected_current", "verdict", "gate_rule", "evaluation_run_id")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_CURRENT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    GATE_RULE_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    family: str
    version: int
    expected_current: int
    verdict: GateVerdict
    gate_rule: str
    evaluation_run_id: str
    def __init__(self, family: _Optional[str] = ..., version: _Optional[int] = ..., expected_current: _Optional[int] = ..., verdict: _Optional[_Union[GateVerdict, _Mapping]] = ..., gate_rule: _Optional[str] = ..., evaluation_run_id: _Optional[str] = ...) -> None: ...

class PromoteResponse(_message.Message):
    __slots__ = ("position", "duplicate", "current", "previous", "verdict")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    current: int
    previous: int
    verdict: GateVerdict
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., current: _Optional[int] = ..., previous: _Optional[int] = ..., verdict: _Optional[_Union[GateVerdict, _Mapping]] = ...) -> None: ...

class RollbackRequest(_message.Message):
    __slots__ = ("family", "version", "expected_current", "reason")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_CURRENT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    family: str
    version: int
    expected_current: int
    reason: str
    def __init__(self, family: _Optional[str] = ..., version: _Optional[int] = ..., expected_current: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class RollbackResponse(_message.Message):
    __slots__ = ("position", "duplicate", "current", "previous")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    current: int
    previous: int
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., current: _Optional[int] = ..., previous: _Optional[int] = ...) -> None: ...

class GetCurrentRequest(_message.Message):
    __slots__ = ("family", "min_position", "alias")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    family: str
    min_position: int
    alias: str
    def __init__(self, family: _Optional[str] = ..., min_position: _Optional[int] = ..., alias: _Optional[str] = ...) -> None: ...

class GetCurrentResponse(_message.Message):
    __slots__ = ("version", "promotion", "retired")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROMOTION_FIELD_NUMBER: _ClassVar[int]
    RETIRED_FIELD_NUMBER: _ClassVar[int]
    version: ModelVersion
    promotion: Promotion
    retired: Retirement
    def __init__(self, version: _Optional[_Union[ModelVersion, _Mapping]] = ..., promotion: _Optional[_Union[Promotion, _Mapping]] = ..., retired: _Optional[_Union[Retirement, _Mapping]] = ...) -> None: ...

class ListVersionsRequest(_message.Message):
    __slots__ = ("family", "min_position", "page_size", "page_token")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    family: str
    min_position: int
    page_size: int
    page_token: str
    def __init__(self, family: _Optional[str] = ..., min_position: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListVersionsResponse(_message.Message):
    __slots__ = ("versions", "current", "history", "next_page_token", "aliases", "retired")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    RETIRED_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[ModelVersion]
    current: int
    history: _containers.RepeatedCompositeFieldContainer[Promotion]
    next_page_token: str
    aliases: _containers.RepeatedCompositeFieldContainer[Alias]
    retired: Retirement
    def __init__(self, versions: _Optional[_Iterable[_Union[ModelVersion, _Mapping]]] = ..., current: _Optional[int] = ..., history: _Optional[_Iterable[_Union[Promotion, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., aliases: _Optional[_Iterable[_Union[Alias, _Mapping]]] = ..., retired: _Optional[_Union[Retirement, _Mapping]] = ...) -> None: ...

class ListFamiliesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "min_position")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    min_position: int
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class ListFamiliesResponse(_message.Message):
    __slots__ = ("families", "next_page_token")
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    families: _containers.RepeatedCompositeFieldContainer[FamilySummary]
    next_page_token: str
    def __init__(self, families: _Optional[_Iterable[_Union[FamilySummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class FamilySummary(_message.Message):
    __slots__ = ("family", "current", "version_count", "retired")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_COUNT_FIELD_NUMBER: _ClassVar[int]
    RETIRED_FIELD_NUMBER: _ClassVar[int]
    family: str
    current: int
    version_count: int
    retired: bool
    def __init__(self, family: _Optional[str] = ..., current: _Optional[int] = ..., version_count: _Optional[int] = ..., retired: _Optional[bool] = ...) -> None: ...

class SourceCheckpoint(_message.Message):
    __slots__ = ("run_id", "step", "attempt", "checkpoint_digest")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    step: int
    attempt: int
    checkpoint_digest: str
    def __init__(self, run_id: _Optional[str] = ..., step: _Optional[int] = ..., attempt: _Optional[int] = ..., checkpoint_digest: _Optional[str] = ...) -> None: ...

class ListProtectedStatesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "min_position")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    min_position: int
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class ProtectedState(_message.Message):
    __slots__ = ("uri", "backend", "why")
    URI_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    uri: str
    backend: str
    why: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, uri: _Optional[str] = ..., backend: _Optional[str] = ..., why: _Optional[_Iterable[str]] = ...) -> None: ...

class ListProtectedStatesResponse(_message.Message):
    __slots__ = ("states", "next_page_token")
    STATES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedCompositeFieldContainer[ProtectedState]
    next_page_token: str
    def __init__(self, states: _Optional[_Iterable[_Union[ProtectedState, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class MoveAliasRequest(_message.Message):
    __slots__ = ("family", "alias", "version", "expected_version")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    family: str
    alias: str
    version: int
    expected_version: int
    def __init__(self, family: _Optional[str] = ..., alias: _Optional[str] = ..., version: _Optional[int] = ..., expected_version: _Optional[int] = ...) -> None: ...

class MoveAliasResponse(_message.Message):
    __slots__ = ("position", "duplicate", "version", "previous")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    version: int
    previous: int
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., version: _Optional[int] = ..., previous: _Optional[int] = ...) -> None: ...

class RetireFamilyRequest(_message.Message):
    __slots__ = ("family", "reason")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    family: str
    reason: str
    def __init__(self, family: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RetireFamilyResponse(_message.Message):
    __slots__ = ("position", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...
