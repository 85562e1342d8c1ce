"""A NETCONF server over SSH (paramiko; RFC 6241/6242, RFC 5277 notifications) in front of an
emulated OCS, speaking the heliostat-optical-switch YANG module: :func:`start_netconf_server`."""

from emulation.standard.netconf.server import NetconfServer, start_netconf_server

__all__ = ["NetconfServer", "start_netconf_server"]
