"""The exit statuses of ``heliostat``, one meaning each, so scripts can tell them apart.

====  ==================================================================================
0     done
1     the operation was refused or failed (a ToE run not accepted, a reconfiguration that
      rolled back, no feasible plan, a device that refused a change...)
2     usage or configuration: a bad option, an invalid file (named with its key), a journal
      another controller holds, an address the servers cannot bind, certificates that
      exist already (``certs`` without ``--force``)
3     the controller is unreachable (``heliostat ctl``: not running, wrong address, TLS
      handshake refused, no answer within the deadline)
130   interrupted (Ctrl-C)
====  ==================================================================================

The error classes are matched by name along the exception's MRO, so this module imports
none of them (``heliostat --help`` must not load gRPC to know what an exit code means).
"""

from __future__ import annotations

OK = 0
FAILED = 1
USAGE = 2
UNREACHABLE = 3
INTERRUPTED = 130

#: Errors that exit with something other than FAILED, by ``module.QualifiedName``.
EXIT_CODE_OF_ERROR = {
    "optimizer.errors.ConfigError": USAGE,
    "controller.reconfig.journal_lock.JournalLocked": USAGE,
    "controller.northbound.errors.NorthboundError": USAGE,
    "southbound.pki.PkiError": USAGE,  # heliostat certs: its options (names, --days, --force)
    "controller.ha.elector.ReplicaRefused": USAGE,  # ha: a replica name in use, another fabric's prefix
    "controller.northbound.errors.ControllerUnreachable": UNREACHABLE,
}


def exit_code_of(error: BaseException) -> int:
    """The exit status for an error the CLI caught: the first class named above along the
    error's MRO, then along its causes (the daemon wraps a locked journal or a bad devices
    file in DaemonError ``from`` it); FAILED when none is."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        for cls in type(cause).__mro__:
            code = EXIT_CODE_OF_ERROR.get(f"{cls.__module__}.{cls.__qualname__}")
            if code is not None:
                return code
        cause = cause.__cause__
    return FAILED
