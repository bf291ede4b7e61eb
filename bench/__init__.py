"""The benchmarks, run from the repository root as modules: ``python -m bench.engine``,
``python -m bench.table``, ``python -m bench.gateway``, ``python -m bench.store``.

Each writes its section of docs/benchmarks.md. The ones that talk to a server use the
test kit (``tests.kit``): its launcher, its protocol client and its table driver, the
same as the tests. Nothing here is imported by the server or the client.
"""
