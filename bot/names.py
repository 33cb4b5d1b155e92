"""Names that repositories and GitHub see: the policy file and the two check runs."""

POLICY_PATH = ".github/conveyor.yml"
GATE_CHECK = "conveyor/promotion-gate"
CONFIG_CHECK = "conveyor/config-check"
