"""High availability (issue 14): controller replicas elected on etcd, fenced at the devices.

- :mod:`controller.ha.config`: the ``ha:`` config section;
- :mod:`controller.ha.election`: the pure role decisions (who leads, with which epoch);
- :mod:`controller.ha.etcd_kv`: the etcd v3 edge (JSON gateway, endpoint failover, latency);
- :mod:`controller.ha.elector`: the campaign thread that keeps the lease and the role.

The design notes (client choice, epochs, fencing) are in ``controller/ha/README.md``.
"""
