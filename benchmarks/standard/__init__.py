"""Benchmarks of the standard southbound protocols."""
