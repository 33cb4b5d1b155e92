"""`conveyor/config-check`: YAML, Kubernetes schemas, kustomizations, Helm values, policy."""

from .run import CONFIG_CHECK, Finding, Report, check_change, render, run_config_check

__all__ = ["CONFIG_CHECK", "Finding", "Report", "check_change", "render", "run_config_check"]
