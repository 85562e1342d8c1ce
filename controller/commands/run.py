"""``heliostat run --config F``: the controller daemon, until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from controller.config import load_controller_config
from controller.daemon import Daemon
from controller.northbound.daemon_api import DaemonApi
from controller.reconfig.pause import PausePoint
from optimizer.errors import ConfigError

if TYPE_CHECKING:
    from controller.ui.web import WebServer

log = logging.getLogger("heliostat.run")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the controller daemon")
    p.add_argument("--config", required=True, help="controller config YAML (configs/controller.yaml)")
    # Test hook: stop the executor before or after a step until the process is killed.
    p.add_argument("--pause-at", default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_run)


def start_api_servers(daemon: Daemon, events: Any = None) -> Any:
    """Serve the northbound API and metrics if the northbound package is installed."""
    try:
        from controller.northbound import start_northbound
    except ImportError:
        log.warning("controller.northbound is not available: the northbound API and metrics are not served")
        return None
    listen = daemon.config.listen
    servers = start_northbound(
        DaemonApi(daemon),
        listen.northbound,
        daemon.metrics,
        listen.metrics,
        fabric=daemon.fabric,
        tls=listen.northbound_tls,
        roles=listen.northbound_roles,
        events=events,
        metrics_tls=listen.metrics_tls,
    )
    log.info(
        "northbound API on %s (%s), metrics on %s",
        listen.northbound,
        "plaintext" if listen.northbound_tls is None
        else "mutual TLS" if listen.northbound_tls.client_ca else "TLS",
        listen.metrics,
    )
    return servers


def start_status_page(daemon: Daemon, servers: Any) -> WebServer | None:
    """Serve the status page at ``listen.web`` (controller/ui/web.py), or None when it is off."""
    address = daemon.config.listen.web
    if address is None:
        return None
    from controller.ui.web import start_web
    from southbound.tls import is_loopback

    if not is_loopback(address.host):
        log.warning("SECURITY: the status page listens on %s without authentication: anyone who can "
                    "reach it can read the fabric's state (it changes nothing)", address.host)
    metrics = getattr(servers, "metrics", None)
    jobs_writes = bool(getattr(daemon.config.listen, "web_jobs", False))  # listen.web_jobs
    if jobs_writes and not is_loopback(address.host):
        log.warning("SECURITY: listen.web_jobs: anyone who can reach %s can announce and remove jobs",
                    address)
    page = start_web(DaemonApi(daemon), address, metrics.url if metrics is not None else None,
                     jobs_writes=jobs_writes)
    page.follow_logs(daemon.recorder.log_handler())
    return page


def _run(args: argparse.Namespace) -> int:
    root = logging.getLogger()
    if root.level > logging.INFO and not getattr(args, "quiet", False):  # a daemon logs INFO unless -q
        root.setLevel(logging.INFO)
    config = load_controller_config(args.config)
    try:  # the journal's directory (run/ on a fresh clone), as a daemon creates its state directory
        config.store.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
    except OSError as exc:
        why = f"cannot create the journal's directory {config.store.parent}: {exc.strerror}"
        raise ConfigError(config.source, "store", why) from exc
    try:
        pause = PausePoint.parse(args.pause_at) if args.pause_at else None
    except ValueError as exc:
        raise ConfigError("<command line>", "--pause-at", str(exc)) from exc
    from controller.northbound.events import EventHub

    events = EventHub()  # WatchEvents (`heliostat ctl watch`) follows what the loop emits
    daemon = Daemon(config, pause=pause, listener=events.publish)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.stop())
    servers = page = None
    try:
        daemon.start()
        servers = start_api_servers(daemon, events)
        role = f" as replica {config.ha.name}" if config.ha is not None else ""
        print(f"heliostat: controlling {daemon.fabric.name}{role} ({config.source})", file=sys.stderr,
              flush=True)
        page = start_status_page(daemon, servers)
        if page is not None:
            print(f"heliostat: status page {page.url}", file=sys.stderr, flush=True)
        daemon.run()
    finally:
        if page is not None:
            page.stop()
        if servers is not None:
            servers.stop()
        daemon.close()
    log.info("stopped")
    return 0
