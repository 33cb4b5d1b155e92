"""The container registry: images with real content (`images.py`) and GHCR's OCI Distribution
API for them below `/v2/` (`distribution.py`). It imports the store and the request log.
"""
