"""The deployment repository's policy file ``.github/conveyor.yml``: model and validation.

Pure: it imports only `bot.domain`, `bot.yamlread`, `bot.names` and `bot.text`.
"""

from bot.domain.policy.issues import PolicyError, PolicyIssue
from bot.domain.policy.loader import MAX_FILE_BYTES, check_config_file, load_policy
from bot.domain.policy.model import Environment, Group, Policy, Service

__all__ = [
    "MAX_FILE_BYTES",
    "Environment",
    "Group",
    "Policy",
    "PolicyError",
    "PolicyIssue",
    "Service",
    "check_config_file",
    "load_policy",
]
