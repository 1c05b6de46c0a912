import datetime

from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainledger.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ObjectiveMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OBJECTIVE_MODE_UNSPECIFIED: _ClassVar[ObjectiveMode]
    OBJECTIVE_MODE_MIN: _ClassVar[ObjectiveMode]
    OBJECTIVE_MODE_MAX: _ClassVar[ObjectiveMode]

class DatasetRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DATASET_ROLE_UNSPECIFIED: _ClassVar[DatasetRole]
    DATASET_ROLE_TRAIN: _ClassVar[DatasetRole]
    DATASET_ROLE_EVAL: _ClassVar[DatasetRole]
OBJECTIVE_MODE_UNSPECIFIED: ObjectiveMode
OBJECTIVE_MODE_MIN: ObjectiveMode
OBJECTIVE_MODE_MAX: ObjectiveMode
DATASET_ROLE_UNSPECIFIED: DatasetRole
DATASET_ROLE_TRAIN: DatasetRole
DATASET_ROLE_EVAL: DatasetRole

class OpenRunRequest(_message.Message):
    __slots__ = ("run_key", "name", "spec", "cap_usd_micro", "parent_account", "max_steps", "objective", "source_checkpoint")
    RUN_KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PARENT_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    run_key: str
    name: str
    spec: _struct_pb2.Struct
    cap_usd_micro: int
    parent_account: str
    max_steps: int
    objective: Objective
    source_checkpoint: RunSourceCheckpoint
    def __init__(self, run_key: _Optional[str] = ..., name: _Optional[str] = ..., spec: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cap_usd_micro: _Optional[int] = ..., parent_account: _Optional[str] = ..., max_steps: _Optional[int] = ..., objective: _Optional[_Union[Objective, _Mapping]] = ..., source_checkpoint: _Optional[_Union[RunSourceCheckpoint, _Mapping]] = ...) -> None: ...

class OpenRunResponse(_message.Message):
    __slots__ = ("state", "created", "position")
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    state: RunState
    created: bool
    position: int
    def __init__(self, state: _Optional[_Union[RunState, _Mapping]] = ..., created: _Optional[bool] = ..., position: _Optional[int] = ...) -> None: ...

class StartAttemptRequest(_message.Message):
    __slots__ = ("run_id", "attempt_id", "label", "resume_from_step", "max_steps", "lease_s")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_STEP_FIELD_NUMBER: _ClassVar[int]
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    LEASE_S_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    attempt_id: str
    label: str
    resume_from_step: int
    max_steps: int
    lease_s: int
    def __init__(self, run_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., label: _Optional[str] = ..., resume_from_step: _Optional[int] = ..., max_steps: _Optional[int] = ..., lease_s: _Optional[int] = ...) -> None: ...

class StartAttemptResponse(_message.Message):
    __slots__ = ("attempt", "position", "duplicate", "state")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    position: int
    duplicate: bool
    state: RunState
    def __init__(self, attempt: _Optional[int] = ..., position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., state: _Optional[_Union[RunState, _Mapping]] = ...) -> None: ...

class AppendStepsRequest(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: _common_pb2.StepBatch
    def __init__(self, batch: _Optional[_Union[_common_pb2.StepBatch, _Mapping]] = ...) -> None: ...

class AppendStepsResponse(_message.Message):
    __slots__ = ("position", "duplicate", "last_step")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    last_step: int
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., last_step: _Optional[int] = ...) -> None: ...

class RecordStepsRequest(_message.Message):
    __slots__ = ("sequence", "batch")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    batch: _common_pb2.StepBatch
    def __init__(self, sequence: _Optional[int] = ..., batch: _Optional[_Union[_common_pb2.StepBatch, _Mapping]] = ...) -> None: ...

class RecordStepsResponse(_message.Message):
    __slots__ = ("sequence", "position", "duplicate", "last_step")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    position: int
    duplicate: bool
    last_step: int
    def __init__(self, sequence: _Optional[int] = ..., position: _Optional[int] = ..., duplicate: _Optional[bool] = ..., last_step: _Optional[int] = ...) -> None: ...

class SaveCheckpointRequest(_message.Message):
    __slots__ = ("run_id", "attempt", "step", "handle", "sampler_uri", "final", "expires_at", "digest", "scores")
    class ScoresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    SAMPLER_URI_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    attempt: int
    step: int
    handle: _common_pb2.StateHandle
    sampler_uri: str
    final: bool
    expires_at: _timestamp_pb2.Timestamp
    digest: str
    scores: _containers.ScalarMap[str, float]
    def __init__(self, run_id: _Optional[str] = ..., attempt: _Optional[int] = ..., step: _Optional[int] = ..., handle: _Optional[_Union[_common_pb2.StateHandle, _Mapping]] = ..., sampler_uri: _Optional[str] = ..., final: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., digest: _Optional[str] = ..., scores: _Optional[_Mapping[str, float]] = ...) -> None: ...

class SaveCheckpointResponse(_message.Message):
    __slots__ = ("position", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class FinishRunRequest(_message.Message):
    __slots__ = ("run_id", "attempt", "status", "summary", "error")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    attempt: int
    status: _common_pb2.RunStatus
    summary: _struct_pb2.Struct
    error: str
    def __init__(self, run_id: _Optional[str] = ..., attempt: _Optional[int] = ..., status: _Optional[_Union[_common_pb2.RunStatus, str]] = ..., summary: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class FinishRunResponse(_message.Message):
    __slots__ = ("position",)
    POSITION_FIELD_NUMBER: _ClassVar[int]
    position: int
    def __init__(self, position: _Optional[int] = ...) -> None: ...

class NoteSummaryRequest(_message.Message):
    __slots__ = ("run_id", "summary")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    summary: _struct_pb2.Struct
    def __init__(self, run_id: _Optional[str] = ..., summary: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class NoteSummaryResponse(_message.Message):
    __slots__ = ("position",)
    POSITION_FIELD_NUMBER: _ClassVar[int]
    position: int
    def __init__(self, position: _Optional[int] = ...) -> None: ...

class RecordReportRequest(_message.Message):
    __slots__ = ("run_id", "kind", "report")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    kind: str
    report: _struct_pb2.Struct
    def __init__(self, run_id: _Optional[str] = ..., kind: _Optional[str] = ..., report: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RecordReportResponse(_message.Message):
    __slots__ = ("position",)
    POSITION_FIELD_NUMBER: _ClassVar[int]
    position: int
    def __init__(self, position: _Optional[int] = ...) -> None: ...

class GetRunStateRequest(_message.Message):
    __slots__ = ("run_id", "min_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    min_position: int
    def __init__(self, run_id: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class GetRunStateResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: RunState
    def __init__(self, state: _Optional[_Union[RunState, _Mapping]] = ...) -> None: ...

class RunState(_message.Message):
    __slots__ = ("run", "attempts", "current_attempt", "checkpoint", "expired_checkpoints", "resume", "last_step", "spend", "position", "expired_checkpoint_count", "best_checkpoint", "progress", "datasets", "reports", "tags", "source", "children", "child_count")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    SPEND_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_CHECKPOINT_COUNT_FIELD_NUMBER: _ClassVar[int]
    BEST_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DATASETS_FIELD_NUMBER: _ClassVar[int]
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    CHILD_COUNT_FIELD_NUMBER: _ClassVar[int]
    run: RunInfo
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    current_attempt: int
    checkpoint: Checkpoint
    expired_checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    resume: Resume
    last_step: int
    spend: SpendTotals
    position: int
    expired_checkpoint_count: int
    best_checkpoint: Checkpoint
    progress: Progress
    datasets: _containers.RepeatedCompositeFieldContainer[Dataset]
    reports: _struct_pb2.Struct
    tags: _containers.ScalarMap[str, str]
    source: LineageRun
    children: _containers.RepeatedCompositeFieldContainer[LineageRun]
    child_count: int
    def __init__(self, run: _Optional[_Union[RunInfo, _Mapping]] = ..., attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ..., current_attempt: _Optional[int] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., expired_checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ..., resume: _Optional[_Union[Resume, _Mapping]] = ..., last_step: _Optional[int] = ..., spend: _Optional[_Union[SpendTotals, _Mapping]] = ..., position: _Optional[int] = ..., expired_checkpoint_count: _Optional[int] = ..., best_checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., datasets: _Optional[_Iterable[_Union[Dataset, _Mapping]]] = ..., reports: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., tags: _Optional[_Mapping[str, str]] = ..., source: _Optional[_Union[LineageRun, _Mapping]] = ..., children: _Optional[_Iterable[_Union[LineageRun, _Mapping]]] = ..., child_count: _Optional[int] = ...) -> None: ...

class RunInfo(_message.Message):
    __slots__ = ("run_id", "run_key", "name", "status", "spec", "summary", "error", "opened_at", "finished_at", "objective", "retraction")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    RETRACTION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    run_key: str
    name: str
    status: _common_pb2.RunStatus
    spec: _struct_pb2.Struct
    summary: _struct_pb2.Struct
    error: str
    opened_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    objective: Objective
    retraction: Retraction
    def __init__(self, run_id: _Optional[str] = ..., run_key: _Optional[str] = ..., name: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.RunStatus, str]] = ..., spec: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., summary: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[str] = ..., opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., objective: _Optional[_Union[Objective, _Mapping]] = ..., retraction: _Optional[_Union[Retraction, _Mapping]] = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ("number", "attempt_id", "label", "started_at", "resumed_from_step", "ended", "lease_s", "last_seen_at", "lost_at")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FROM_STEP_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    LEASE_S_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    LOST_AT_FIELD_NUMBER: _ClassVar[int]
    number: int
    attempt_id: str
    label: str
    started_at: _timestamp_pb2.Timestamp
    resumed_from_step: int
    ended: bool
    lease_s: int
    last_seen_at: _timestamp_pb2.Timestamp
    lost_at: _timestamp_pb2.Timestamp
    def __init__(self, number: _Optional[int] = ..., attempt_id: _Optional[str] = ..., label: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resumed_from_step: _Optional[int] = ..., ended: _Optional[bool] = ..., lease_s: _Optional[int] = ..., last_seen_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lost_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Checkpoint(_message.Message):
    __slots__ = ("attempt", "step", "handle", "sampler_uri", "final", "saved_at", "expires_at", "digest", "superseded", "scores", "deleted_at", "expired")
    class ScoresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    SAMPLER_URI_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    SAVED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    DELETED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    step: int
    handle: _common_pb2.StateHandle
    sampler_uri: str
    final: bool
    saved_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    digest: str
    superseded: bool
    scores: _containers.ScalarMap[str, float]
    deleted_at: _timestamp_pb2.Timestamp
    expired: bool
    def __init__(self, attempt: _Optional[int] = ..., step: _Optional[int] = ..., handle: _Optional[_Union[_common_pb2.StateHandle, _Mapping]] = ..., sampler_uri: _Optional[str] = ..., final: _Optional[bool] = ..., saved_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., digest: _Optional[str] = ..., superseded: _Optional[bool] = ..., scores: _Optional[_Mapping[str, float]] = ..., deleted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expired: _Optional[bool] = ...) -> None: ...

class Resume(_message.Message):
    __slots__ = ("available", "from_step", "handle", "sampler_uri", "spend_committed_usd_micro")
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    FROM_STEP_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    SAMPLER_URI_FIELD_NUMBER: _ClassVar[int]
    SPEND_COMMITTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    available: bool
    from_step: int
    handle: _common_pb2.StateHandle
    sampler_uri: str
    spend_committed_usd_micro: int
    def __init__(self, available: _Optional[bool] = ..., from_step: _Optional[int] = ..., handle: _Optional[_Union[_common_pb2.StateHandle, _Mapping]] = ..., sampler_uri: _Optional[str] = ..., spend_committed_usd_micro: _Optional[int] = ...) -> None: ...

class SpendTotals(_message.Message):
    __slots__ = ("cap_usd_micro", "committed_usd_micro", "pending_usd_micro", "remaining_usd_micro", "overrun_usd_micro", "bill", "plan", "presumed_usd_micro")
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PENDING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    REMAINING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    OVERRUN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BILL_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PRESUMED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    cap_usd_micro: int
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int
    overrun_usd_micro: int
    bill: _common_pb2.BillTotals
    plan: _common_pb2.PlanHold
    presumed_usd_micro: int
    def __init__(self, cap_usd_micro: _Optional[int] = ..., committed_usd_micro: _Optional[int] = ..., pending_usd_micro: _Optional[int] = ..., remaining_usd_micro: _Optional[int] = ..., overrun_usd_micro: _Optional[int] = ..., bill: _Optional[_Union[_common_pb2.BillTotals, _Mapping]] = ..., plan: _Optional[_Union[_common_pb2.PlanHold, _Mapping]] = ..., presumed_usd_micro: _Optional[int] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "status", "min_position", "name_contains", "run_id_prefix", "account", "include_retracted", "where", "order_by", "descending")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    NAME_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_PREFIX_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_RETRACTED_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    DESCENDING_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    status: _common_pb2.RunStatus
    min_position: int
    name_contains: str
    run_id_prefix: str
    account: str
    include_retracted: bool
    where: str
    order_by: str
    descending: bool
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.RunStatus, str]] = ..., min_position: _Optional[int] = ..., name_contains: _Optional[str] = ..., run_id_prefix: _Optional[str] = ..., account: _Optional[str] = ..., include_retracted: _Optional[bool] = ..., where: _Optional[str] = ..., order_by: _Optional[str] = ..., descending: _Optional[bool] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[RunSummary]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[RunSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RunSummary(_message.Message):
    __slots__ = ("run_id", "name", "status", "current_attempt", "last_step", "committed_usd_micro", "opened_at", "parent_account", "cap_usd_micro", "pending_usd_micro", "progress", "retracted", "presumed_usd_micro", "tags")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    PARENT_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    CAP_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PENDING_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RETRACTED_FIELD_NUMBER: _ClassVar[int]
    PRESUMED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    name: str
    status: _common_pb2.RunStatus
    current_attempt: int
    last_step: int
    committed_usd_micro: int
    opened_at: _timestamp_pb2.Timestamp
    parent_account: str
    cap_usd_micro: int
    pending_usd_micro: int
    progress: Progress
    retracted: bool
    presumed_usd_micro: int
    tags: _containers.ScalarMap[str, str]
    def __init__(self, run_id: _Optional[str] = ..., name: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.RunStatus, str]] = ..., current_attempt: _Optional[int] = ..., last_step: _Optional[int] = ..., committed_usd_micro: _Optional[int] = ..., opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., parent_account: _Optional[str] = ..., cap_usd_micro: _Optional[int] = ..., pending_usd_micro: _Optional[int] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., retracted: _Optional[bool] = ..., presumed_usd_micro: _Optional[int] = ..., tags: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetSeriesRequest(_message.Message):
    __slots__ = ("run_id", "from_step", "page_size", "metrics", "include_superseded", "min_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_STEP_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    from_step: int
    page_size: int
    metrics: _containers.RepeatedScalarFieldContainer[str]
    include_superseded: bool
    min_position: int
    def __init__(self, run_id: _Optional[str] = ..., from_step: _Optional[int] = ..., page_size: _Optional[int] = ..., metrics: _Optional[_Iterable[str]] = ..., include_superseded: _Optional[bool] = ..., min_position: _Optional[int] = ...) -> None: ...

class GetSeriesResponse(_message.Message):
    __slots__ = ("steps", "attempts", "tokens", "usd_micro", "superseded", "metrics", "next_from_step")
    STEPS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FROM_STEP_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedScalarFieldContainer[int]
    attempts: _containers.RepeatedScalarFieldContainer[int]
    tokens: _containers.RepeatedScalarFieldContainer[int]
    usd_micro: _containers.RepeatedScalarFieldContainer[int]
    superseded: _containers.RepeatedScalarFieldContainer[bool]
    metrics: _containers.RepeatedCompositeFieldContainer[_common_pb2.MetricColumn]
    next_from_step: int
    def __init__(self, steps: _Optional[_Iterable[int]] = ..., attempts: _Optional[_Iterable[int]] = ..., tokens: _Optional[_Iterable[int]] = ..., usd_micro: _Optional[_Iterable[int]] = ..., superseded: _Optional[_Iterable[bool]] = ..., metrics: _Optional[_Iterable[_Union[_common_pb2.MetricColumn, _Mapping]]] = ..., next_from_step: _Optional[int] = ...) -> None: ...

class WatchRunRequest(_message.Message):
    __slots__ = ("run_id", "from_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    from_position: int
    def __init__(self, run_id: _Optional[str] = ..., from_position: _Optional[int] = ...) -> None: ...

class WatchRunResponse(_message.Message):
    __slots__ = ("position", "event_type", "steps", "state", "state_mask")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_MASK_FIELD_NUMBER: _ClassVar[int]
    position: int
    event_type: str
    steps: _common_pb2.StepBatch
    state: RunState
    state_mask: _field_mask_pb2.FieldMask
    def __init__(self, position: _Optional[int] = ..., event_type: _Optional[str] = ..., steps: _Optional[_Union[_common_pb2.StepBatch, _Mapping]] = ..., state: _Optional[_Union[RunState, _Mapping]] = ..., state_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class LinkSessionRequest(_message.Message):
    __slots__ = ("run_id", "provider", "session_id", "attempt")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    provider: str
    session_id: str
    attempt: int
    def __init__(self, run_id: _Optional[str] = ..., provider: _Optional[str] = ..., session_id: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class LinkSessionResponse(_message.Message):
    __slots__ = ("position", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class GetMetricsRequest(_message.Message):
    __slots__ = ("run_id", "min_position", "page_size", "page_token")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    min_position: int
    page_size: int
    page_token: str
    def __init__(self, run_id: _Optional[str] = ..., min_position: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetMetricsResponse(_message.Message):
    __slots__ = ("metrics", "next_page_token")
    METRICS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    metrics: _containers.RepeatedCompositeFieldContainer[MetricStats]
    next_page_token: str
    def __init__(self, metrics: _Optional[_Iterable[_Union[MetricStats, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class MetricStats(_message.Message):
    __slots__ = ("name", "count", "first_step", "last_step", "last", "min", "max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FIRST_STEP_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    first_step: int
    last_step: int
    last: float
    min: float
    max: float
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., first_step: _Optional[int] = ..., last_step: _Optional[int] = ..., last: _Optional[float] = ..., min: _Optional[float] = ..., max: _Optional[float] = ...) -> None: ...

class ListCheckpointsRequest(_message.Message):
    __slots__ = ("run_id", "page_size", "page_token", "min_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    page_size: int
    page_token: str
    min_position: int
    def __init__(self, run_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class ListCheckpointsResponse(_message.Message):
    __slots__ = ("checkpoints", "next_page_token")
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    next_page_token: str
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Objective(_message.Message):
    __slots__ = ("metric", "mode")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    metric: str
    mode: ObjectiveMode
    def __init__(self, metric: _Optional[str] = ..., mode: _Optional[_Union[ObjectiveMode, str]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("max_steps", "step", "fraction", "steps_per_second", "eta")
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    STEPS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    ETA_FIELD_NUMBER: _ClassVar[int]
    max_steps: int
    step: int
    fraction: float
    steps_per_second: float
    eta: _timestamp_pb2.Timestamp
    def __init__(self, max_steps: _Optional[int] = ..., step: _Optional[int] = ..., fraction: _Optional[float] = ..., steps_per_second: _Optional[float] = ..., eta: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Retraction(_message.Message):
    __slots__ = ("reason", "retracted_at", "principal")
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRACTED_AT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    reason: str
    retracted_at: _timestamp_pb2.Timestamp
    principal: str
    def __init__(self, reason: _Optional[str] = ..., retracted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ...) -> None: ...

class Dataset(_message.Message):
    __slots__ = ("role", "digest", "format", "rows", "tokens", "source_uri", "report", "recorded_at")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_URI_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    role: DatasetRole
    digest: str
    format: str
    rows: int
    tokens: int
    source_uri: str
    report: _struct_pb2.Struct
    recorded_at: _timestamp_pb2.Timestamp
    def __init__(self, role: _Optional[_Union[DatasetRole, str]] = ..., digest: _Optional[str] = ..., format: _Optional[str] = ..., rows: _Optional[int] = ..., tokens: _Optional[int] = ..., source_uri: _Optional[str] = ..., report: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., recorded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BestCheckpointRequest(_message.Message):
    __slots__ = ("run_id", "objective", "include_superseded", "min_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    objective: Objective
    include_superseded: bool
    min_position: int
    def __init__(self, run_id: _Optional[str] = ..., objective: _Optional[_Union[Objective, _Mapping]] = ..., include_superseded: _Optional[bool] = ..., min_position: _Optional[int] = ...) -> None: ...

class BestCheckpointResponse(_message.Message):
    __slots__ = ("checkpoint", "score", "objective")
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    score: float
    objective: Objective
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., score: _Optional[float] = ..., objective: _Optional[_Union[Objective, _Mapping]] = ...) -> None: ...

class RetractRunRequest(_message.Message):
    __slots__ = ("run_id", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RetractRunResponse(_message.Message):
    __slots__ = ("position", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class RecordDatasetRequest(_message.Message):
    __slots__ = ("run_id", "dataset")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    dataset: Dataset
    def __init__(self, run_id: _Optional[str] = ..., dataset: _Optional[_Union[Dataset, _Mapping]] = ...) -> None: ...

class RecordDatasetResponse(_message.Message):
    __slots__ = ("position", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class PlanPruneRequest(_message.Message):
    __slots__ = ("run_id", "keep_last", "page_size", "page_token", "min_position")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    KEEP_LAST_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_POSITION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    keep_last: int
    page_size: int
    page_token: str
    min_position: int
    def __init__(self, run_id: _Optional[str] = ..., keep_last: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_position: _Optional[int] = ...) -> None: ...

class PruneEntry(_message.Message):
    __slots__ = ("checkpoint", "delete", "kept_because")
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    KEPT_BECAUSE_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    delete: bool
    kept_because: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., delete: _Optional[bool] = ..., kept_because: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanPruneResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[PruneEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[PruneEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteCheckpointRequest(_message.Message):
    __slots__ = ("run_id", "attempt", "step", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    attempt: int
    step: int
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., attempt: _Optional[int] = ..., step: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class DeleteCheckpointResponse(_message.Message):
    __slots__ = ("position", "duplicate")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    position: int
    duplicate: bool
    def __init__(self, position: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("run_id", "attempt")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    attempt: int
    def __init__(self, run_id: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("position",)
    POSITION_FIELD_NUMBER: _ClassVar[int]
    position: int
    def __init__(self, position: _Optional[int] = ...) -> None: ...

class SetTagsRequest(_message.Message):
    __slots__ = ("run_id", "set", "remove")
    class SetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    set: _containers.ScalarMap[str, str]
    remove: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, run_id: _Optional[str] = ..., set: _Optional[_Mapping[str, str]] = ..., remove: _Optional[_Iterable[str]] = ...) -> None: ...

class SetTagsResponse(_message.Message):
    __slots__ = ("position",)
    POSITION_FIELD_NUMBER: _ClassVar[int]
    position: int
    def __init__(self, position: _Optional[int] = ...) -> None: ...

class RunSourceCheckpoint(_message.Message):
    __slots__ = ("run_id", "step", "uri")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    step: int
    uri: str
    def __init__(self, run_id: _Optional[str] = ..., step: _Optional[int] = ..., uri: _Optional[str] = ...) -> None: ...

class LineageRun(_message.Message):
    __slots__ = ("run_id", "name", "step", "uri", "opened_at", "retracted")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    RETRACTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    name: str
    step: int
    uri: str
    opened_at: _timestamp_pb2.Timestamp
    retracted: bool
    def __init__(self, run_id: _Optional[str] = ..., name: _Optional[str] = ..., step: _Optional[int] = ..., uri: _Optional[str] = ..., opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retracted: _Optional[bool] = ...) -> None: ...
