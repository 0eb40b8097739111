"""Benchmarks: run as scripts (see each module's docstring); the synthetic data is shared."""
