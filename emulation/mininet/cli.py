"""``heliostat emulate --packet --fabric F``: run the packet-level fabric until interrupted.

Prints where the devices listen (and writes the devices file), optionally after
installing the uniform mesh and simple WCMP groups (``--bootstrap``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import tempfile
import threading
from pathlib import Path

from emulation.mininet.bootstrap import bootstrap
from emulation.mininet.fabric import PacketFabric, PacketFabricError
from optimizer.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="heliostat emulate --packet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packet", action="store_true", help="(accepted; this is the packet fabric)")
    parser.add_argument("--fabric", required=True, help="fabric YAML (e.g. configs/fabric-4.yaml)")
    parser.add_argument("--workdir", help="where the devices file and logs go (default: a temp dir)")
    parser.add_argument("--devices-out", help="also copy the devices file here")
    parser.add_argument("--hosts-per-block", type=int, default=2)
    parser.add_argument("--bucket-scheme", choices=("weighted", "replicated"), default="replicated")
    parser.add_argument("--bootstrap", action="store_true",
                        help="install the uniform mesh and simple WCMP groups")
    parser.add_argument("--log-level", default="INFO")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="heliostat-packet-"))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        fabric = PacketFabric.from_config(args.fabric, workdir, hosts_per_block=args.hosts_per_block,
                                          bucket_scheme=args.bucket_scheme)
        with fabric:
            if args.bootstrap:
                bootstrap(fabric.driver, fabric.fabric)
            if args.devices_out:
                Path(args.devices_out).write_text(fabric.devices_file.read_text())
            print(f"packet fabric {fabric.fabric.name} (tag {fabric.tag}) is up")
            print(f"devices file: {args.devices_out or fabric.devices_file}")
            for name, device in fabric.devices.items():
                print(f"  {name:10} {device.kind:6} {device.address}")
            print("hosts (run commands with: nsenter --net=/proc/<pid>/ns/net -- CMD):")
            for name, pid in sorted(fabric.host_pids.items()):
                print(f"  {name:12} {fabric.plan.hosts[name]['ip']:12} pid {pid}")
            print("Ctrl-C to stop", flush=True)
            stop.wait()
    except (ConfigError, PacketFabricError) as exc:
        print(f"heliostat emulate --packet: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
