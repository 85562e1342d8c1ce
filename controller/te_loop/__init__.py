"""The TE loop: route the estimated matrix on the usable circuits and push the groups safely.

- :mod:`~controller.te_loop.te_push`: the usable circuits, the warm TE solve and the
  per-block, generation-checked group push;
- :mod:`~controller.te_loop.transition`: the order and intermediates of a group change so
  that no mix of old and new groups overloads a link (pure).
"""
