"""``heliostat config check CONFIG``: a controller config and every file it names, validated
the way ``heliostat run`` reads them, without starting anything (Faucet's ``check_faucet_config``).

The same loaders as the daemon (``load_controller_config``, ``load_plannable_fabric``,
``load_devices_file``) and the same coverage rule as :class:`~controller.drivers.FabricDrivers`
(every block and OCS has a device of its kind, every transport a driver), so a config that passes here starts.
:func:`check_controller_config` raises :class:`~optimizer.errors.ConfigError` naming the file
and key of the first problem; only the handler prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from controller.config import ControllerConfig, load_controller_config
from optimizer.config import load_plannable_fabric
from optimizer.errors import ConfigError
from optimizer.fabric import Fabric
from southbound.devices import DeviceConfig, load_devices_file
from southbound.registry import default_registry


@dataclass
class ConfigCheck:
    """What a valid config holds, and warnings that do not stop ``heliostat run``."""

    config: ControllerConfig
    fabric: Fabric
    devices: dict[str, DeviceConfig] | None  # None: the devices file does not exist yet
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        c, f = self.config, self.fabric
        devices = "not written yet" if self.devices is None else f"{len(self.devices)} devices"
        tls = "off" if c.listen.northbound_tls is None else (
            "mutual TLS" if c.listen.northbound_tls.client_ca else "TLS")
        return (
            f"{c.source}: valid: fabric {f.name!r} ({f.n_blocks} blocks, {len(f.ocs)} OCSes, "
            f"{len(f.spine)} spine switches), devices {c.devices} ({devices}), journal {c.store}, "
            f"API {c.listen.northbound} (TLS {tls}), metrics {c.listen.metrics}, "
            f"TE every {c.intervals.te_interval:g} s ({c.te.method.value})"
        )


def check_controller_config(path: str | Path) -> ConfigCheck:
    """Validate the config at ``path`` and the fabric, devices file and journal place it names."""
    config = load_controller_config(path)
    fabric = load_plannable_fabric(config.fabric)
    check = ConfigCheck(config, fabric, None)
    if config.devices.exists():
        check.devices = load_devices_file(config.devices)
        _check_coverage(fabric, check.devices, str(config.devices))
        default_registry().check(check.devices)  # every transport it names has a driver
    else:
        check.warnings.append(
            f"{config.devices}: the devices file does not exist yet (`heliostat emulate "
            "--devices-file` writes one); `heliostat run` needs it at start"
        )
    missing = _check_store(config.store, config.source)
    if missing is not None:
        why = "the journal's directory does not exist yet; `heliostat run` creates it"
        check.warnings.append(f"{missing}: {why}")
    return check


def _check_coverage(fabric: Fabric, devices: dict[str, DeviceConfig], source: str) -> None:
    wanted = [(b, "block") for b in fabric.block_names] + [(o.name, "ocs") for o in fabric.ocs]
    wanted += [(s.name, "spine") for s in fabric.spine if s.name in devices]
    missing = [name for name, _ in wanted if name not in devices]
    if missing:
        raise ConfigError(source, "devices", f"no entry for {', '.join(missing)} of fabric {fabric.name!r}")
    for name, kind in wanted:
        if devices[name].kind != kind:
            raise ConfigError(
                source, f"devices.{name}.kind", f"is {devices[name].kind}, the fabric needs a {kind}"
            )


def _check_store(store: Path, source: str) -> Path | None:
    """The journal's directory must be writable (the journal and its lock go there), or, if it
    does not exist yet, the directory ``heliostat run`` would create it in: returns the missing
    directory (None: it exists)."""
    parent = store.parent
    existing = parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(source, "store", f"{existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(source, "store", f"the directory {existing} is not writable")
    if store.exists() and not store.is_file():
        raise ConfigError(source, "store", f"{store} is not a file")
    return None if existing == parent else parent


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="validate a controller config and the files it names")
    csub = p.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    c = csub.add_parser(
        "check",
        help="validate a controller config, its fabric, devices file and journal place; start nothing",
    )
    c.add_argument("config", help="controller config YAML (configs/controller.yaml)")
    c.add_argument("--format", choices=("table", "json"), default="table")
    c.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    check = check_controller_config(args.config)
    if args.format == "json":
        data = {
            "valid": True,
            "config": check.config.source,
            "fabric": {"path": str(check.config.fabric), "name": check.fabric.name,
                       "blocks": check.fabric.n_blocks, "ocs": len(check.fabric.ocs),
                       "spine": len(check.fabric.spine)},
            "devices": {"path": str(check.config.devices),
                        "count": None if check.devices is None else len(check.devices)},
            "store": str(check.config.store),
            "warnings": check.warnings,
        }
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        print(check.summary())
    for warning in check.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
