"""Select-group mods carrying a selection method, sent as OpenFlow 1.5 messages.

Why: OVS's default select-group hash covers TCP/SCTP ports but not UDP ports (so every UDP
flow between two hosts takes the same bucket), and OpenFlow 1.3 cannot ask for another
method. OVS accepts the Netronome selection-method property (experimenter 0x154d) in
OpenFlow 1.5 group mods; "dp_hash" with parameter 0 hashes the 5-tuple (UDP ports
included) in the datapath and maps hash values to buckets in proportion to their weights.

The agent keeps OpenFlow 1.3 (os-ken) for everything else and sends only these group mods
over a second connection: the bridge's management socket
(``/var/run/openvswitch/<bridge>.mgmt``; the bridge must allow OpenFlow15 as well).
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from os_ken.ofproto import ofproto_v1_5, ofproto_v1_5_parser

from emulation.openflow.channel import SwitchRejected, SwitchUnreachable
from emulation.openflow.pipeline import Bucket
from emulation.openflow.spec import uplink_ofport

log = logging.getLogger(__name__)

OVS_RUN_DIR = Path("/var/run/openvswitch")
NTR_VENDOR_ID = 0x0000154D
NTRT_SELECTION_METHOD = 1
SELECTION_METHOD = b"dp_hash"
#: dp_hash parameter: upper 32 bits pick the hash; 0 is the L4 5-tuple (UDP ports too).
SELECTION_PARAM = 0
GROUP_ADD_OR_MOD = 0x8000  # OVS extension: add, or modify if the group exists
_HEADER = struct.Struct("!BBHI")
_TIMEOUT_S = 5.0


class _Of15:
    """What os-ken's message classes need of a datapath to serialize a message."""

    ofproto = ofproto_v1_5
    ofproto_parser = ofproto_v1_5_parser


def selection_property() -> Any:
    name = SELECTION_METHOD.ljust(16, b"\0")
    words = [0, *struct.unpack("!4I", name), SELECTION_PARAM >> 32, SELECTION_PARAM & 0xFFFFFFFF]
    return ofproto_v1_5_parser.OFPGroupPropExperimenter(
        type_=ofproto_v1_5.OFPGPT_EXPERIMENTER, experimenter=NTR_VENDOR_ID,
        exp_type=NTRT_SELECTION_METHOD, data=words)


def group_mod(group_id: int, buckets: Iterable[Bucket], xid: int) -> bytes:
    p, ofp = ofproto_v1_5_parser, ofproto_v1_5
    ofbuckets = [
        p.OFPBucket(bucket_id=i, actions=[p.OFPActionOutput(uplink_ofport(port), 0)],
                    properties=[p.OFPGroupBucketPropWeight(type_=ofp.OFPGBPT_WEIGHT, weight=weight),
                                p.OFPGroupBucketPropWatch(type_=ofp.OFPGBPT_WATCH_PORT,
                                                          watch=uplink_ofport(port))])
        for i, (port, weight) in enumerate(buckets)
    ]
    msg = p.OFPGroupMod(_Of15(), GROUP_ADD_OR_MOD, ofp.OFPGT_SELECT, group_id,
                        ofp.OFPG_BUCKET_ALL, ofbuckets, [selection_property()])
    msg.set_xid(xid)
    msg.serialize()
    return bytes(msg.buf)


class GroupModSocket:
    """A small OpenFlow 1.5 client on a bridge's management socket: sends group mods and a
    barrier, and raises on any error the bridge returns for them."""

    def __init__(self, bridge: str, run_dir: Path = OVS_RUN_DIR) -> None:
        self.bridge = bridge
        self.path = run_dir / f"{bridge}.mgmt"
        self._sock: socket.socket | None = None
        self._xid = 0
        self._lock = threading.Lock()

    @staticmethod
    def available(bridge: str, run_dir: Path = OVS_RUN_DIR) -> bool:
        return (run_dir / f"{bridge}.mgmt").exists()

    def _connect(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_TIMEOUT_S)
        try:
            sock.connect(str(self.path))
            sock.sendall(_HEADER.pack(ofproto_v1_5.OFP_VERSION, ofproto_v1_5.OFPT_HELLO,
                                      _HEADER.size, self._next_xid()))
            version, msg_type, _, _ = self._read(sock)
        except OSError as exc:
            sock.close()
            raise SwitchUnreachable(f"{self.path}: {exc}") from exc
        if msg_type != ofproto_v1_5.OFPT_HELLO or version < ofproto_v1_5.OFP_VERSION:
            sock.close()
            raise SwitchUnreachable(f"{self.path}: the bridge does not speak OpenFlow 1.5 "
                                    "(set protocols=OpenFlow13,OpenFlow15)")
        self._sock = sock
        return sock

    def _next_xid(self) -> int:
        self._xid = (self._xid + 1) & 0xFFFFFFFF
        return self._xid

    @staticmethod
    def _read(sock: socket.socket) -> tuple[int, int, int, bytes]:
        header = _recv_exactly(sock, _HEADER.size)
        version, msg_type, length, xid = _HEADER.unpack(header)
        body = _recv_exactly(sock, length - _HEADER.size)
        return version, msg_type, xid, body

    def set_groups(self, groups: dict[int, tuple[Bucket, ...]]) -> None:
        with self._lock:
            try:
                self._transact(groups)
            except OSError as exc:
                self.close()
                raise SwitchUnreachable(f"{self.path}: {exc}") from exc

    def _transact(self, groups: dict[int, tuple[Bucket, ...]]) -> None:
        sock = self._connect()
        xids = {}
        for gid, buckets in sorted(groups.items()):
            xid = self._next_xid()
            xids[xid] = gid
            sock.sendall(group_mod(gid, buckets, xid))
        barrier = self._next_xid()
        sock.sendall(_HEADER.pack(ofproto_v1_5.OFP_VERSION, ofproto_v1_5.OFPT_BARRIER_REQUEST,
                                  _HEADER.size, barrier))
        errors = []
        while True:
            _, msg_type, xid, body = self._read(sock)
            if msg_type == ofproto_v1_5.OFPT_ERROR and xid in xids:
                err_type, code = struct.unpack_from("!HH", body)
                errors.append((xids[xid], err_type, code))
            elif msg_type == ofproto_v1_5.OFPT_ECHO_REQUEST:
                sock.sendall(_HEADER.pack(ofproto_v1_5.OFP_VERSION, ofproto_v1_5.OFPT_ECHO_REPLY,
                                          _HEADER.size + len(body), xid) + body)
            elif msg_type == ofproto_v1_5.OFPT_BARRIER_REPLY and xid == barrier:
                break
        if errors:
            gid, err_type, code = errors[0]
            raise SwitchRejected(f"{self.bridge}: {len(errors)} group mods refused (first: group "
                                 f"{gid}, error type {err_type} code {code})", errors)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the bridge closed the connection")
        data += chunk
    return bytes(data)
