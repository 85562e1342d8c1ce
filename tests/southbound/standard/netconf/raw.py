"""A bare NETCONF client on paramiko for the tests: sends the bytes the test writes (hello,
rpcs, broken XML) and reads the server's messages, with the framing the hello agreed."""

from __future__ import annotations

import socket

import paramiko
from lxml import etree

from emulation.standard.netconf.framing import Framer
from emulation.standard.netconf.server import NetconfServer
from southbound.standard.netconf.encoding import BASE_NS, parse_xml
from southbound.standard.netconf.session import split_address
from tests.support.netconf_support import PASSWORD, USERNAME


def hello_with(*capabilities: str) -> str:
    offered = "".join(f"<capability>{c}</capability>" for c in capabilities)
    return f'<hello xmlns="{BASE_NS}"><capabilities>{offered}</capabilities></hello>'


HELLO_1_0 = hello_with("urn:ietf:params:netconf:base:1.0")
HELLO_1_1 = hello_with("urn:ietf:params:netconf:base:1.0", "urn:ietf:params:netconf:base:1.1")


class RawNetconf:
    def __init__(self, server: NetconfServer, hello: str = HELLO_1_1, password: str = PASSWORD) -> None:
        host, port = split_address(server.address)
        self.transport = paramiko.Transport(socket.create_connection((host, port), timeout=10))
        self.transport.connect(username=USERNAME, password=password)
        self.channel = self.transport.open_session()
        self.channel.settimeout(10)
        self.channel.invoke_subsystem("netconf")
        self.framer = Framer(self.channel)
        self.server_hello = parse_xml(self.framer.read())
        self.framer.write(hello.encode())
        self.framer.chunked = "netconf:base:1.1<" in hello

    def send(self, text: str | bytes) -> None:
        self.framer.write(text.encode() if isinstance(text, str) else text)

    def receive(self) -> etree._Element:
        return parse_xml(self.framer.read())

    def rpc(self, body: str, message_id: str = "1") -> etree._Element:
        self.send(f'<rpc xmlns="{BASE_NS}" message-id="{message_id}">{body}</rpc>')
        return self.receive()

    def close(self) -> None:
        self.transport.close()
