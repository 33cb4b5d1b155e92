"""The dashboard stays complete within GitHub's 65,536 characters a body: a compact table,
details in `<details>` blocks, continued in comments of the same issue when needed."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.github.limits import BODY_LIMIT
from bot.promotion.dashboard.issue import (
    DASHBOARD_MARKER,
    PART_MARKER_PREFIX,
    UNUSED_PART,
    kept_package_pages,
    newest_delivery,
    refresh_dashboard,
    render_pages,
)
from bot.promotion.dashboard.status import OpenPull, StatusRow
from bot.sandbox.demo import DEPLOY_REPO
from tests.flows.test_dashboard import dashboards
from tests.harness import close_world, make_world

ENVIRONMENTS = ("staging", "canary", "production")


def many_rows(services: int) -> list[StatusRow]:
    digest = "sha256:" + "ab" * 32
    return [StatusRow(
        service=f"service-{n:04d}", environment=env,
        path=f"apps/service-{n:04d}/overlays/{env}/kustomization.yaml", version="1.24.3",
        digest=digest, package_url=f"https://github.com/orgs/acme/packages/container/"
                                   f"service-{n:04d}/123456789",
        since=datetime(2026, 11, 30, 10, 0, tzinfo=UTC), since_commit="c" * 40,
        since_url=f"https://github.com/acme/deploy/commit/{'c' * 40}", pull_number=1000 + n,
        pull_url=f"https://github.com/acme/deploy/pull/{1000 + n}",
        open_pulls=(OpenPull(2000 + n, "https://github.com/acme/deploy/pull/1",
                                  "1.25.0"),) if env == "production" else ())
        for n in range(services) for env in ENVIRONMENTS]


def test_a_thousand_services_fit_in_pages_and_every_row_is_there() -> None:
    pages = render_pages("acme/deploy", many_rows(1000))
    assert len(pages) > 1
    assert all(len(page) <= BODY_LIMIT for page in pages)
    assert pages[0].endswith(DASHBOARD_MARKER)
    text = "\n".join(pages)
    for n in range(1000):
        name = f"service-{n:04d}"
        assert f"| {name} | `1.24.3` | `1.24.3` | `1.24.3` (1 open) |" in text, name
        assert f"<details><summary>{name}</summary>" in text
        assert f"#{2000 + n} `1.25.0`" in text
    # a compact table continued on a new page repeats its header
    for page in pages:
        rows = [line for line in page.splitlines() if line.startswith("| service-")]
        if rows:
            assert "| service | staging | canary | production |" in page
    assert [PART_MARKER_PREFIX in page for page in pages] == [False] + [True] * (len(pages) - 1)


def test_the_environment_graph_is_drawn_within_the_body_limit_at_500_services() -> None:
    edges = {"staging": (), "canary": ("staging",), "production": ("staging", "canary")}
    pages = render_pages("acme/deploy", many_rows(500), edges=edges)
    assert all(len(page) <= BODY_LIMIT for page in pages)
    chart = pages[0].split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert chart.splitlines() == [
        "flowchart LR",
        '  e0["<b>staging</b><br/>service-0000 1.24.3<br/>service-0001 1.24.3<br/>'
        'service-0002 1.24.3<br/>+497 more services"]',
        '  e1["<b>canary</b><br/>service-0000 1.24.3<br/>service-0001 1.24.3<br/>'
        'service-0002 1.24.3<br/>+497 more services"]',
        '  e2["<b>production</b><br/>service-0000 1.24.3<br/>service-0001 1.24.3<br/>'
        'service-0002 1.24.3<br/>+497 more services"]',
        "  e0 --> e1",
        "  e0 --> e2",
        "  e1 --> e2",
    ]


def test_a_small_policy_is_one_body() -> None:
    [body] = render_pages("acme/deploy", many_rows(3))
    assert "comment" not in body.split(DASHBOARD_MARKER)[0].rsplit("\n", 1)[-1]


def big_files(services: int) -> dict[str, str]:
    envs = "\n".join(f"  - name: {env}\n    path: apps/{{service}}/{env}.yaml\n    from: any"
                     for env in ENVIRONMENTS)
    policy = ("version: 1\nallowed_images: [\"ghcr.io/acme/\"]\nservices:\n"
              + "".join(f"  service-{n:04d}:\n    image: ghcr.io/acme/service-{n:04d}\n"
                        f"    source: acme/web\n" for n in range(services))
              + f"environments:\n{envs}\n")
    files = {".github/conveyor.yml": policy}
    for n in range(services):
        for env in ENVIRONMENTS:
            files[f"apps/service-{n:04d}/{env}.yaml"] = (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: s\nspec:\n"
                "  template:\n    spec:\n      containers:\n        - name: s\n"
                f"          image: ghcr.io/acme/service-{n:04d}:1.0.{n}\n")
    return files


async def test_the_dashboard_continues_in_comments_and_empties_them_when_it_shrinks() -> None:
    world = await make_world(files=big_files(160))
    try:
        capabilities = world.conveyor.capabilities
        ctx = capabilities.ctx
        gh = await ctx.clients.installation(world.demo.installation_id)
        repo = await capabilities.policies.get(gh, world.demo.installation_id, DEPLOY_REPO)
        assert repo is not None and repo.policy is not None, repo
        await refresh_dashboard(capabilities.dashboards, gh, repo)
        [issue] = dashboards(world)
        parts = world.emulator.comments(DEPLOY_REPO, issue["number"])
        assert parts and all(PART_MARKER_PREFIX in c["body"] for c in parts)
        text = issue["body"] + "\n".join(c["body"] for c in parts)
        for n in range(160):
            assert f"### service-{n:04d}" in text
            assert f"`1.0.{n}`" in text

        # nothing changed: nothing is written
        writes = world.emulator.requests.count("PATCH") + world.emulator.requests.count("POST")
        await refresh_dashboard(capabilities.dashboards, gh, repo)
        assert world.emulator.requests.count("PATCH") + world.emulator.requests.count(
            "POST") == writes

        # the policy shrinks to ten services: the parts are kept, emptied, not repeated
        await world.emulator.push_files(DEPLOY_REPO, {".github/conveyor.yml": big_files(10)[
            ".github/conveyor.yml"]}, message="Fewer services")
        await world.settle()
        repo = await capabilities.policies.get(gh, world.demo.installation_id, DEPLOY_REPO)
        assert repo is not None
        await refresh_dashboard(capabilities.dashboards, gh, repo)
        [issue] = dashboards(world)
        after = world.emulator.comments(DEPLOY_REPO, issue["number"])
        assert [c["id"] for c in after] == [c["id"] for c in parts]
        assert all(UNUSED_PART in c["body"] for c in after)
        assert "_Continued" not in issue["body"]
    finally:
        await close_world(world)


def test_what_the_issue_shows_is_kept_only_when_it_is_believable() -> None:
    """The issue is what replicas share, and anyone with write access can edit it: a package
    link is kept only if it points to a package page of this GitHub, delivery figures only if
    they were read no later than now."""
    digest = "sha256:" + "ab" * 32
    row = replace(many_rows(1)[0], digest=digest, package_url=None)
    ours = "https://github.com/acme/web/pkgs/container/web/17"
    shown = f"| [`{digest[:19]}`]({ours}) |"
    assert kept_package_pages([row], shown, "https://github.com")[0].package_url == ours
    elsewhere = shown.replace("https://github.com", "https://example.com")
    assert kept_package_pages([row], elsewhere, "https://github.com")[0].package_url is None
    now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    section = "<!-- conveyor:delivery-until {} -->\n### Delivery, last 30 days\n\nfigures"
    read_before = section.format((now - timedelta(minutes=5)).isoformat())
    assert newest_delivery(None, f"{read_before}\n\n{DASHBOARD_MARKER}", now) == read_before
    from_the_future = section.format((now + timedelta(days=1)).isoformat())
    assert newest_delivery(None, from_the_future, now) is None
