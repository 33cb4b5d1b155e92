"""Conveyor: GitOps promotion bot as a GitHub App."""

__version__ = "0.1.0"
