"""The Python API tests, the sandbox and the benchmarks drive: the shared base (`base.py`),
seeding (`seeding.py`), acting as people and CI with each call waiting for its webhooks
(`acting.py`), reading state (`reading.py`), composed in `EmulatorCore` (`core.py`). It may
import every family; only the dispatcher, control API, web views and GraphQL read it.
"""
