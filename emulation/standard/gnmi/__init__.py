"""A gNMI 0.10.0 target over an emulated block or spine switch: OpenConfig interface counters,
oper and admin state, forwarding-viable, port speed and LLDP neighbours (:mod:`.tree`);
Capabilities, Get, Set under master arbitration and Subscribe (:mod:`.servicer`); served on
a device agent by :func:`.target.add_gnmi` / :func:`.target.start_gnmi_target`."""
