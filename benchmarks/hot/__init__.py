"""Benchmarks of topology engineering on fabrics that run hot (issue 30):
``python -m benchmarks.hot.family``."""
