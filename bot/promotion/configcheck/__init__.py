"""`conveyor/config-check` on GitHub: read the changed files at a commit, run the checks of
``bot.configcheck`` on them, post the check run."""

from ...configcheck.report import Finding, Report, render
from ...names import CONFIG_CHECK
from .run import check_change, run_config_check

__all__ = ["CONFIG_CHECK", "Finding", "Report", "check_change", "render", "run_config_check"]
