"""Benchmarks: placement quality on the Alibaba openb trace, and speed of the system's paths."""
