"""`conveyor/config-check`: YAML, Kubernetes schemas, kustomizations, Helm values, policy."""

from ...names import CONFIG_CHECK
from .run import Finding, Report, check_change, render, run_config_check

__all__ = ["CONFIG_CHECK", "Finding", "Report", "check_change", "render", "run_config_check"]
