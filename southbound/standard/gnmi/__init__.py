"""gNMI 0.10.0 for a switch's counters, ports and drains (the CounterReader and PortDrainer
contracts): OpenConfig paths (:mod:`.paths`), typed values (:mod:`.values`), the streaming
sampler (:mod:`.sampler`), the driver (:mod:`.driver`) and its registry entry
(:mod:`.transport`). README.md says which paths, modes and leaves, and why."""
