"""Environment graphs in the policy: `after` as a name or a list, the errors of a graph that
cannot be played (with their positions), and the walks the rest of the bot uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.domain.policy import PolicyError, load_policy

HEAD = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
environments:
  - name: staging-eu
    path: eu/{service}.yaml
  - name: staging-us
    path: us/{service}.yaml
"""  # lines 1-11; cases append from line 12 on


def issues_of(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(PolicyError) as caught:
        load_policy(text)
    return [(i.line, i.column, i.message) for i in caught.value.issues]


@pytest.mark.parametrize(("case", "text", "expected"), [
    ("an unknown name in a list",
     HEAD + "  - name: production\n    path: p.yaml\n    after: [staging-eu, stagin-us]\n",
     [(14, 25, "environments[2].after[1]: unknown environment 'stagin-us' "
               "(did you mean 'staging-us'?)")]),
    ("a name listed twice",
     HEAD + "  - name: production\n    path: p.yaml\n    after:\n      - staging-eu\n"
            "      - staging-eu\n",
     [(16, 9, "environments[2].after[1]: 'staging-eu' is listed twice")]),
    ("an empty list",
     HEAD + "  - name: production\n    path: p.yaml\n    after: []\n",
     [(14, 12, "environments[2].after: name at least one environment (an empty list leaves "
               "this environment unreachable from any entry environment)")]),
    ("itself in a list",
     HEAD + "  - name: production\n    path: p.yaml\n    after: [staging-eu, production]\n",
     [(14, 25, "environments[2].after[1]: an environment cannot come after itself")]),
    ("a cycle through lists",
     HEAD + "  - name: a\n    path: a.yaml\n    after: [staging-eu, b]\n"
            "  - name: b\n    path: b.yaml\n    after: [staging-us, c]\n"
            "  - name: c\n    path: c.yaml\n    after: a\n",
     [(14, 12, "environments[2].after: cycle in 'after': a → c → b → a")]),
    ("a list of something else",
     HEAD + "  - name: production\n    path: p.yaml\n    after: [staging-eu, 3]\n",
     [(14, 25, "environments[2].after[1]: expected a string, got integer")]),
    ("an entry environment that is after another",
     HEAD + "  - name: production\n    path: p.yaml\n    from: release\n"
            "    after: [staging-eu]\n",
     [(14, 5, "environments[2].from: only applies to entry environments; this one is gated "
              "by 'after' and is opened by /promote or promote: auto")]),
])
def test_graph_errors(case: str, text: str, expected: list[tuple[int, int, str]]) -> None:
    assert issues_of(text) == expected, case


def test_a_fan_in_a_fan_out_and_a_wave_load() -> None:
    policy = load_policy(HEAD + """  - name: production
    path: p/{service}.yaml
    after: [staging-eu, staging-us]
  - name: prod-eu
    path: pe/{service}.yaml
    after: production
  - name: prod-us
    path: pu/{service}.yaml
    after: prod-eu
  - name: prod-ap
    path: pa/{service}.yaml
    after: production
""")
    production = policy.environments["production"]
    assert production.after == ("staging-eu", "staging-us")
    assert production.upstreams == "staging-eu and staging-us"
    assert production.gated and not policy.environments["staging-eu"].gated
    assert [e.name for e in policy.downstream_of("production")] == ["prod-eu", "prod-ap"]
    assert policy.ancestors("prod-us") == ("prod-eu", "production", "staging-eu", "staging-us")
    assert policy.descendants("staging-us") == ("production", "prod-eu", "prod-ap", "prod-us")
    assert policy.descendants("prod-us") == ()


def test_the_policies_of_the_graph_page_load_as_written() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "environment-graphs.md").read_text()
    policies = [load_policy(block) for block in re.findall(r"```yaml\n(.*?)```", page, re.S)
                if block.startswith("version: 1")]
    shapes = [{name: env.after for name, env in p.environments.items() if env.after}
              for p in policies]
    assert shapes == [
        {"prod-eu": ("staging",), "prod-us": ("staging",)},
        {"production": ("staging-eu", "staging-us")},
        {"prod-eu": ("staging",), "prod-us": ("prod-eu",), "prod-ap": ("prod-us",)},
    ]
