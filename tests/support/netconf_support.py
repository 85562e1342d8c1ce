"""The emulated OCS behind the NETCONF server (SSH on loopback) and the NetconfOcs driver on
it; and :class:`OcsTransport`, which lets one contract test run over grpc and netconf."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import grpc

from emulation.clock import EmulatedClock
from emulation.ocs_device import OcsDevice
from emulation.standard.netconf import NetconfServer, start_netconf_server
from southbound.devices import DeviceConfig, Endpoint
from southbound.options import CallOptions
from southbound.standard.netconf.driver import NetconfOcs
from tests.support.southbound_fixtures import FAST, served_ocs

USERNAME = "heliostat"
PASSWORD = "optical-secret"


def netconf_device(server: NetconfServer, name: str = "ocs-t", password: str = PASSWORD,
                   options: CallOptions = FAST) -> DeviceConfig:
    """A devices-file entry for the OCS behind ``server`` (its netconf endpoint and login)."""
    return DeviceConfig(name=name, kind="ocs", address="", transport="netconf", options=options,
                        endpoints=(Endpoint("netconf", server.address, USERNAME, password),))


@contextmanager
def served_netconf_ocs(
    radix: int = 16, sides: str = "split", switching_time_s: float = 0.05
) -> Iterator[tuple[OcsDevice, NetconfServer, NetconfOcs, EmulatedClock]]:
    clock = EmulatedClock()
    device = OcsDevice("ocs-t", radix, clock, sides=sides, switching_time_s=switching_time_s)
    server = start_netconf_server(device, username=USERNAME, password=PASSWORD)
    client = NetconfOcs(netconf_device(server))
    try:
        yield device, server, client, clock
    finally:
        client.close()
        server.stop()
        device.close()


@dataclass(frozen=True)
class OcsTransport:
    """One transport of the OCS contract tests: how to serve a device, and the transport
    codes its refusals carry (gRPC status codes, or NETCONF error-tag/error-app-tag)."""

    name: str
    conflict: object
    invalid: tuple[object, ...]
    aborted: object
    fenced: object

    def serve(self, **kwargs: Any) -> AbstractContextManager[tuple[OcsDevice, Any, Any, EmulatedClock]]:
        if self.name == "netconf":
            return served_netconf_ocs(**kwargs)
        return served_ocs(**kwargs)


GRPC = OcsTransport("grpc", grpc.StatusCode.FAILED_PRECONDITION, (grpc.StatusCode.INVALID_ARGUMENT,),
                    grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION)
NETCONF = OcsTransport("netconf", "operation-failed/generation-mismatch",
                       ("invalid-value/invalid-cross-connect", "data-missing", "data-exists"),
                       "operation-failed/apply-aborted", "operation-failed/epoch-fenced")
OCS_TRANSPORTS = {t.name: t for t in (GRPC, NETCONF)}
