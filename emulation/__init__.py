"""Emulated devices (gRPC servers with real state), the flow-level data plane and the
Mininet-like EmulatedFabric."""
