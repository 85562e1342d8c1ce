"""``heliostat emulate``: run an emulated fabric as a service until interrupted.

Plugs into the ``heliostat`` CLI like the modules of ``controller/commands/`` (it has
``register(sub)``, whose handler is :func:`run_command`); also runs alone as
``python -m emulation.service --fabric configs/fabric-8.yaml`` through :func:`main`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path

from emulation.control import ControlServer, FabricControl
from emulation.fabric import Demand, EmulatedFabric, FabricError
from emulation.signals import stop_on_signals
from emulation.standard import PROTOCOLS
from optimizer.config import load_fabric
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric
from optimizer.traffic import TrafficMatrix, load_matrix
from southbound.tls import ServerTlsConfig, TlsConfig, TlsConfigError

log = logging.getLogger(__name__)


DESCRIPTION = (
    "Run an emulated fabric (gRPC devices + flow-level data plane) until interrupted, "
    "printing where its devices listen. With --packet, run the packet-level fabric "
    "(Mininet + Open vSwitch + OpenFlow agent) instead: see `heliostat emulate --packet --help`."
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``emulate`` subcommand to the heliostat CLI."""
    p = sub.add_parser("emulate", help="run an emulated fabric as a service",
                       description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(handler=run_command)


def build_parser(prog: str = "heliostat emulate") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fabric", required=True, type=Path, help="fabric YAML (configs/*.yaml)")
    p.add_argument("--demand", type=Path, action="append",
                   help="traffic matrix file (CSV src,dst,gbps or JSON); repeat it for a "
                   "series that cycles every --demand-period emulated seconds")
    p.add_argument("--demand-period", type=float, default=60.0,
                   help="emulated seconds each matrix of a series holds (default: %(default)s)")
    p.add_argument("--devices-file", type=Path, default=Path("heliostat-devices.yaml"),
                   help="where to write the device endpoints (default: %(default)s)")
    p.add_argument("--speed", type=float, default=1.0,
                   help="emulated seconds per real second (default: %(default)s)")
    p.add_argument("--tick", type=float, default=1.0,
                   help="emulated seconds per data-plane step (default: %(default)s)")
    p.add_argument("--switching-time-ms", type=float, default=50.0,
                   help="OCS switching time (default: %(default)s)")
    p.add_argument("--duration", type=float, default=0.0,
                   help="stop after this many real seconds (default: run until interrupted)")
    p.add_argument("--control", default=None, metavar="HOST:PORT",
                   help="serve a control endpoint (loopback only; port 0 picks one) that `heliostat emuctl` "
                   "pokes: demand, fibres, OCS power, agents, blocks; its URL goes to the devices file's "
                   "name + .control")
    add_protocols_argument(p)
    add_tls_arguments(p)


def add_protocols_argument(p: argparse.ArgumentParser) -> None:
    """What the devices speak, shared by the flow-level and the packet-level emulators."""
    p.add_argument("--protocols", choices=PROTOCOLS, default="standard",
                   help="standard: P4Runtime and gNMI on every switch, NETCONF over SSH on every OCS, "
                   "beside the native service (the devices file names each endpoint); native: "
                   "heliostat.southbound.v1 alone (default: %(default)s)")


def add_tls_arguments(p: argparse.ArgumentParser) -> None:
    """The devices' TLS options, shared by the flow-level and the packet-level emulators."""
    tls = p.add_argument_group("TLS (all optional; without --tls-cert devices are plaintext)")
    tls.add_argument("--tls-cert", type=Path, help="device server certificate (PEM)")
    tls.add_argument("--tls-key", type=Path, help="device server private key (PEM)")
    tls.add_argument("--tls-client-ca", type=Path,
                     help="require client certificates signed by this CA (mutual TLS)")
    tls.add_argument("--tls-ca", type=Path, help="CA for clients, written to the devices file")
    tls.add_argument("--tls-client-cert", type=Path, help="client certificate for the devices file")
    tls.add_argument("--tls-client-key", type=Path, help="client key for the devices file")
    tls.add_argument("--tls-server-name", help="server name clients expect, for the devices file")


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point: ``python -m emulation.service ...``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    """Run the fabric described by parsed ``emulate`` arguments; returns the exit status."""
    if args.speed <= 0 or args.tick <= 0 or args.demand_period <= 0:
        print("heliostat: error: --speed, --tick and --demand-period must be positive", file=sys.stderr)
        return 2
    try:
        check_output_file(args.devices_file, "--devices-file")
        control = control_address(args.control)
        fabric_model = load_fabric(args.fabric)
        demand = _demand(args, fabric_model)
        server_tls, client_tls = tls_from_args(args)
        fabric = EmulatedFabric(
            fabric_model,
            switching_time_s=args.switching_time_ms / 1000.0,
            tick_s=args.tick,
            devices_file=args.devices_file,
            server_tls=server_tls,
            client_tls=client_tls,
            protocols=args.protocols,
        )
    except (ConfigError, TlsConfigError, FabricError) as exc:
        print(f"heliostat: error: {exc}", file=sys.stderr)
        return 2

    with stop_on_signals() as stop:
        return _serve(fabric, demand, stop, args.speed, args.duration, control)


def control_address(text: str | None) -> tuple[str, int] | None:
    """``--control HOST:PORT`` (``[v6]:PORT``) as (host, port); None when not given."""
    if text is None:
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError("<command line>", "--control", f"expected HOST:PORT, got {text[:80]!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def control_file(devices_file: Path) -> Path:
    """Where a running emulator writes its control endpoint's URL: beside its devices file."""
    return devices_file.with_name(devices_file.name + ".control")


def check_output_file(path: Path, option: str) -> None:
    """A file this command will write: not a directory; its directory is created if missing
    (``run/devices.yaml`` on a fresh clone)."""
    if path.is_dir():
        raise ConfigError(str(path), option, "is a directory; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = f"cannot create the directory {path.parent}: {exc.strerror}"
        raise ConfigError(str(path), option, why) from exc


def tls_from_args(args: argparse.Namespace) -> tuple[ServerTlsConfig | None, TlsConfig | None]:
    """(server TLS of the devices, client TLS written to the devices file) from the options."""
    server_tls = client_tls = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            raise TlsConfigError("--tls-cert and --tls-key go together")
        server_tls = ServerTlsConfig(args.tls_cert, args.tls_key, args.tls_client_ca)
    if args.tls_ca:
        client_tls = TlsConfig(args.tls_ca, args.tls_client_cert, args.tls_client_key, args.tls_server_name)
    return server_tls, client_tls


def _serve(
    fabric: EmulatedFabric,
    demand: Demand | None,
    stop: threading.Event,
    speed: float,
    duration_s: float,
    control: tuple[str, int] | None = None,
) -> int:
    fabric_model = fabric.fabric
    with fabric:
        if demand is not None:
            fabric.set_demand(demand)
        print(f"fabric {fabric_model.name}: {len(fabric.agents)} devices; "
              f"devices file {fabric.devices_file.resolve()}")
        server = None
        if control is not None:
            server = ControlServer(FabricControl(fabric), *control)
            url = server.start()
            control_file(fabric.devices_file).write_text(url + "\n")
            print(f"control endpoint {url} (heliostat emuctl --devices-file {fabric.devices_file} status)")
        for name, config in fabric.device_configs().items():
            served = ", ".join(f"{e.protocol} {e.address}" for e in config.endpoints)
            print(f"  {name:12s} {config.kind:6s} {config.address}" + (f" ({served})" if served else ""))
        sys.stdout.flush()
        try:
            run(fabric, stop, speed=speed, duration_s=duration_s)
        finally:
            if server is not None:
                server.stop()
                control_file(fabric.devices_file).unlink(missing_ok=True)
        stats = fabric.stats()
        print(f"stopped at t={stats.time_s:.1f}s: mlu={stats.mlu:.3f} "
              f"delivered={stats.delivered_bytes:.3e}B dropped={stats.dropped_bytes:.3e}B "
              f"blackholed={stats.blackholed_bytes:.3e}B")
    return 0


def _demand(args: argparse.Namespace, fabric_model: Fabric) -> Demand | None:
    """One matrix, or a cycling series of them, from the --demand files."""
    if not args.demand:
        return None
    matrices = [load_matrix(path, fabric_model) for path in args.demand]
    if len(matrices) == 1:
        return matrices[0]
    period = args.demand_period

    def series(now: float) -> TrafficMatrix:
        return matrices[int(now // period) % len(matrices)]

    return series


def run(fabric: EmulatedFabric, stop: threading.Event, *, speed: float, duration_s: float) -> None:
    """Step the fabric in real time scaled by ``speed`` until ``stop`` is set."""
    started = time.monotonic()
    emulated_start = fabric.clock.now()
    report_every = 10.0
    next_report = started + report_every
    while not stop.is_set():
        if duration_s and time.monotonic() - started >= duration_s:
            break
        stop.wait(fabric.tick_s / speed)
        target = emulated_start + (time.monotonic() - started) * speed
        behind = target - fabric.clock.now()
        if behind > 0:
            fabric.step(behind)
        if time.monotonic() >= next_report:
            s = fabric.stats()
            log.info("t=%.1fs mlu=%.3f dropped=%.3eB blackholed=%.3eB", s.time_s, s.mlu,
                     s.dropped_bytes, s.blackholed_bytes)
            next_report += report_every


if __name__ == "__main__":
    sys.exit(main())
