"""Builds a Mininet network from a NetPlan and holds it until told to stop.

Runs under the system Python (/usr/bin/python3), which sees Debian's Mininet; it needs
only the standard library and Mininet. Protocol on stdin/stdout, one JSON object a line:

  stdin  line 1: the plan (NetPlan.builder_json())
  stdout:        {"ok": true, "hosts": {name: {"pid": .., "intf": ..}}, "bridges": [..],
                  "interfaces": [..]}   or   {"ok": false, "error": ".."}
  stdin  "stop" or end of file: the network is torn down (only what it built), then
  stdout:        {"stopped": true}

Mininet's cleanup (``mn -c``) is never used: it kills processes by name.
"""

import json
import sys
import traceback


def build(plan):
    from mininet.link import Link
    from mininet.log import setLogLevel
    from mininet.net import Mininet
    from mininet.node import Host, OVSSwitch, RemoteController

    class QuietRemoteController(RemoteController):
        """Mininet probes a remote controller with ``telnet`` and decodes the answer as text;
        the os-ken agent answers with an OpenFlow HELLO, whose bytes are not UTF-8 (a flaky
        UnicodeDecodeError). The agent is started and checked by the caller: skip the probe."""

        def checkListening(self):
            return None

    setLogLevel("warning")
    net = Mininet(topo=None, build=False, controller=None, switch=OVSSwitch, host=Host, link=Link,
                  autoSetMacs=False, autoStaticArp=False, waitConnected=False)
    controller = plan["controller"]
    net.addController(plan["tag"] + "c0", controller=QuietRemoteController, ip=controller["ip"],
                      port=controller["port"])
    # batch: one ovs-vsctl per switch runs through the switch's shell, whose terminal cuts a
    # line at 4,095 characters - a bridge of 40 or more ports (fabric-8's 72-port OCSes) was
    # silently never created. Batched, Mininet runs the commands without a terminal.
    for name, switch in sorted(plan["switches"].items()):
        net.addSwitch(name, cls=OVSSwitch, dpid=f"{switch['dpid']:016x}", datapath="user",
                      protocols=switch.get("protocols", "OpenFlow13"), failMode="secure", batch=True)
    for name, host in sorted(plan["hosts"].items()):
        net.addHost(name, ip=host["ip"] + "/8", mac=host["mac"])
    for name, host in sorted(plan["hosts"].items()):
        net.addLink(name, host["switch"], port1=0, port2=host["ofport"])
    for link in plan["links"]:
        net.addLink(link["a"], link["b"], port1=link["a_port"], port2=link["b_port"])
    return net


def configure_hosts(net, plan):
    """Static ARP for every other host, no IPv6 chatter, no TX checksum offload (needed for
    TCP/UDP through the userspace datapath)."""
    for name in sorted(plan["hosts"]):
        host = net.get(name)
        intf = host.defaultIntf().name
        host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        host.cmd(f"ethtool -K {intf} tx off >/dev/null 2>&1")
        for other, spec in sorted(plan["hosts"].items()):
            if other != name:
                host.cmd(f"ip neigh replace {spec['ip']} lladdr {spec['mac']} dev {intf} nud permanent")
    for switch in net.switches:
        for intf in switch.intfList():
            if intf.name != "lo":
                switch.cmd(f"sysctl -qw net.ipv6.conf.{intf.name}.disable_ipv6=1")


def report(net, plan):
    interfaces = sorted({i.name for s in net.switches for i in s.intfList() if i.name != "lo"})
    return {
        "ok": True,
        "hosts": {name: {"pid": net.get(name).pid, "intf": net.get(name).defaultIntf().name}
                  for name in sorted(plan["hosts"])},
        "bridges": sorted(plan["switches"]),
        "interfaces": interfaces,
    }


def say(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    plan = json.loads(sys.stdin.readline())
    net = None
    try:
        net = build(plan)
        net.build()
        net.start()
        configure_hosts(net, plan)
        say(report(net, plan))
        for line in sys.stdin:
            if line.strip() == "stop":
                break
    except Exception as exc:  # report any failure to the parent, then tear down
        traceback.print_exc()
        say({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        if net is not None:
            net.stop()
        say({"stopped": True})


if __name__ == "__main__":
    main()
