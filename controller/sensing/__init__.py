"""The sensing loop: what the fabric carries and what it is.

- :mod:`~controller.sensing.estimation`: counters to rates (wrap, reset, gaps), the TE
  matrix and the ToE prediction (per-pair peak over a window);
- :mod:`~controller.sensing.tomogravity` and :mod:`~controller.sensing.inferred_matrix`:
  the matrix from link loads when blocks report no per-destination counters;
- :mod:`~controller.sensing.observe`: live circuits, links up, reconciliation with the
  journal, maintenance ports, measured MLU (pure);
- :mod:`~controller.sensing.qualify`: whether new links are up, with the right peer, lit
  (reads the devices).
"""
