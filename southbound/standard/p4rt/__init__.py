"""WCMP groups over P4Runtime (PINS's sai_p4 subset): the GroupWriter driver
(:class:`~.driver.P4GroupWriter`), the per-destination direct counters
(:class:`~.counters.DestinationCounters`) and the registry entry (:mod:`.transport`).
See README.md."""
