"""The standard device protocols: P4Runtime and gNMI for switches (stubs generated from the
projects' own protos, ``proto/``), NETCONF for optical circuit switches."""
