"""The pure core of Heliostat: fabric model, traffic, TE, ToE, mapping and staging.

Nothing in this package does I/O beyond parsing text that callers hand it (or a path
they name for the config loaders), and nothing here talks to devices.
"""
