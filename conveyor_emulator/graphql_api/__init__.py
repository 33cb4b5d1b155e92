"""GitHub's GraphQL API at `/api/graphql`, executed with graphql-core against GitHub's schema
trimmed to the types served (`endpoint.py`, the schema file), and the trimmer
(`make_trimmed.py`). It reads the Python API of `conveyor_emulator.driver`.
"""
