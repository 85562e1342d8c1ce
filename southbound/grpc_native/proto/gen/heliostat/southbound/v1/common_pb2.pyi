from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class OperStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPER_STATUS_UNSPECIFIED: _ClassVar[OperStatus]
    OPER_STATUS_UP: _ClassVar[OperStatus]
    OPER_STATUS_DOWN: _ClassVar[OperStatus]
OPER_STATUS_UNSPECIFIED: OperStatus
OPER_STATUS_UP: OperStatus
OPER_STATUS_DOWN: OperStatus
