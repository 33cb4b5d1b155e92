"""Names that repositories and GitHub see: the policy file and Conveyor's check runs."""

POLICY_PATH = ".github/conveyor.yml"
GATE_CHECK = "conveyor/promotion-gate"
CONFIG_CHECK = "conveyor/config-check"
# On a release's source commit, per environment: why the release was not promoted there.
REFUSAL_CHECK = "conveyor/promotion"


def refusal_check(environment: str) -> str:
    return f"{REFUSAL_CHECK} ({environment})"
# On every commit Conveyor makes: its receipt, which only this app can post (see trust.py).
RECEIPT_CHECK = "conveyor/commit"
