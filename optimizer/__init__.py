"""The pure core of Heliostat: fabric model, traffic, TE, ToE, mapping and staging.

The shared model sits at the top (:mod:`~optimizer.fabric`, :mod:`~optimizer.topology`,
:mod:`~optimizer.traffic`, :mod:`~optimizer.config` and :mod:`~optimizer.schema` for the
config dialect, :mod:`~optimizer.staging`, :mod:`~optimizer.policy`,
:mod:`~optimizer.budget`, :mod:`~optimizer.errors`); the three engines are subpackages
with narrow faces: :mod:`optimizer.te`, :mod:`optimizer.toe` and :mod:`optimizer.mapping`.

Nothing in this package does I/O beyond parsing text that callers hand it (or a path
they name for the config loaders), and nothing here talks to devices.
"""
