import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PHASE_UNSPECIFIED: _ClassVar[Phase]
    PHASE_STARTING: _ClassVar[Phase]
    PHASE_IDLE: _ClassVar[Phase]
    PHASE_PLANNING: _ClassVar[Phase]
    PHASE_RECONFIGURING: _ClassVar[Phase]
    PHASE_ROLLING_BACK: _ClassVar[Phase]
    PHASE_STOPPING: _ClassVar[Phase]

class MaintenanceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MAINTENANCE_KIND_UNSPECIFIED: _ClassVar[MaintenanceKind]
    MAINTENANCE_KIND_BLOCK: _ClassVar[MaintenanceKind]
    MAINTENANCE_KIND_OCS: _ClassVar[MaintenanceKind]
    MAINTENANCE_KIND_SPINE: _ClassVar[MaintenanceKind]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_TE_RUN: _ClassVar[EventKind]
    EVENT_KIND_TOE: _ClassVar[EventKind]
    EVENT_KIND_STEP: _ClassVar[EventKind]
    EVENT_KIND_RECONFIGURATION: _ClassVar[EventKind]
    EVENT_KIND_DEVICE: _ClassVar[EventKind]
    EVENT_KIND_LEADER: _ClassVar[EventKind]
    EVENT_KIND_FABRIC: _ClassVar[EventKind]
    EVENT_KIND_OPERATOR: _ClassVar[EventKind]
PHASE_UNSPECIFIED: Phase
PHASE_STARTING: Phase
PHASE_IDLE: Phase
PHASE_PLANNING: Phase
PHASE_RECONFIGURING: Phase
PHASE_ROLLING_BACK: Phase
PHASE_STOPPING: Phase
MAINTENANCE_KIND_UNSPECIFIED: MaintenanceKind
MAINTENANCE_KIND_BLOCK: MaintenanceKind
MAINTENANCE_KIND_OCS: MaintenanceKind
MAINTENANCE_KIND_SPINE: MaintenanceKind
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_TE_RUN: EventKind
EVENT_KIND_TOE: EventKind
EVENT_KIND_STEP: EventKind
EVENT_KIND_RECONFIGURATION: EventKind
EVENT_KIND_DEVICE: EventKind
EVENT_KIND_LEADER: EventKind
EVENT_KIND_FABRIC: EventKind
EVENT_KIND_OPERATOR: EventKind

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Status(_message.Message):
    __slots__ = ("phase", "fabric", "toe_paused", "te_runs", "toe_runs", "last_te_time", "last_toe_time", "mlu", "measured_mlu", "predicted_mlu", "reconfiguration_id", "stage", "stages_total", "step", "last_error", "maintenance", "details_json", "details", "last_te_at", "last_toe_at")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    FABRIC_FIELD_NUMBER: _ClassVar[int]
    TOE_PAUSED_FIELD_NUMBER: _ClassVar[int]
    TE_RUNS_FIELD_NUMBER: _ClassVar[int]
    TOE_RUNS_FIELD_NUMBER: _ClassVar[int]
    LAST_TE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TOE_TIME_FIELD_NUMBER: _ClassVar[int]
    MLU_FIELD_NUMBER: _ClassVar[int]
    MEASURED_MLU_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_MLU_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    STAGES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    LAST_TE_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_TOE_AT_FIELD_NUMBER: _ClassVar[int]
    phase: Phase
    fabric: str
    toe_paused: bool
    te_runs: int
    toe_runs: int
    last_te_time: float
    last_toe_time: float
    mlu: float
    measured_mlu: float
    predicted_mlu: float
    reconfiguration_id: int
    stage: int
    stages_total: int
    step: str
    last_error: str
    maintenance: _containers.RepeatedScalarFieldContainer[str]
    details_json: str
    details: StatusDetails
    last_te_at: _timestamp_pb2.Timestamp
    last_toe_at: _timestamp_pb2.Timestamp
    def __init__(self, phase: _Optional[_Union[Phase, str]] = ..., fabric: _Optional[str] = ..., toe_paused: _Optional[bool] = ..., te_runs: _Optional[int] = ..., toe_runs: _Optional[int] = ..., last_te_time: _Optional[float] = ..., last_toe_time: _Optional[float] = ..., mlu: _Optional[float] = ..., measured_mlu: _Optional[float] = ..., predicted_mlu: _Optional[float] = ..., reconfiguration_id: _Optional[int] = ..., stage: _Optional[int] = ..., stages_total: _Optional[int] = ..., step: _Optional[str] = ..., last_error: _Optional[str] = ..., maintenance: _Optional[_Iterable[str]] = ..., details_json: _Optional[str] = ..., details: _Optional[_Union[StatusDetails, _Mapping]] = ..., last_te_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_toe_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class StatusDetails(_message.Message):
    __slots__ = ("mlu_quantized", "unreachable", "ocs_down", "circuits_installed", "circuits_up", "poll_seconds", "unexplained_drains", "journal_error", "health", "degraded", "circuits_carrying")
    MLU_QUANTIZED_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    OCS_DOWN_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_INSTALLED_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_UP_FIELD_NUMBER: _ClassVar[int]
    POLL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    UNEXPLAINED_DRAINS_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_ERROR_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_CARRYING_FIELD_NUMBER: _ClassVar[int]
    mlu_quantized: float
    unreachable: _containers.RepeatedScalarFieldContainer[str]
    ocs_down: _containers.RepeatedScalarFieldContainer[str]
    circuits_installed: int
    circuits_up: int
    poll_seconds: float
    unexplained_drains: int
    journal_error: str
    health: str
    degraded: _containers.RepeatedScalarFieldContainer[str]
    circuits_carrying: int
    def __init__(self, mlu_quantized: _Optional[float] = ..., unreachable: _Optional[_Iterable[str]] = ..., ocs_down: _Optional[_Iterable[str]] = ..., circuits_installed: _Optional[int] = ..., circuits_up: _Optional[int] = ..., poll_seconds: _Optional[float] = ..., unexplained_drains: _Optional[int] = ..., journal_error: _Optional[str] = ..., health: _Optional[str] = ..., degraded: _Optional[_Iterable[str]] = ..., circuits_carrying: _Optional[int] = ...) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("status", "metrics_address")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    METRICS_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    metrics_address: str
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., metrics_address: _Optional[str] = ...) -> None: ...

class GetTopologyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Link(_message.Message):
    __slots__ = ("a", "b", "count")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    count: int
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CircuitEnd(_message.Message):
    __slots__ = ("block", "port")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    block: str
    port: int
    def __init__(self, block: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class Circuit(_message.Message):
    __slots__ = ("ocs", "a", "b")
    OCS_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    ocs: str
    a: CircuitEnd
    b: CircuitEnd
    def __init__(self, ocs: _Optional[str] = ..., a: _Optional[_Union[CircuitEnd, _Mapping]] = ..., b: _Optional[_Union[CircuitEnd, _Mapping]] = ...) -> None: ...

class SpineLinks(_message.Message):
    __slots__ = ("spine", "block", "in_service", "cabled")
    SPINE_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    IN_SERVICE_FIELD_NUMBER: _ClassVar[int]
    CABLED_FIELD_NUMBER: _ClassVar[int]
    spine: str
    block: str
    in_service: int
    cabled: int
    def __init__(self, spine: _Optional[str] = ..., block: _Optional[str] = ..., in_service: _Optional[int] = ..., cabled: _Optional[int] = ...) -> None: ...

class GetTopologyResponse(_message.Message):
    __slots__ = ("links", "circuits", "spine_links")
    LINKS_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_FIELD_NUMBER: _ClassVar[int]
    SPINE_LINKS_FIELD_NUMBER: _ClassVar[int]
    links: _containers.RepeatedCompositeFieldContainer[Link]
    circuits: _containers.RepeatedCompositeFieldContainer[Circuit]
    spine_links: _containers.RepeatedCompositeFieldContainer[SpineLinks]
    def __init__(self, links: _Optional[_Iterable[_Union[Link, _Mapping]]] = ..., circuits: _Optional[_Iterable[_Union[Circuit, _Mapping]]] = ..., spine_links: _Optional[_Iterable[_Union[SpineLinks, _Mapping]]] = ...) -> None: ...

class GetMatricesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Demand(_message.Message):
    __slots__ = ("src", "dst", "gbps")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    GBPS_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    gbps: float
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., gbps: _Optional[float] = ...) -> None: ...

class TrafficMatrix(_message.Message):
    __slots__ = ("demands",)
    DEMANDS_FIELD_NUMBER: _ClassVar[int]
    demands: _containers.RepeatedCompositeFieldContainer[Demand]
    def __init__(self, demands: _Optional[_Iterable[_Union[Demand, _Mapping]]] = ...) -> None: ...

class GetMatricesResponse(_message.Message):
    __slots__ = ("current", "prediction", "time")
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    PREDICTION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    current: TrafficMatrix
    prediction: TrafficMatrix
    time: float
    def __init__(self, current: _Optional[_Union[TrafficMatrix, _Mapping]] = ..., prediction: _Optional[_Union[TrafficMatrix, _Mapping]] = ..., time: _Optional[float] = ...) -> None: ...

class ListReconfigurationsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListReconfigurationsResponse(_message.Message):
    __slots__ = ("reconfigurations_json",)
    RECONFIGURATIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    reconfigurations_json: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, reconfigurations_json: _Optional[_Iterable[str]] = ...) -> None: ...

class TriggerToeRequest(_message.Message):
    __slots__ = ("dry_run", "plan_id")
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    dry_run: bool
    plan_id: str
    def __init__(self, dry_run: _Optional[bool] = ..., plan_id: _Optional[str] = ...) -> None: ...

class TriggerToeResponse(_message.Message):
    __slots__ = ("accepted", "dry_run", "message", "plan_json", "plan_id", "reconfiguration_id")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PLAN_JSON_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    dry_run: bool
    message: str
    plan_json: str
    plan_id: str
    reconfiguration_id: int
    def __init__(self, accepted: _Optional[bool] = ..., dry_run: _Optional[bool] = ..., message: _Optional[str] = ..., plan_json: _Optional[str] = ..., plan_id: _Optional[str] = ..., reconfiguration_id: _Optional[int] = ...) -> None: ...

class PauseToeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PauseToeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResumeToeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResumeToeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetMaintenanceRequest(_message.Message):
    __slots__ = ("kind", "name", "drained", "force")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    kind: MaintenanceKind
    name: str
    drained: bool
    force: bool
    def __init__(self, kind: _Optional[_Union[MaintenanceKind, str]] = ..., name: _Optional[str] = ..., drained: _Optional[bool] = ..., force: _Optional[bool] = ...) -> None: ...

class SetMaintenanceResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class GetLastPlanRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetLastPlanResponse(_message.Message):
    __slots__ = ("plan_json",)
    PLAN_JSON_FIELD_NUMBER: _ClassVar[int]
    plan_json: str
    def __init__(self, plan_json: _Optional[str] = ...) -> None: ...

class GetReconfigurationRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ReconfigurationStage(_message.Message):
    __slots__ = ("number", "domain", "circuits_removed", "circuits_added", "mlu_start", "mlu_drained", "mlu_after")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_ADDED_FIELD_NUMBER: _ClassVar[int]
    MLU_START_FIELD_NUMBER: _ClassVar[int]
    MLU_DRAINED_FIELD_NUMBER: _ClassVar[int]
    MLU_AFTER_FIELD_NUMBER: _ClassVar[int]
    number: int
    domain: int
    circuits_removed: int
    circuits_added: int
    mlu_start: float
    mlu_drained: float
    mlu_after: float
    def __init__(self, number: _Optional[int] = ..., domain: _Optional[int] = ..., circuits_removed: _Optional[int] = ..., circuits_added: _Optional[int] = ..., mlu_start: _Optional[float] = ..., mlu_drained: _Optional[float] = ..., mlu_after: _Optional[float] = ...) -> None: ...

class ReconfigurationStep(_message.Message):
    __slots__ = ("stage", "name", "state", "error", "started", "finished")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    stage: int
    name: str
    state: str
    error: str
    started: _timestamp_pb2.Timestamp
    finished: _timestamp_pb2.Timestamp
    def __init__(self, stage: _Optional[int] = ..., name: _Optional[str] = ..., state: _Optional[str] = ..., error: _Optional[str] = ..., started: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Reconfiguration(_message.Message):
    __slots__ = ("id", "state", "trigger", "reason", "created", "finished", "current_mlu", "planned_mlu", "stages", "steps")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MLU_FIELD_NUMBER: _ClassVar[int]
    PLANNED_MLU_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    id: int
    state: str
    trigger: str
    reason: str
    created: _timestamp_pb2.Timestamp
    finished: _timestamp_pb2.Timestamp
    current_mlu: float
    planned_mlu: float
    stages: _containers.RepeatedCompositeFieldContainer[ReconfigurationStage]
    steps: _containers.RepeatedCompositeFieldContainer[ReconfigurationStep]
    def __init__(self, id: _Optional[int] = ..., state: _Optional[str] = ..., trigger: _Optional[str] = ..., reason: _Optional[str] = ..., created: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., current_mlu: _Optional[float] = ..., planned_mlu: _Optional[float] = ..., stages: _Optional[_Iterable[_Union[ReconfigurationStage, _Mapping]]] = ..., steps: _Optional[_Iterable[_Union[ReconfigurationStep, _Mapping]]] = ...) -> None: ...

class GetReconfigurationResponse(_message.Message):
    __slots__ = ("reconfiguration",)
    RECONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    reconfiguration: Reconfiguration
    def __init__(self, reconfiguration: _Optional[_Union[Reconfiguration, _Mapping]] = ...) -> None: ...

class AddJobRequest(_message.Message):
    __slots__ = ("job_yaml", "start_at", "end_at")
    JOB_YAML_FIELD_NUMBER: _ClassVar[int]
    START_AT_FIELD_NUMBER: _ClassVar[int]
    END_AT_FIELD_NUMBER: _ClassVar[int]
    job_yaml: str
    start_at: _timestamp_pb2.Timestamp
    end_at: _timestamp_pb2.Timestamp
    def __init__(self, job_yaml: _Optional[str] = ..., start_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AddJobResponse(_message.Message):
    __slots__ = ("message", "job_json")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    JOB_JSON_FIELD_NUMBER: _ClassVar[int]
    message: str
    job_json: str
    def __init__(self, message: _Optional[str] = ..., job_json: _Optional[str] = ...) -> None: ...

class RemoveJobRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RemoveJobResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs_json", "lead_time_s")
    JOBS_JSON_FIELD_NUMBER: _ClassVar[int]
    LEAD_TIME_S_FIELD_NUMBER: _ClassVar[int]
    jobs_json: _containers.RepeatedScalarFieldContainer[str]
    lead_time_s: float
    def __init__(self, jobs_json: _Optional[_Iterable[str]] = ..., lead_time_s: _Optional[float] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("kinds",)
    KINDS_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.RepeatedScalarFieldContainer[EventKind]
    def __init__(self, kinds: _Optional[_Iterable[_Union[EventKind, str]]] = ...) -> None: ...

class TeRunEvent(_message.Message):
    __slots__ = ("reason", "mlu", "mlu_quantized", "demand_gbps", "circuits", "seconds")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MLU_FIELD_NUMBER: _ClassVar[int]
    MLU_QUANTIZED_FIELD_NUMBER: _ClassVar[int]
    DEMAND_GBPS_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    reason: str
    mlu: float
    mlu_quantized: float
    demand_gbps: float
    circuits: int
    seconds: float
    def __init__(self, reason: _Optional[str] = ..., mlu: _Optional[float] = ..., mlu_quantized: _Optional[float] = ..., demand_gbps: _Optional[float] = ..., circuits: _Optional[int] = ..., seconds: _Optional[float] = ...) -> None: ...

class ToeEvent(_message.Message):
    __slots__ = ("trigger", "apply", "reason", "current_mlu", "planned_mlu", "stages", "circuits_changed")
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    APPLY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MLU_FIELD_NUMBER: _ClassVar[int]
    PLANNED_MLU_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    CIRCUITS_CHANGED_FIELD_NUMBER: _ClassVar[int]
    trigger: str
    apply: bool
    reason: str
    current_mlu: float
    planned_mlu: float
    stages: int
    circuits_changed: int
    def __init__(self, trigger: _Optional[str] = ..., apply: _Optional[bool] = ..., reason: _Optional[str] = ..., current_mlu: _Optional[float] = ..., planned_mlu: _Optional[float] = ..., stages: _Optional[int] = ..., circuits_changed: _Optional[int] = ...) -> None: ...

class StepEvent(_message.Message):
    __slots__ = ("reconfiguration_id", "stage", "step", "state")
    RECONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    reconfiguration_id: int
    stage: int
    step: str
    state: str
    def __init__(self, reconfiguration_id: _Optional[int] = ..., stage: _Optional[int] = ..., step: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

class ReconfigurationEvent(_message.Message):
    __slots__ = ("reconfiguration_id", "outcome", "reason")
    RECONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    reconfiguration_id: int
    outcome: str
    reason: str
    def __init__(self, reconfiguration_id: _Optional[int] = ..., outcome: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DeviceEvent(_message.Message):
    __slots__ = ("device", "up", "error")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    device: str
    up: bool
    error: str
    def __init__(self, device: _Optional[str] = ..., up: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class OperatorEvent(_message.Message):
    __slots__ = ("action", "target", "result", "forced")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    FORCED_FIELD_NUMBER: _ClassVar[int]
    action: str
    target: str
    result: str
    forced: bool
    def __init__(self, action: _Optional[str] = ..., target: _Optional[str] = ..., result: _Optional[str] = ..., forced: _Optional[bool] = ...) -> None: ...

class LeaderEvent(_message.Message):
    __slots__ = ("leader", "previous")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    leader: str
    previous: str
    def __init__(self, leader: _Optional[str] = ..., previous: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("sequence", "time", "kind", "message", "te_run", "toe", "step", "reconfiguration", "device", "leader", "operator")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TE_RUN_FIELD_NUMBER: _ClassVar[int]
    TOE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    time: _timestamp_pb2.Timestamp
    kind: EventKind
    message: str
    te_run: TeRunEvent
    toe: ToeEvent
    step: StepEvent
    reconfiguration: ReconfigurationEvent
    device: DeviceEvent
    leader: LeaderEvent
    operator: OperatorEvent
    def __init__(self, sequence: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[EventKind, str]] = ..., message: _Optional[str] = ..., te_run: _Optional[_Union[TeRunEvent, _Mapping]] = ..., toe: _Optional[_Union[ToeEvent, _Mapping]] = ..., step: _Optional[_Union[StepEvent, _Mapping]] = ..., reconfiguration: _Optional[_Union[ReconfigurationEvent, _Mapping]] = ..., device: _Optional[_Union[DeviceEvent, _Mapping]] = ..., leader: _Optional[_Union[LeaderEvent, _Mapping]] = ..., operator: _Optional[_Union[OperatorEvent, _Mapping]] = ...) -> None: ...

class GetFabricViewRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CircuitCounts(_message.Message):
    __slots__ = ("installed", "up", "carrying", "drained", "down")
    INSTALLED_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    CARRYING_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    DOWN_FIELD_NUMBER: _ClassVar[int]
    installed: int
    up: int
    carrying: int
    drained: int
    down: int
    def __init__(self, installed: _Optional[int] = ..., up: _Optional[int] = ..., carrying: _Optional[int] = ..., drained: _Optional[int] = ..., down: _Optional[int] = ...) -> None: ...

class GetFabricViewResponse(_message.Message):
    __slots__ = ("circuits", "view_json")
    CIRCUITS_FIELD_NUMBER: _ClassVar[int]
    VIEW_JSON_FIELD_NUMBER: _ClassVar[int]
    circuits: CircuitCounts
    view_json: str
    def __init__(self, circuits: _Optional[_Union[CircuitCounts, _Mapping]] = ..., view_json: _Optional[str] = ...) -> None: ...

class GetLinkRequest(_message.Message):
    __slots__ = ("a", "b")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ...) -> None: ...

class GetLinkResponse(_message.Message):
    __slots__ = ("circuits", "link_json")
    CIRCUITS_FIELD_NUMBER: _ClassVar[int]
    LINK_JSON_FIELD_NUMBER: _ClassVar[int]
    circuits: CircuitCounts
    link_json: str
    def __init__(self, circuits: _Optional[_Union[CircuitCounts, _Mapping]] = ..., link_json: _Optional[str] = ...) -> None: ...

class GetDeviceRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetDeviceResponse(_message.Message):
    __slots__ = ("circuits", "device_json")
    CIRCUITS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_JSON_FIELD_NUMBER: _ClassVar[int]
    circuits: CircuitCounts
    device_json: str
    def __init__(self, circuits: _Optional[_Union[CircuitCounts, _Mapping]] = ..., device_json: _Optional[str] = ...) -> None: ...
