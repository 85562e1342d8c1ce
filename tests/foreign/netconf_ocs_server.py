"""A foreign NETCONF server: the ``netconf`` package's SSH server (on paramiko 3, in the foreign
environment) serving a small, independent model of the heliostat-optical-switch module (16
ports, north 0-7, south 8-15) for our driver to talk to.

Prints ``{"port": N}`` on its first stdout line, then serves until stdin closes. Written from
the YANG module and RFC 6241 alone; it shares no code with the controller or our server.
Filters are ignored (every get answers the whole state), which our driver must cope with."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading

import paramiko
from lxml import etree
from netconf import error, server

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
NS = "urn:heliostat:yang:optical-switch"
RADIX = 16
LOCK = threading.Lock()
STATE = {"generation": 1, "highest_epoch": 0, "pairs": {}, "results": {}}


def sub(parent, name, text=None):
    child = etree.SubElement(parent, f"{{{NS}}}{name}")
    if text is not None:
        child.text = str(text)
    return child


def failure(rpc, tag, message, app_tag=None, **info):
    err = error.RPCServerError(rpc, "application", tag, message=message,
                               **({"app_tag": app_tag} if app_tag else {}))
    if info:
        rpc_error = err.reply.find(f"{{{NC}}}rpc-error")
        info_elm = etree.SubElement(rpc_error, f"{{{NC}}}error-info", nsmap={"hos": NS})
        for key, value in info.items():
            etree.SubElement(info_elm, f"{{{NS}}}{key}").text = str(value)
    return err


class Methods(server.NetconfMethods):
    def nc_append_capabilities(self, capabilities):
        etree.SubElement(capabilities, "capability").text = \
            f"{NS}?module=heliostat-optical-switch&revision=2026-12-03"

    def rpc_get(self, session, rpc, filter_or_none):
        data = etree.Element(f"{{{NC}}}data")
        with LOCK:
            system = sub(data, "system-info")
            for name, value in (("name", "foreign-ocs"), ("radix", RADIX), ("sides", "north-south"),
                                ("switching-time", "0.000000"), ("powered", "true")):
                sub(system, name, value)
            fence = sub(data, "fence-state")
            sub(fence, "generation", STATE["generation"])
            sub(fence, "highest-epoch", STATE["highest_epoch"])
            for request_id, (generation, replayed) in STATE["results"].items():
                request = sub(fence, "request")
                sub(request, "request-id", request_id)
                sub(request, "generation", generation)
                sub(request, "replayed", "true" if replayed else "false")
            connects = sub(data, "cross-connects")
            for ingress, egress in sorted(STATE["pairs"].items()):
                pair = sub(connects, "pair")
                sub(pair, "ingress", ingress)
                sub(pair, "egress", egress)
                sub(pair, "status", "established")
            peers = {**STATE["pairs"], **{e: i for i, e in STATE["pairs"].items()}}
            ports = sub(data, "ports")
            for port_id in range(RADIX):
                port = sub(ports, "port")
                sub(port, "port-id", port_id)
                sub(port, "side", "north" if port_id < RADIX // 2 else "south")
                sub(port, "admin-status", "enabled")
                sub(port, "oper-status", "up" if port_id in peers else "down")
                sub(port, "input-power", "-1.50")
                sub(port, "output-power", "-3.00" if port_id in peers else "-40.00")
                if port_id in peers:
                    sub(port, "connected-port", peers[port_id])
        return data

    def rpc_edit_config(self, session, rpc, *params):
        config = next(p for p in params if etree.QName(p).localname == "config")
        fence = config.find(f"{{{NS}}}fence")
        leaf = (lambda name: fence.findtext(f"{{{NS}}}{name}")) if fence is not None else (lambda name: None)
        epoch = int(leaf("epoch") or 0)
        request_id = leaf("request-id") or ""
        with LOCK:
            if epoch and epoch < STATE["highest_epoch"]:
                raise failure(rpc, "operation-failed", f"epoch {epoch} is below {STATE['highest_epoch']}",
                              "epoch-fenced", **{"highest-epoch": STATE["highest_epoch"]})
            STATE["highest_epoch"] = max(epoch, STATE["highest_epoch"])
            if request_id in STATE["results"]:
                STATE["results"][request_id] = (STATE["results"][request_id][0], True)
                return etree.Element("ok")
            expected = int(leaf("expected-generation") or STATE["generation"])
            if expected != STATE["generation"]:
                raise failure(rpc, "operation-failed", "generation moved on", "generation-mismatch",
                              **{"current-generation": STATE["generation"]})
            pairs = dict(STATE["pairs"])
            for pair in config.iterfind(f"{{{NS}}}cross-connects/{{{NS}}}pair"):
                op = pair.get(f"{{{NC}}}operation", "merge")
                a, b = sorted((int(pair.findtext(f"{{{NS}}}ingress")), int(pair.findtext(f"{{{NS}}}egress"))))
                if op == "delete":
                    if pairs.get(a) != b:
                        raise failure(rpc, "data-missing", f"no pair {a}-{b}")
                    del pairs[a]
                elif op == "create":
                    busy = set(pairs) | set(pairs.values())
                    if a in busy or b in busy or not (a < RADIX // 2 <= b < RADIX):
                        raise failure(rpc, "data-exists" if pairs.get(a) == b else "invalid-value",
                                      f"pair {a}-{b} cannot be made")
                    pairs[a] = b
            STATE["pairs"] = pairs
            STATE["generation"] += 1
            if request_id:
                STATE["results"][request_id] = (STATE["generation"], False)
        return etree.Element("ok")


def main() -> None:
    key_file = os.path.join(tempfile.mkdtemp(), "host_key")
    paramiko.RSAKey.generate(2048).write_private_key_file(key_file)
    controller = server.SSHUserPassController(username=sys.argv[1], password=sys.argv[2])
    ssh = server.NetconfSSHServer(server_ctl=controller, server_methods=Methods(), port=0,
                                  host_key=key_file, debug=False)
    print(json.dumps({"port": ssh.port}), flush=True)
    sys.stdin.read()  # until the test closes our stdin
    ssh.close()


if __name__ == "__main__":
    main()
