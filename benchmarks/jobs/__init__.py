"""Benchmarks of the training-job model (issue 31): ``python -m benchmarks.jobs.comm_time``."""
