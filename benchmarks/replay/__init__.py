"""Replay studies beside ``benchmarks.bench_replay``: the tail sweep (``tail_sweep``)."""
