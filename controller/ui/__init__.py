"""What an operator sees: the status page and its JSON endpoints (``listen.web``), and the
pictures ``plan``, ``toe`` and ``replay`` draw with ``--plot``.

The face is light on purpose (the daemon imports :mod:`controller.ui.recorder`): import the
server from :mod:`controller.ui.web` and the pictures from :mod:`controller.ui.plots`.
"""
