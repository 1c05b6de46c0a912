from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATUS_UNSPECIFIED: _ClassVar[RunStatus]
    RUN_STATUS_RUNNING: _ClassVar[RunStatus]
    RUN_STATUS_DONE: _ClassVar[RunStatus]
    RUN_STATUS_FAILED: _ClassVar[RunStatus]
    RUN_STATUS_STOPPED: _ClassVar[RunStatus]
    RUN_STATUS_LOST: _ClassVar[RunStatus]
RUN_STATUS_UNSPECIFIED: RunStatus
RUN_STATUS_RUNNING: RunStatus
RUN_STATUS_DONE: RunStatus
RUN_STATUS_FAILED: RunStatus
RUN_STATUS_STOPPED: RunStatus
RUN_STATUS_LOST: RunStatus

class CostBasis(_message.Message):
    __slots__ = ("price_sheet", "price_source", "tokens", "gpu")
    PRICE_SHEET_FIELD_NUMBER: _ClassVar[int]
    PRICE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    price_sheet: str
    price_source: str
    tokens: _containers.RepeatedCompositeFieldContainer[TokenCost]
    gpu: GpuCost
    def __init__(self, price_sheet: _Optional[str] = ..., price_source: _Optional[str] = ..., tokens: _Optional[_Iterable[_Union[TokenCost, _Mapping]]] = ..., gpu: _Optional[_Union[GpuCost, _Mapping]] = ...) -> None: ...

class TokenCost(_message.Message):
    __slots__ = ("token_class", "tokens", "usd_micro_per_million_tokens")
    TOKEN_CLASS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    USD_MICRO_PER_MILLION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    token_class: str
    tokens: int
    usd_micro_per_million_tokens: int
    def __init__(self, token_class: _Optional[str] = ..., tokens: _Optional[int] = ..., usd_micro_per_million_tokens: _Optional[int] = ...) -> None: ...

class GpuCost(_message.Message):
    __slots__ = ("gpu_milliseconds", "usd_micro_per_gpu_hour", "gpu_type", "gpu_count")
    GPU_MILLISECONDS_FIELD_NUMBER: _ClassVar[int]
    USD_MICRO_PER_GPU_HOUR_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    gpu_milliseconds: int
    usd_micro_per_gpu_hour: int
    gpu_type: str
    gpu_count: int
    def __init__(self, gpu_milliseconds: _Optional[int] = ..., usd_micro_per_gpu_hour: _Optional[int] = ..., gpu_type: _Optional[str] = ..., gpu_count: _Optional[int] = ...) -> None: ...

class StateHandle(_message.Message):
    __slots__ = ("backend", "uri", "fidelity")
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    FIDELITY_FIELD_NUMBER: _ClassVar[int]
    backend: str
    uri: str
    fidelity: str
    def __init__(self, backend: _Optional[str] = ..., uri: _Optional[str] = ..., fidelity: _Optional[str] = ...) -> None: ...

class MetricColumn(_message.Message):
    __slots__ = ("name", "values", "index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.RepeatedScalarFieldContainer[float]
    index: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ..., index: _Optional[_Iterable[int]] = ...) -> None: ...

class StepBatch(_message.Message):
    __slots__ = ("run_id", "attempt", "steps", "tokens", "usd_micro", "metrics")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    attempt: int
    steps: _containers.RepeatedScalarFieldContainer[int]
    tokens: _containers.RepeatedScalarFieldContainer[int]
    usd_micro: _containers.RepeatedScalarFieldContainer[int]
    metrics: _containers.RepeatedCompositeFieldContainer[MetricColumn]
    def __init__(self, run_id: _Optional[str] = ..., attempt: _Optional[int] = ..., steps: _Optional[_Iterable[int]] = ..., tokens: _Optional[_Iterable[int]] = ..., usd_micro: _Optional[_Iterable[int]] = ..., metrics: _Optional[_Iterable[_Union[MetricColumn, _Mapping]]] = ...) -> None: ...

class BillTotals(_message.Message):
    __slots__ = ("estimated_usd_micro", "billed_usd_micro", "drift_usd_micro", "drift_percent", "adjusted_usd_micro", "pending_bill_usd_micro", "provisional_usd_micro", "lines", "unpriced_lines", "flagged", "unadjusted_usd_micro")
    ESTIMATED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    BILLED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    DRIFT_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    DRIFT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    ADJUSTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PENDING_BILL_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    PROVISIONAL_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    UNPRICED_LINES_FIELD_NUMBER: _ClassVar[int]
    FLAGGED_FIELD_NUMBER: _ClassVar[int]
    UNADJUSTED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    estimated_usd_micro: int
    billed_usd_micro: int
    drift_usd_micro: int
    drift_percent: float
    adjusted_usd_micro: int
    pending_bill_usd_micro: int
    provisional_usd_micro: int
    lines: int
    unpriced_lines: int
    flagged: bool
    unadjusted_usd_micro: int
    def __init__(self, estimated_usd_micro: _Optional[int] = ..., billed_usd_micro: _Optional[int] = ..., drift_usd_micro: _Optional[int] = ..., drift_percent: _Optional[float] = ..., adjusted_usd_micro: _Optional[int] = ..., pending_bill_usd_micro: _Optional[int] = ..., provisional_usd_micro: _Optional[int] = ..., lines: _Optional[int] = ..., unpriced_lines: _Optional[int] = ..., flagged: _Optional[bool] = ..., unadjusted_usd_micro: _Optional[int] = ...) -> None: ...

class PlanHold(_message.Message):
    __slots__ = ("reservation_id", "state", "planned_usd_micro", "drawn_usd_micro", "held_usd_micro")
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PLANNED_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    DRAWN_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    HELD_USD_MICRO_FIELD_NUMBER: _ClassVar[int]
    reservation_id: str
    state: str
    planned_usd_micro: int
    drawn_usd_micro: int
    held_usd_micro: int
    def __init__(self, reservation_id: _Optional[str] = ..., state: _Optional[str] = ..., planned_usd_micro: _Optional[int] = ..., drawn_usd_micro: _Optional[int] = ..., held_usd_micro: _Optional[int] = ...) -> None: ...
