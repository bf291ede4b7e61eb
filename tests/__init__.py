"""The tests, a package so that the test kit has one import name, ``tests.kit``, in the
tests, the benchmarks and scripts/cluster alike (see tests/kit/__init__.py)."""
