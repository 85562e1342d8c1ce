"""The standard device protocols served by the emulated devices, one subpackage each:
``p4rt`` (a stateful P4Runtime server over the PINS-shaped tables), ``gnmi`` (a gNMI target
with OpenConfig interface counters and admin state) and ``netconf`` (a NETCONF server over SSH
with the cross-connect YANG module)."""

#: what an emulated fabric's devices can speak: the standard protocols (beside the native
#: service) or the native ``heliostat.southbound.v1`` alone
PROTOCOLS = ("standard", "native")
