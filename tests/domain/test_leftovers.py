"""What the resync does with open promotion PRs a failed job left behind, over plain facts."""

from __future__ import annotations

import pytest

from bot.domain.leftovers import LeftoverStep, Merge, PromotionPull, Supersede, leftover_steps

MERGING = ("staging",)
SERVICES = ("web", "api")


def pull(number: int, version: str, *, service: str = "web", environment: str = "staging",
         at_head: bool = True) -> PromotionPull:
    return PromotionPull(number, service, environment, version, at_head=at_head)


STEPS: list[tuple[str, list[PromotionPull], list[LeftoverStep]]] = [
    ("nothing open", [], []),
    ("one PR of an auto-merging environment is merged", [pull(3, "1.2.0")], [Merge(3)]),
    ("the older of two is superseded by the newer, which is merged",
     [pull(3, "1.2.0"), pull(4, "1.3.0")], [Supersede(3, by=4), Merge(4)]),
    ("a newer PR opened first still wins", [pull(4, "1.3.0"), pull(3, "1.2.0")],
     [Merge(4), Supersede(3, by=4)]),
    ("of equal versions the first stays", [pull(3, "1.2.0"), pull(4, "1.2.0")],
     [Merge(3), Supersede(4, by=3)]),
    ("other services and environments do not compete",
     [pull(3, "1.2.0"), pull(4, "1.3.0", service="api"),
      pull(5, "1.4.0", environment="production")],
     [Merge(3), Merge(4)]),
    ("a gated or manual environment is not merged",
     [pull(5, "1.4.0", environment="production")], []),
    ("an environment the policy no longer has is not merged",
     [pull(5, "1.4.0", environment="qa")], []),
    ("a service the policy no longer has is not merged", [pull(6, "1.0.0", service="old")],
     []),
    ("a PR someone pushed to is not merged", [pull(3, "1.2.0", at_head=False)], []),
    ("a PR someone pushed to is still superseded",
     [pull(3, "1.2.0", at_head=False), pull(4, "1.3.0")], [Supersede(3, by=4), Merge(4)]),
    ("versions compare as versions, not text", [pull(3, "1.10.0"), pull(4, "1.9.0")],
     [Merge(3), Supersede(4, by=3)]),
]


@pytest.mark.parametrize(("case", "pulls", "expected"), STEPS, ids=[c for c, _, _ in STEPS])
def test_steps(case: str, pulls: list[PromotionPull], expected: list[LeftoverStep]) -> None:
    assert leftover_steps(pulls, merging=MERGING, services=SERVICES) == expected

