from southbound.grpc_native.proto.gen.heliostat.southbound.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SwitchRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SWITCH_ROLE_UNSPECIFIED: _ClassVar[SwitchRole]
    SWITCH_ROLE_BLOCK: _ClassVar[SwitchRole]
    SWITCH_ROLE_SPINE: _ClassVar[SwitchRole]
SWITCH_ROLE_UNSPECIFIED: SwitchRole
SWITCH_ROLE_BLOCK: SwitchRole
SWITCH_ROLE_SPINE: SwitchRole

class GetSwitchDeviceInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SwitchDeviceInfo(_message.Message):
    __slots__ = ("name", "block", "num_ports", "port_speed_gbps", "max_group_entries", "table_capacity", "generation", "vendor", "software_version", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    NUM_PORTS_FIELD_NUMBER: _ClassVar[int]
    PORT_SPEED_GBPS_FIELD_NUMBER: _ClassVar[int]
    MAX_GROUP_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TABLE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    SOFTWARE_VERSION_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    block: str
    num_ports: int
    port_speed_gbps: float
    max_group_entries: int
    table_capacity: int
    generation: int
    vendor: str
    software_version: str
    role: SwitchRole
    def __init__(self, name: _Optional[str] = ..., block: _Optional[str] = ..., num_ports: _Optional[int] = ..., port_speed_gbps: _Optional[float] = ..., max_group_entries: _Optional[int] = ..., table_capacity: _Optional[int] = ..., generation: _Optional[int] = ..., vendor: _Optional[str] = ..., software_version: _Optional[str] = ..., role: _Optional[_Union[SwitchRole, str]] = ...) -> None: ...

class ListPortsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Peer(_message.Message):
    __slots__ = ("block", "port")
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    block: str
    port: int
    def __init__(self, block: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class SwitchPort(_message.Message):
    __slots__ = ("port", "oper_status", "drained", "speed_gbps", "peer")
    PORT_FIELD_NUMBER: _ClassVar[int]
    OPER_STATUS_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    SPEED_GBPS_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    port: int
    oper_status: _common_pb2.OperStatus
    drained: bool
    speed_gbps: float
    peer: Peer
    def __init__(self, port: _Optional[int] = ..., oper_status: _Optional[_Union[_common_pb2.OperStatus, str]] = ..., drained: _Optional[bool] = ..., speed_gbps: _Optional[float] = ..., peer: _Optional[_Union[Peer, _Mapping]] = ...) -> None: ...

class ListPortsResponse(_message.Message):
    __slots__ = ("ports",)
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[SwitchPort]
    def __init__(self, ports: _Optional[_Iterable[_Union[SwitchPort, _Mapping]]] = ...) -> None: ...

class NextHop(_message.Message):
    __slots__ = ("via_block", "weight")
    VIA_BLOCK_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    via_block: str
    weight: int
    def __init__(self, via_block: _Optional[str] = ..., weight: _Optional[int] = ...) -> None: ...

class NextHopGroup(_message.Message):
    __slots__ = ("destination_block", "next_hops")
    DESTINATION_BLOCK_FIELD_NUMBER: _ClassVar[int]
    NEXT_HOPS_FIELD_NUMBER: _ClassVar[int]
    destination_block: str
    next_hops: _containers.RepeatedCompositeFieldContainer[NextHop]
    def __init__(self, destination_block: _Optional[str] = ..., next_hops: _Optional[_Iterable[_Union[NextHop, _Mapping]]] = ...) -> None: ...

class GetNextHopGroupsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NextHopGroups(_message.Message):
    __slots__ = ("generation", "source", "transit", "entries_used")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TRANSIT_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_USED_FIELD_NUMBER: _ClassVar[int]
    generation: int
    source: _containers.RepeatedCompositeFieldContainer[NextHopGroup]
    transit: _containers.RepeatedCompositeFieldContainer[NextHopGroup]
    entries_used: int
    def __init__(self, generation: _Optional[int] = ..., source: _Optional[_Iterable[_Union[NextHopGroup, _Mapping]]] = ..., transit: _Optional[_Iterable[_Union[NextHopGroup, _Mapping]]] = ..., entries_used: _Optional[int] = ...) -> None: ...

class SetNextHopGroupsRequest(_message.Message):
    __slots__ = ("request_id", "expected_generation", "replace", "source", "transit", "delete_source", "delete_transit", "epoch")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TRANSIT_FIELD_NUMBER: _ClassVar[int]
    DELETE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DELETE_TRANSIT_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    expected_generation: int
    replace: bool
    source: _containers.RepeatedCompositeFieldContainer[NextHopGroup]
    transit: _containers.RepeatedCompositeFieldContainer[NextHopGroup]
    delete_source: _containers.RepeatedScalarFieldContainer[str]
    delete_transit: _containers.RepeatedScalarFieldContainer[str]
    epoch: int
    def __init__(self, request_id: _Optional[str] = ..., expected_generation: _Optional[int] = ..., replace: _Optional[bool] = ..., source: _Optional[_Iterable[_Union[NextHopGroup, _Mapping]]] = ..., transit: _Optional[_Iterable[_Union[NextHopGroup, _Mapping]]] = ..., delete_source: _Optional[_Iterable[str]] = ..., delete_transit: _Optional[_Iterable[str]] = ..., epoch: _Optional[int] = ...) -> None: ...

class SetNextHopGroupsResponse(_message.Message):
    __slots__ = ("generation", "replayed", "entries_used")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_USED_FIELD_NUMBER: _ClassVar[int]
    generation: int
    replayed: bool
    entries_used: int
    def __init__(self, generation: _Optional[int] = ..., replayed: _Optional[bool] = ..., entries_used: _Optional[int] = ...) -> None: ...

class DrainPortsRequest(_message.Message):
    __slots__ = ("ports", "epoch")
    PORTS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedScalarFieldContainer[int]
    epoch: int
    def __init__(self, ports: _Optional[_Iterable[int]] = ..., epoch: _Optional[int] = ...) -> None: ...

class DrainPortsResponse(_message.Message):
    __slots__ = ("drained_ports",)
    DRAINED_PORTS_FIELD_NUMBER: _ClassVar[int]
    drained_ports: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, drained_ports: _Optional[_Iterable[int]] = ...) -> None: ...

class GetCountersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PortCounters(_message.Message):
    __slots__ = ("port", "tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "tx_drops", "rx_drops", "tx_drop_bytes", "rx_drop_bytes")
    PORT_FIELD_NUMBER: _ClassVar[int]
    TX_BYTES_FIELD_NUMBER: _ClassVar[int]
    RX_BYTES_FIELD_NUMBER: _ClassVar[int]
    TX_PACKETS_FIELD_NUMBER: _ClassVar[int]
    RX_PACKETS_FIELD_NUMBER: _ClassVar[int]
    TX_DROPS_FIELD_NUMBER: _ClassVar[int]
    RX_DROPS_FIELD_NUMBER: _ClassVar[int]
    TX_DROP_BYTES_FIELD_NUMBER: _ClassVar[int]
    RX_DROP_BYTES_FIELD_NUMBER: _ClassVar[int]
    port: int
    tx_bytes: int
    rx_bytes: int
    tx_packets: int
    rx_packets: int
    tx_drops: int
    rx_drops: int
    tx_drop_bytes: int
    rx_drop_bytes: int
    def __init__(self, port: _Optional[int] = ..., tx_bytes: _Optional[int] = ..., rx_bytes: _Optional[int] = ..., tx_packets: _Optional[int] = ..., rx_packets: _Optional[int] = ..., tx_drops: _Optional[int] = ..., rx_drops: _Optional[int] = ..., tx_drop_bytes: _Optional[int] = ..., rx_drop_bytes: _Optional[int] = ...) -> None: ...

class DestinationCounter(_message.Message):
    __slots__ = ("destination_block", "egress_bytes")
    DESTINATION_BLOCK_FIELD_NUMBER: _ClassVar[int]
    EGRESS_BYTES_FIELD_NUMBER: _ClassVar[int]
    destination_block: str
    egress_bytes: int
    def __init__(self, destination_block: _Optional[str] = ..., egress_bytes: _Optional[int] = ...) -> None: ...

class SwitchCounters(_message.Message):
    __slots__ = ("time_s", "ports", "destinations", "no_route_drops")
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    DESTINATIONS_FIELD_NUMBER: _ClassVar[int]
    NO_ROUTE_DROPS_FIELD_NUMBER: _ClassVar[int]
    time_s: float
    ports: _containers.RepeatedCompositeFieldContainer[PortCounters]
    destinations: _containers.RepeatedCompositeFieldContainer[DestinationCounter]
    no_route_drops: int
    def __init__(self, time_s: _Optional[float] = ..., ports: _Optional[_Iterable[_Union[PortCounters, _Mapping]]] = ..., destinations: _Optional[_Iterable[_Union[DestinationCounter, _Mapping]]] = ..., no_route_drops: _Optional[int] = ...) -> None: ...
