"""The generated P4Runtime and gNMI modules, under short names."""

from google.rpc import code_pb2, status_pb2

from southbound.standard.proto.gen.gnmi import gnmi_pb2, gnmi_pb2_grpc
from southbound.standard.proto.gen.gnmi_ext import gnmi_ext_pb2
from southbound.standard.proto.gen.p4.config.v1 import p4info_pb2, p4types_pb2
from southbound.standard.proto.gen.p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc

__all__ = [
    "code_pb2",
    "gnmi_ext_pb2",
    "gnmi_pb2",
    "gnmi_pb2_grpc",
    "p4data_pb2",
    "p4info_pb2",
    "p4runtime_pb2",
    "p4runtime_pb2_grpc",
    "p4types_pb2",
    "status_pb2",
]
