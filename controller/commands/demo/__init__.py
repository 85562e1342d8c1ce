"""``heliostat demo``: the scripted demand shift on an emulated fabric
(:mod:`~controller.commands.demo.scripted`), and with ``--ha`` three replicas on etcd whose
leader is killed mid-reconfiguration (:mod:`~controller.commands.demo.ha`), and with ``--jobs``
training jobs announced ahead of their start (:mod:`~controller.commands.demo.jobs`)."""

from controller.commands.demo.scripted import register

__all__ = ["register"]
