"""The device side of the fabric, for testing the controller against real servers.

Flow-level (this folder, no privileges): emulated OCSes and block switches with real state,
each behind a real gRPC server (:mod:`emulation.agent`), and a numpy data plane that moves a
traffic matrix over the live circuits and groups (:mod:`emulation.dataplane`); together the
Mininet-like :class:`emulation.fabric.EmulatedFabric`.

Packet-level: :mod:`emulation.mininet` builds Open vSwitch bridges and hosts as the wiring
says; :mod:`emulation.openflow` is the os-ken agent that drives them over OpenFlow 1.3 and
serves the same southbound gRPC services, so the controller drives both fabrics unchanged.
Nothing here imports the controller.
"""
