from southbound.grpc_native.proto.gen.heliostat.southbound.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OcsSides(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OCS_SIDES_UNSPECIFIED: _ClassVar[OcsSides]
    OCS_SIDES_NORTH_SOUTH: _ClassVar[OcsSides]
    OCS_SIDES_ANY: _ClassVar[OcsSides]

class PortSide(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PORT_SIDE_UNSPECIFIED: _ClassVar[PortSide]
    PORT_SIDE_NORTH: _ClassVar[PortSide]
    PORT_SIDE_SOUTH: _ClassVar[PortSide]

class CrossConnectState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CROSS_CONNECT_STATE_UNSPECIFIED: _ClassVar[CrossConnectState]
    CROSS_CONNECT_STATE_SWITCHING: _ClassVar[CrossConnectState]
    CROSS_CONNECT_STATE_ESTABLISHED: _ClassVar[CrossConnectState]
OCS_SIDES_UNSPECIFIED: OcsSides
OCS_SIDES_NORTH_SOUTH: OcsSides
OCS_SIDES_ANY: OcsSides
PORT_SIDE_UNSPECIFIED: PortSide
PORT_SIDE_NORTH: PortSide
PORT_SIDE_SOUTH: PortSide
CROSS_CONNECT_STATE_UNSPECIFIED: CrossConnectState
CROSS_CONNECT_STATE_SWITCHING: CrossConnectState
CROSS_CONNECT_STATE_ESTABLISHED: CrossConnectState

class GetOcsDeviceInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OcsDeviceInfo(_message.Message):
    __slots__ = ("name", "radix", "sides", "north_ports", "south_ports", "generation", "switching_time_ms", "powered", "vendor", "software_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RADIX_FIELD_NUMBER: _ClassVar[int]
    SIDES_FIELD_NUMBER: _ClassVar[int]
    NORTH_PORTS_FIELD_NUMBER: _ClassVar[int]
    SOUTH_PORTS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    SWITCHING_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    POWERED_FIELD_NUMBER: _ClassVar[int]
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    SOFTWARE_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    radix: int
    sides: OcsSides
    north_ports: _containers.RepeatedScalarFieldContainer[int]
    south_ports: _containers.RepeatedScalarFieldContainer[int]
    generation: int
    switching_time_ms: int
    powered: bool
    vendor: str
    software_version: str
    def __init__(self, name: _Optional[str] = ..., radix: _Optional[int] = ..., sides: _Optional[_Union[OcsSides, str]] = ..., north_ports: _Optional[_Iterable[int]] = ..., south_ports: _Optional[_Iterable[int]] = ..., generation: _Optional[int] = ..., switching_time_ms: _Optional[int] = ..., powered: _Optional[bool] = ..., vendor: _Optional[str] = ..., software_version: _Optional[str] = ...) -> None: ...

class CrossConnect(_message.Message):
    __slots__ = ("port_a", "port_b", "state")
    PORT_A_FIELD_NUMBER: _ClassVar[int]
    PORT_B_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    port_a: int
    port_b: int
    state: CrossConnectState
    def __init__(self, port_a: _Optional[int] = ..., port_b: _Optional[int] = ..., state: _Optional[_Union[CrossConnectState, str]] = ...) -> None: ...

class ListCrossConnectsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListCrossConnectsResponse(_message.Message):
    __slots__ = ("generation", "cross_connects")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    CROSS_CONNECTS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    cross_connects: _containers.RepeatedCompositeFieldContainer[CrossConnect]
    def __init__(self, generation: _Optional[int] = ..., cross_connects: _Optional[_Iterable[_Union[CrossConnect, _Mapping]]] = ...) -> None: ...

class ApplyCrossConnectsRequest(_message.Message):
    __slots__ = ("request_id", "expected_generation", "remove", "add", "epoch")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    ADD_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    expected_generation: int
    remove: _containers.RepeatedCompositeFieldContainer[CrossConnect]
    add: _containers.RepeatedCompositeFieldContainer[CrossConnect]
    epoch: int
    def __init__(self, request_id: _Optional[str] = ..., expected_generation: _Optional[int] = ..., remove: _Optional[_Iterable[_Union[CrossConnect, _Mapping]]] = ..., add: _Optional[_Iterable[_Union[CrossConnect, _Mapping]]] = ..., epoch: _Optional[int] = ...) -> None: ...

class ApplyCrossConnectsResponse(_message.Message):
    __slots__ = ("generation", "replayed")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    generation: int
    replayed: bool
    def __init__(self, generation: _Optional[int] = ..., replayed: _Optional[bool] = ...) -> None: ...

class GetPortStatusRequest(_message.Message):
    __slots__ = ("ports",)
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ports: _Optional[_Iterable[int]] = ...) -> None: ...

class OcsPortStatus(_message.Message):
    __slots__ = ("port", "side", "oper_status", "rx_power_dbm", "tx_power_dbm", "connected_port")
    PORT_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    OPER_STATUS_FIELD_NUMBER: _ClassVar[int]
    RX_POWER_DBM_FIELD_NUMBER: _ClassVar[int]
    TX_POWER_DBM_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_PORT_FIELD_NUMBER: _ClassVar[int]
    port: int
    side: PortSide
    oper_status: _common_pb2.OperStatus
    rx_power_dbm: float
    tx_power_dbm: float
    connected_port: int
    def __init__(self, port: _Optional[int] = ..., side: _Optional[_Union[PortSide, str]] = ..., oper_status: _Optional[_Union[_common_pb2.OperStatus, str]] = ..., rx_power_dbm: _Optional[float] = ..., tx_power_dbm: _Optional[float] = ..., connected_port: _Optional[int] = ...) -> None: ...

class GetPortStatusResponse(_message.Message):
    __slots__ = ("generation", "ports")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    ports: _containers.RepeatedCompositeFieldContainer[OcsPortStatus]
    def __init__(self, generation: _Optional[int] = ..., ports: _Optional[_Iterable[_Union[OcsPortStatus, _Mapping]]] = ...) -> None: ...

class StreamOcsEventsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OcsEvent(_message.Message):
    __slots__ = ("sequence", "time_s", "generation", "circuit_up", "circuit_down", "power_loss", "power_restored")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    CIRCUIT_UP_FIELD_NUMBER: _ClassVar[int]
    CIRCUIT_DOWN_FIELD_NUMBER: _ClassVar[int]
    POWER_LOSS_FIELD_NUMBER: _ClassVar[int]
    POWER_RESTORED_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    time_s: float
    generation: int
    circuit_up: CircuitUp
    circuit_down: CircuitDown
    power_loss: PowerLoss
    power_restored: PowerRestored
    def __init__(self, sequence: _Optional[int] = ..., time_s: _Optional[float] = ..., generation: _Optional[int] = ..., circuit_up: _Optional[_Union[CircuitUp, _Mapping]] = ..., circuit_down: _Optional[_Union[CircuitDown, _Mapping]] = ..., power_loss: _Optional[_Union[PowerLoss, _Mapping]] = ..., power_restored: _Optional[_Union[PowerRestored, _Mapping]] = ...) -> None: ...

class CircuitUp(_message.Message):
    __slots__ = ("cross_connect",)
    CROSS_CONNECT_FIELD_NUMBER: _ClassVar[int]
    cross_connect: CrossConnect
    def __init__(self, cross_connect: _Optional[_Union[CrossConnect, _Mapping]] = ...) -> None: ...

class CircuitDown(_message.Message):
    __slots__ = ("cross_connect", "reason")
    CROSS_CONNECT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    cross_connect: CrossConnect
    reason: str
    def __init__(self, cross_connect: _Optional[_Union[CrossConnect, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class PowerLoss(_message.Message):
    __slots__ = ("circuits_lost",)
    CIRCUITS_LOST_FIELD_NUMBER: _ClassVar[int]
    circuits_lost: int
    def __init__(self, circuits_lost: _Optional[int] = ...) -> None: ...

class PowerRestored(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
