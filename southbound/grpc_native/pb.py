"""The generated heliostat.southbound.v1 modules, under short names."""

from southbound.grpc_native.proto.gen.heliostat.southbound.v1 import (
    common_pb2,
    ocs_pb2,
    ocs_pb2_grpc,
    packet_switch_pb2,
    packet_switch_pb2_grpc,
)

__all__ = [
    "common_pb2",
    "ocs_pb2",
    "ocs_pb2_grpc",
    "packet_switch_pb2",
    "packet_switch_pb2_grpc",
]
