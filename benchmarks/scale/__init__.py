"""Benchmarks of how the code scales with fabric size."""
