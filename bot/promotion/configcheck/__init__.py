"""`conveyor/config-check` on GitHub: read the changed files at a commit, run the checks of
``bot.configcheck`` on them, post the check run.

It imports those validators, the builds of `bot.promotion` and the GitHub edge.
"""

from bot.configcheck.report import Finding, Report, render
from bot.names import CONFIG_CHECK
from bot.promotion.configcheck.run import check_change, run_config_check

__all__ = ["CONFIG_CHECK", "Finding", "Report", "check_change", "render", "run_config_check"]
