"""The controller's configuration file (``heliostat run --config configs/controller.yaml``).

The accepted form (every section but the three paths is optional; times in seconds)::

    fabric: fabric-8.yaml              # relative paths are relative to this file
    devices: ../run/devices.yaml
    store: ../run/heliostat.db         # the SQLite journal
    solver: highs                      # highs or cbc
    intervals:
      te_interval: 30                  # poll counters and run TE
      prediction_window: 3600          # the ToE prediction is the peak over this window
      toe_check_interval: 300          # how often the reconfiguration policy is asked
      stale_after: 90                  # a counter silent this long is reported stale
      job_lead_time: 900               # plan for an announced job this long before it starts
    thresholds:
      te_matrix_change: 0.05           # rerun TE when a pair moves this much (relative)
      te_stale_ratio: 1.10             # rerun TE when the weights in force give more than this x
                                       # the best MLU possible on the latest matrix (a step that holds)
      prediction_change: 0.2           # republish the prediction when its peak moves this much
      matrix_floor_gbps: 1.0           # smaller demands count as this much in both changes
      reconfig_gain: 0.1               # ToE acts when the predicted MLU improves by this fraction
      min_reconfig_interval: 3600      # at least this long between two reconfigurations
      stage_mlu: 0.8                   # a stage may not push the MLU above max(this, MLU at its start)
                                       # (the LP's MLU is held to stage_mlu / 1.02 for integer weights)
      min_qualified_fraction: 0.95     # below this share of new links qualified, the stage rolls back
      deferred_plan_ttl: 900           # a plan a stage of which does not fit today's load is kept
                                       # this long and applied once the prediction leaves room;
                                       # 0: never deferred (default: 3 toe_check_intervals)
    te:                                # what TE plans for (optimizer.te.TePolicy)
      method: scenarios                # scenarios (the recent matrices together) or min_mlu
      window: 96                       # measurements of history the method reads
      burst: 0.1                       # scenarios: share of the objective on per-pair bursts
      tail: 0.1                        # scenarios: share of the objective on the worst 5%
      hedge: null                      # S in (0, 1], or null (no cap)
      predictor: last                  # min_mlu only: last or peak (per-pair peak of the window)
      table_size: 128
      max_oversubscription: 1.02
    timeouts:                          # per executor step
      drain: 30
      verify_drain: 90
      apply_ocs: 60
      qualify: 60
      undrain: 30
      toe_solve: 60                    # time budget of one ToE proposal (LP, mapping, staging)
    listen:
      northbound: 127.0.0.1:50051      # gRPC API (host:port; [v6]:port; port 0 picks one)
      northbound_tls:                  # optional; absent means plaintext
        cert: certs/controller.pem     # the API's certificate chain (PEM)
        key: certs/controller-key.pem  # its private key (PEM)
        client_ca: certs/ca.pem        # optional: clients must present a certificate it signed
        operators: [ctl-admin]         # with client_ca, required: certificate names (CN or DNS
        readers: [grafana]             #   SAN) that may act / only read; others are refused
      metrics: 127.0.0.1:9108          # Prometheus HTTP endpoint
      metrics_tls:                     # optional: serve the metrics over HTTPS
        cert: certs/metrics.pem
        key: certs/metrics-key.pem
        client_ca: certs/ca.pem        # optional: scrapers must present a certificate it signed
      web: 127.0.0.1:8080              # optional: the read-only status page and its JSON (/api/...)
      web_jobs: false                  # true: the page's JSON API also takes POST/DELETE /api/jobs
    ha:                                # optional: replicas elected on etcd (controller/ha/config.py)
      etcd: ["127.0.0.1:2379"]
      name: replica-a
      prefix: /heliostat/demo-8

Loading validates everything in one place and raises :class:`~optimizer.errors.ConfigError`
naming the file and the key; unknown keys are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from controller.ha.config import HaConfig, parse_ha
from controller.northbound.listen import (
    DEFAULT_METRICS,
    DEFAULT_NORTHBOUND,
    ListenAddress,
    parse_listen_address,
)
from controller.reconfig.deferred import DEFAULT_TTL_CHECKS
from controller.reconfig.step_timeouts import TIMEOUT_KEYS, StepTimeouts
from controller.sensing.estimation import EstimationSettings
from optimizer import limits, schema
from optimizer.config import parse_yaml
from optimizer.errors import ConfigError
from optimizer.te import MAX_WINDOW, Predictor, TeMethod, TePolicy
from southbound.tls import CERTIFICATE, PRIVATE_KEY, ClientRoles, ServerTlsConfig, TlsConfigError, read_pem

#: Entries a WCMP group may have at most (switch group tables hold 128 to 4096).
MAX_TABLE_SIZE = 65536

TOP_KEYS = (
    "fabric", "devices", "store", "solver", "intervals", "thresholds", "timeouts", "listen", "te", "ha",
)


class Solver(StrEnum):
    HIGHS = "highs"
    CBC = "cbc"


@dataclass(frozen=True)
class Intervals:
    te_interval: float = 30.0
    prediction_window: float = 3600.0
    toe_check_interval: float = 300.0
    stale_after: float = 90.0
    job_lead_time: float = 900.0  # optimizer.jobs.intents.DEFAULT_LEAD_TIME_S


@dataclass(frozen=True)
class Thresholds:
    te_matrix_change: float = 0.05
    te_stale_ratio: float = 1.10
    prediction_change: float = 0.2
    matrix_floor_gbps: float = 1.0
    reconfig_gain: float = 0.1
    min_reconfig_interval: float = 3600.0
    stage_mlu: float = 0.8
    min_qualified_fraction: float = 0.95
    deferred_plan_ttl: float | None = None  # None: DEFAULT_TTL_CHECKS toe_check_intervals


@dataclass(frozen=True)
class Listen:
    northbound: ListenAddress = DEFAULT_NORTHBOUND
    metrics: ListenAddress = DEFAULT_METRICS
    northbound_tls: ServerTlsConfig | None = None  # None: the API is served in plaintext
    northbound_roles: ClientRoles | None = None  # with mutual TLS: who may act, who may only read
    metrics_tls: ServerTlsConfig | None = None  # None: the metrics are served over plain HTTP
    web: ListenAddress | None = None  # the status page (controller/ui/web.py); None: not served
    web_jobs: bool = False  # the page's JSON API takes job announcements (POST/DELETE /api/jobs)


@dataclass(frozen=True)
class ControllerConfig:
    """A validated controller configuration; paths are absolute."""

    source: str
    fabric: Path
    devices: Path
    store: Path
    solver: Solver = Solver.HIGHS
    intervals: Intervals = field(default_factory=Intervals)
    thresholds: Thresholds = field(default_factory=Thresholds)
    timeouts: StepTimeouts = field(default_factory=StepTimeouts)
    listen: Listen = field(default_factory=Listen)
    te: TePolicy = field(default_factory=TePolicy)
    ha: HaConfig | None = None  # replicas elected on etcd (controller/ha/config.py); None: alone

    @property
    def deferred_plan_ttl(self) -> float:
        """How long a deferred ToE plan is kept, in seconds (0: plans are never deferred)."""
        ttl = self.thresholds.deferred_plan_ttl
        return DEFAULT_TTL_CHECKS * self.intervals.toe_check_interval if ttl is None else ttl

    def estimation_settings(self) -> EstimationSettings:
        return EstimationSettings(
            stale_after=self.intervals.stale_after,
            prediction_window=self.intervals.prediction_window,
            prediction_change=self.thresholds.prediction_change,
            te_matrix_change=self.thresholds.te_matrix_change,
            floor_gbps=self.thresholds.matrix_floor_gbps,
        )


_INTERVAL_KEYS = tuple(Intervals.__dataclass_fields__)
_THRESHOLD_KEYS = tuple(Thresholds.__dataclass_fields__)
_TIMEOUT_KEYS = TIMEOUT_KEYS
_LISTEN_KEYS = tuple(Listen.__dataclass_fields__)
_TE_KEYS = tuple(TePolicy.__dataclass_fields__)


def load_controller_config(path: str | Path) -> ControllerConfig:
    """Read and validate the controller config at ``path``."""
    source = str(path)
    text = schema.read_file(path, limits.MAX_YAML_FILE_BYTES)
    return parse_controller_config(text, source, base_dir=Path(path).resolve().parent)


def parse_controller_config(
    text: str, source: str = "<controller>", base_dir: Path | None = None
) -> ControllerConfig:
    return controller_config_from_dict(parse_yaml(text, source), source, base_dir)


def controller_config_from_dict(
    data: object, source: str = "<controller>", base_dir: Path | None = None
) -> ControllerConfig:
    """Validate a parsed config; relative paths are resolved against ``base_dir`` (default: cwd)."""
    base = (base_dir or Path.cwd()).resolve()
    top = schema.mapping(data, source, "")
    schema.check_keys(top, source, "", TOP_KEYS, required=("fabric", "devices", "store"))
    intervals = _intervals(_section(top, "intervals", _INTERVAL_KEYS, source), source)
    thresholds = _thresholds(_section(top, "thresholds", _THRESHOLD_KEYS, source), source)
    _check_deferred_ttl(thresholds, intervals, source)
    return ControllerConfig(
        source=source,
        fabric=_path(top["fabric"], source, "fabric", base),
        devices=_path(top["devices"], source, "devices", base),
        store=_path(top["store"], source, "store", base),
        solver=schema.choice(top.get("solver", Solver.HIGHS.value), source, "solver", Solver),
        intervals=intervals,
        thresholds=thresholds,
        timeouts=_timeouts(_section(top, "timeouts", _TIMEOUT_KEYS, source), source),
        listen=_listen(_section(top, "listen", _LISTEN_KEYS, source), source, base),
        te=_te(_section(top, "te", _TE_KEYS, source), source),
        ha=parse_ha(top.get("ha"), source, base),
    )


def _section(top: Any, key: str, allowed: tuple[str, ...], source: str) -> dict[str, Any]:
    if key not in top or top[key] is None:
        return {}
    section = schema.mapping(top[key], source, key)
    schema.check_keys(section, source, key, allowed)
    return dict(section)


def _path(value: object, source: str, key: str, base: Path) -> Path:
    path = Path(schema.string(value, source, key)).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _seconds(section: dict[str, Any], name: str, default: float, source: str, section_key: str) -> float:
    return schema.number(
        section.get(name, default), source, schema.join(section_key, name), positive=True,
        maximum=limits.MAX_SECONDS,
    )


def _intervals(section: dict[str, Any], source: str) -> Intervals:
    d = Intervals()
    values = {k: _seconds(section, k, getattr(d, k), source, "intervals") for k in _INTERVAL_KEYS}
    result = Intervals(**values)
    te = result.te_interval
    if te < limits.MIN_TE_INTERVAL_S:
        raise ConfigError(
            source, "intervals.te_interval", f"must be at least {limits.MIN_TE_INTERVAL_S:g} s, got {te:g}"
        )
    for name in ("prediction_window", "toe_check_interval", "stale_after"):
        if getattr(result, name) < te:
            raise ConfigError(
                source,
                f"intervals.{name}",
                f"must be at least te_interval ({te:g} s), got {getattr(result, name):g}",
            )
    return result


def _fraction(section: dict[str, Any], name: str, default: float, source: str, low_open: bool) -> float:
    key = f"thresholds.{name}"
    value = schema.number(section.get(name, default), source, key, positive=low_open, minimum=0.0)
    if value > 1.0:
        raise ConfigError(source, key, f"must be at most 1, got {value:g}")
    return value


def _at_least_one(section: dict[str, Any], key: str, default: float, source: str) -> float:
    value = schema.number(section.get(key, default), source, f"thresholds.{key}", positive=True)
    if value < 1.0:
        why = f"must be at least 1 (a ratio to the optimum), got {value:g}"
        raise ConfigError(source, f"thresholds.{key}", why)
    return value


def _thresholds(section: dict[str, Any], source: str) -> Thresholds:
    d = Thresholds()

    def nonneg(name: str) -> float:
        return schema.number(section.get(name, getattr(d, name)), source, f"thresholds.{name}", minimum=0.0)

    return Thresholds(
        te_matrix_change=nonneg("te_matrix_change"),
        te_stale_ratio=_at_least_one(section, "te_stale_ratio", d.te_stale_ratio, source),
        prediction_change=nonneg("prediction_change"),
        matrix_floor_gbps=schema.number(
            section.get("matrix_floor_gbps", d.matrix_floor_gbps),
            source,
            "thresholds.matrix_floor_gbps",
            positive=True,
        ),
        reconfig_gain=nonneg("reconfig_gain"),
        min_reconfig_interval=nonneg("min_reconfig_interval"),
        stage_mlu=_fraction(section, "stage_mlu", d.stage_mlu, source, low_open=True),
        min_qualified_fraction=_fraction(
            section, "min_qualified_fraction", d.min_qualified_fraction, source, low_open=False
        ),
        deferred_plan_ttl=None if section.get("deferred_plan_ttl") is None else schema.number(
            section["deferred_plan_ttl"], source, "thresholds.deferred_plan_ttl", minimum=0.0,
            maximum=limits.MAX_SECONDS,
        ),
    )


def _check_deferred_ttl(thresholds: Thresholds, intervals: Intervals, source: str) -> None:
    """A deferred plan is checked at each ToE check: a shorter life would never see one."""
    ttl = thresholds.deferred_plan_ttl
    if ttl is not None and 0 < ttl < intervals.toe_check_interval:
        raise ConfigError(
            source,
            "thresholds.deferred_plan_ttl",
            f"must be 0 (plans are never deferred) or at least intervals.toe_check_interval "
            f"({intervals.toe_check_interval:g} s: a deferred plan is checked at each ToE check), "
            f"got {ttl:g}",
        )


def _te(section: dict[str, Any], source: str) -> TePolicy:
    d = TePolicy()
    hedge = section.get("hedge", d.hedge)
    if hedge is not None:
        hedge = schema.number(hedge, source, "te.hedge", positive=True)
        if hedge > 1.0:
            raise ConfigError(source, "te.hedge", f"must be in (0, 1] (1 is an even split), got {hedge:g}")
    return TePolicy(
        method=schema.choice(section.get("method", d.method.value), source, "te.method", TeMethod),
        predictor=schema.choice(
            section.get("predictor", d.predictor.value), source, "te.predictor", Predictor
        ),
        window=_bounded_int(section.get("window", d.window), source, "te.window", 1, MAX_WINDOW),
        hedge=hedge,
        table_size=_bounded_int(
            section.get("table_size", d.table_size), source, "te.table_size", 1, MAX_TABLE_SIZE
        ),
        max_oversubscription=schema.number(
            section.get("max_oversubscription", d.max_oversubscription),
            source,
            "te.max_oversubscription",
            minimum=1.0,
        ),
        burst=_share(section.get("burst", d.burst), source, "te.burst"),
        tail=_share(section.get("tail", d.tail), source, "te.tail"),
    )


def _share(value: object, source: str, key: str) -> float:
    number = schema.number(value, source, key, minimum=0.0)
    if number >= 1.0:
        raise ConfigError(source, key, f"must be in [0, 1) (a share of the objective), got {number:g}")
    return number


def _bounded_int(value: object, source: str, key: str, low: int, high: int) -> int:
    number = schema.integer(value, source, key, minimum=low)
    if number > high:
        raise ConfigError(source, key, f"must be at most {high}, got {number}")
    return number


def _timeouts(section: dict[str, Any], source: str) -> StepTimeouts:
    d = StepTimeouts()
    return StepTimeouts(**{k: _seconds(section, k, getattr(d, k), source, "timeouts") for k in _TIMEOUT_KEYS})


def _listen(section: dict[str, Any], source: str, base: Path) -> Listen:
    d = Listen()
    tls, roles = _server_tls(section.get("northbound_tls"), source, "listen.northbound_tls", base)
    return Listen(
        northbound=_address(section.get("northbound"), d.northbound, source, "listen.northbound"),
        metrics=_address(section.get("metrics"), d.metrics, source, "listen.metrics"),
        northbound_tls=tls,
        northbound_roles=roles,
        metrics_tls=_metrics_tls(section.get("metrics_tls"), source, base),
        web=_optional_address(section.get("web"), source, "listen.web"),
        web_jobs=_flag(section.get("web_jobs", False), source, "listen.web_jobs"),
    )


def _flag(value: object, source: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(source, key, f"expected true or false, got {schema.shown(value)}")
    return value


_SERVER_TLS_FILES = {"cert": CERTIFICATE, "key": PRIVATE_KEY, "client_ca": CERTIFICATE}
_SERVER_TLS_KEYS = (*_SERVER_TLS_FILES, "operators", "readers")


def _server_tls(
    value: object, source: str, key: str, base: Path
) -> tuple[ServerTlsConfig | None, ClientRoles | None]:
    """The API's TLS files, each checked now to be a readable PEM file of its kind (not when
    the server starts), and with client_ca the roles of the client certificates."""
    if value is None:
        return None, None
    section = schema.mapping(value, source, key)
    schema.check_keys(section, source, key, _SERVER_TLS_KEYS, required=("cert", "key"))
    files: dict[str, Path] = {}
    for name, kind in _SERVER_TLS_FILES.items():
        if section.get(name) is None:
            continue
        child = schema.join(key, name)
        path = _path(section[name], source, child, base)
        try:
            read_pem(path, kind)
        except TlsConfigError as exc:
            raise ConfigError(source, child, str(exc)) from exc
        files[name] = path
    tls = ServerTlsConfig(files["cert"], files["key"], files.get("client_ca"))
    if tls.client_ca is None:
        for name in ("operators", "readers"):
            if name in section:
                raise ConfigError(source, schema.join(key, name), "needs client_ca (client certificates)")
        return tls, None
    if "operators" not in section:
        raise ConfigError(
            source, schema.join(key, "operators"),
            "required with client_ca: the certificate names (CN or DNS SAN) allowed to act",
        )
    roles = ClientRoles(
        operators=_names(section["operators"], source, schema.join(key, "operators")),
        readers=_names(section.get("readers") or [], source, schema.join(key, "readers")),
    )
    return tls, roles


def _metrics_tls(value: object, source: str, base: Path) -> ServerTlsConfig | None:
    """The metrics endpoint's TLS files (no roles: a scraper only reads)."""
    if value is None:
        return None
    key = "listen.metrics_tls"
    section = schema.mapping(value, source, key)
    schema.check_keys(section, source, key, tuple(_SERVER_TLS_FILES), required=("cert", "key"))
    files = {name: _tls_file(section, name, kind, source, key, base)
             for name, kind in _SERVER_TLS_FILES.items() if section.get(name) is not None}
    return ServerTlsConfig(files["cert"], files["key"], files.get("client_ca"))


def _tls_file(section: Any, name: str, kind: str, source: str, key: str, base: Path) -> Path:
    """A TLS file of ``section``, checked now to be a readable PEM file of its kind."""
    child = schema.join(key, name)
    path = _path(section[name], source, child, base)
    try:
        read_pem(path, kind)
    except TlsConfigError as exc:
        raise ConfigError(source, child, str(exc)) from exc
    return path


def _names(value: object, source: str, key: str) -> frozenset[str]:
    items = schema.sequence(value, source, key)
    return frozenset(schema.string(v, source, schema.join(key, i)) for i, v in enumerate(items))


def _address(value: object, default: ListenAddress, source: str, key: str) -> ListenAddress:
    if value is None:
        return default
    return parse_listen_address(schema.string(value, source, key), source, key)


def _optional_address(value: object, source: str, key: str) -> ListenAddress | None:
    """An address that is off when absent (``listen.web``)."""
    if value is None:
        return None
    return parse_listen_address(schema.string(value, source, key), source, key)

