"""``heliostat emulate --packet --fabric F``: run the packet-level fabric until interrupted.

Prints where the devices listen and writes the devices file (as the flow-level
``heliostat emulate`` does), optionally after installing the uniform mesh and simple WCMP
groups (``--bootstrap``). Entry points: :func:`main` (``python -m emulation.mininet.cli``
or the CLI's ``--packet`` branch, which passes its argv), or :func:`add_arguments` +
:func:`run_command` for an argparse subcommand.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from emulation.mininet.bootstrap import BootstrapError, bootstrap
from emulation.mininet.fabric import PacketFabric, PacketFabricError
from emulation.mininet.plan import PlanError
from emulation.service import add_protocols_argument, add_tls_arguments, tls_from_args
from emulation.signals import stop_on_signals
from optimizer.errors import ConfigError
from southbound.devices import write_devices_file
from southbound.errors import SouthboundError
from southbound.tls import TlsConfigError

DESCRIPTION = ("Run the packet-level fabric (Open vSwitch bridges in Mininet, driven by the "
               "OpenFlow agent) until interrupted, printing where its devices listen. Needs root.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--packet", action="store_true", help="(accepted: this is the packet fabric)")
    p.add_argument("--fabric", required=True, type=Path, help="fabric YAML (e.g. configs/fabric-4.yaml)")
    p.add_argument("--devices-file", type=Path, default=Path("heliostat-devices.yaml"),
                   help="where to write the device endpoints (default: %(default)s)")
    p.add_argument("--workdir", type=Path,
                   help="agent and builder logs and specs (default: a temporary directory)")
    p.add_argument("--tag", help="prefix of the bridge, host and interface names, 1-4 letters or digits "
                   "(default: an unused one)")
    p.add_argument("--hosts-per-block", type=int, default=2, help="(default: %(default)s)")
    p.add_argument("--bucket-scheme", choices=("weighted", "replicated"), default="replicated",
                   help="select-group buckets (default: %(default)s; see the README)")
    p.add_argument("--switching-time-ms", type=float, default=50.0,
                   help="OCS switching time (default: %(default)s)")
    p.add_argument("--bootstrap", action="store_true",
                   help="install the uniform mesh and simple WCMP groups through the drivers")
    p.add_argument("--duration", type=float, default=0.0,
                   help="stop after this many seconds (default: run until interrupted)")
    add_protocols_argument(p)
    add_tls_arguments(p)


def build_parser(prog: str = "heliostat emulate --packet") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(p)
    p.add_argument("--log-level", default="INFO")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    if args.switching_time_ms < 0 or args.duration < 0 or args.hosts_per_block < 1:
        print("error: --switching-time-ms and --duration must be >= 0, --hosts-per-block >= 1",
              file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="heliostat-packet-"))
    try:
        with stop_on_signals() as stop:
            server_tls, client_tls = tls_from_args(args)
            fabric = PacketFabric.from_config(args.fabric, workdir, tag=args.tag,
                                              hosts_per_block=args.hosts_per_block,
                                              bucket_scheme=args.bucket_scheme,
                                              ocs_switching_time_s=args.switching_time_ms / 1000.0,
                                              server_tls=server_tls, client_tls=client_tls,
                                              protocols=args.protocols)
            with fabric:
                if args.bootstrap:
                    bootstrap(fabric.driver, fabric.fabric)
                write_devices_file(args.devices_file, fabric.devices)  # 0600: it holds a NETCONF login
                _print_endpoints(fabric, args.devices_file)
                stop.wait(args.duration or None)
    except (ConfigError, PlanError, PacketFabricError, BootstrapError, SouthboundError,
            TlsConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _print_endpoints(fabric: PacketFabric, devices_file: Path) -> None:
    print(f"packet fabric {fabric.fabric.name} (tag {fabric.tag}) is up")
    print(f"devices file: {devices_file}   (logs: {fabric.workdir})")
    for name, device in fabric.devices.items():
        print(f"  {name:10} {device.kind:6} {device.address}")
    print("hosts (run commands with: nsenter --net=/proc/<pid>/ns/net -- CMD):")
    for name, pid in sorted(fabric.host_pids.items()):
        print(f"  {name:12} {fabric.plan.hosts[name]['ip']:12} pid {pid}")
    print("Ctrl-C to stop", flush=True)


if __name__ == "__main__":
    sys.exit(main())
