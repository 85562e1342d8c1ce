"""The controller: decisions, the daemon that carries them out, the northbound API and the CLI.

Where to look first: :mod:`controller.decision` (the pure rules: state and one observation in,
actions out), :mod:`controller.daemon` (the shim that polls, decides and acts; its parts and
who owns which state: controller/README.md),
:mod:`controller.config`, :mod:`controller.northbound.api` / :mod:`controller.northbound.daemon_api`
(what the northbound API serves), :mod:`controller.northbound` and :mod:`controller.commands`.

The three loops, each a subpackage:

- :mod:`controller.sensing`: counters to rates, the traffic matrix and its prediction,
  the live topology, link qualification;
- :mod:`controller.te_loop`: TE on the usable circuits and the safe push of its groups;
- :mod:`controller.reconfig`: ToE proposals, stages, the executor and its journal.

:mod:`controller.device_view` holds what the devices reported (pure types and helpers);
:mod:`controller.drivers` is the only module of the loops that talks to devices.
"""
