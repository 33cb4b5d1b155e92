"""The offline `bump` and the bot's opener decide the same input alike.

Each case gives both the same repository files, service, environment and image (tag and
digest): the bot through `/promote` on the emulator (its opener reads GitHub and the emulated
GHCR; kustomize renders for real), `bump` on a checkout of the same files. Both refuse with the
same words for each refusal kind — the tag policy, a stale `Chart.lock`, a render in which no
workload's image changes — and both set the same text when the promotion goes ahead, then call
it live when asked again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.cli.bump import bump
from bot.render.tool import find_kustomize
from bot.sandbox.demo import digest_of
from bot.text import unescape_markdown
from conveyor_emulator.registry.images import build_chart
from tests.flows.test_commands import issue, reply_to, say
from tests.flows.test_gate_builds import frontend_in_production
from tests.flows.test_gate_charts import layout
from tests.harness import World, close_world, make_world

# CI never skips: a machine without kustomize fails these instead.
pytestmark = pytest.mark.skipif(find_kustomize(None) is None and not os.environ.get("CI"),
                                reason="needs kustomize or kubectl")

STAGING = "apps/web/overlays/staging/kustomization.yaml"


def checkout(world: World, root: Path, paths: Mapping[str, str]) -> Path:
    """The deployment repository's files at its default branch's head, in ``root``."""
    for relative in paths:
        text = world.emulator.file(world.repo, relative)
        assert text is not None, relative
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


async def bot_says(world: World, command: str) -> str:
    """The bot's reply to ``command``, without its Markdown escapes and reply marker."""
    number = await issue(world)
    posted = await say(world, number, command)
    return unescape_markdown(reply_to(world, number, posted))


async def bump_says(root: Path, service: str, env: str, image: str,
                    capsys: pytest.CaptureFixture[str], *, chart: bool = False
                    ) -> tuple[int, str, str]:
    """`bump --write` on ``root``: its exit code, stdout and stderr."""
    capsys.readouterr()
    code = await asyncio.to_thread(bump, str(root), service, env, image, write=True, chart=chart)
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


async def test_bump_and_the_bot_refuse_and_promote_an_image_alike(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = frontend_in_production()
    world = await make_world(files=files)
    try:
        for version in ("0.9.2", "1.2.0"):
            await world.emulator.publish_container("acme", "web", digest_of(f"web:{version}"),
                                                   [version], source_repo="acme/web",
                                                   emit=False)
        root = checkout(world, tmp_path / "deploy", files)

        # the tag policy (web admits semver:>=1.0.0)
        image = f"ghcr.io/acme/web:0.9.2@{digest_of('web:0.9.2')}"
        refused = "web 0.9.2 is not admitted in staging (tag policy `semver:>=1.0.0`)"
        assert refused in await bot_says(world, "/promote web 0.9.2 staging")
        assert await bump_says(root, "web", "staging", image, capsys) == (1, "", refused)

        # production's render runs ghcr.io/acme/web-frontend: the edit changes no workload
        image = f"ghcr.io/acme/web:1.2.0@{digest_of('web:1.2.0')}"
        reply = await bot_says(world, "/promote web 1.2.0 production")
        code, out, said = await bump_says(root, "web", "production", image, capsys)
        assert (code, out) == (1, "")
        assert said.startswith("the build of `apps/web/overlays/prod` runs the same images")
        assert said in reply, reply

        # admitted, and the render changes: both set the same text
        assert "opened #" in await bot_says(world, "/promote web 1.2.0 staging")
        assert world.pull("Promote web 1.2.0 to staging")["merged"]
        code, out, said = await bump_says(root, "web", "staging", image, capsys)
        assert (code, said) == (0, "")
        assert out.endswith(f"+    digest: {digest_of('web:1.2.0')}\n")
        assert (root / STAGING).read_text() == world.emulator.file(world.repo, STAGING)

        # asked again, both find it live
        live = f"web 1.2.0 is already live in staging (`{STAGING}`)"
        assert live in await bot_says(world, "/promote web 1.2.0 staging")
        assert await bump_says(root, "web", "staging", image, capsys) == (0, "", live)
    finally:
        await close_world(world)
    assert world.emulator.violations == []


UMBRELLA_POLICY = """version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web-chart:
    chart: ghcr.io/acme/charts/web
    source: acme/web
environments:
  - name: staging
    path: charts/storefront/Chart.yaml
    from: package
"""
UMBRELLA = ("apiVersion: v2\nname: storefront\nversion: 0.3.0\ndependencies:\n"
            "  - name: web\n    version: 1.4.1\n    repository: oci://ghcr.io/acme/charts\n")


async def test_bump_and_the_bot_refuse_a_stale_chart_lock_alike(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {".github/conveyor.yml": UMBRELLA_POLICY, "charts/storefront/Chart.yaml": UMBRELLA,
             "charts/storefront/Chart.lock": "dependencies:\n- name: web\n  version: 1.4.1\n"}
    world = await make_world(files=files)
    try:
        chart = build_chart("web", "1.4.2", source="https://github.com/acme/web")
        await world.emulator.publish_container("acme", "charts/web", chart.digest, ["1.4.2"],
                                               source_repo="acme/web", emit=False)
        root = checkout(world, tmp_path / "deploy", files)
        reply = await bot_says(world, "/promote web-chart 1.4.2 staging")
        code, out, said = await bump_says(
            root, "web-chart", "staging", f"ghcr.io/acme/charts/web:1.4.2@{chart.digest}",
            capsys, chart=True)
        assert (code, out) == (1, "")
        assert said.startswith("`charts/storefront/Chart.lock` records the dependency versions")
        assert said in reply, reply
        assert world.open_pulls() == []
        assert (root / "charts/storefront/Chart.yaml").read_text() == UMBRELLA
    finally:
        await close_world(world)
    assert world.emulator.violations == []


PINNED_BY_APPLICATION = """    helm:
      parameters:
        - name: image.tag
          value: "1.0.0"
"""


def as_clone(root: Path, full_name: str) -> Path:
    """``root`` as `git clone` leaves it: a repository whose `origin` is ``full_name``."""
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "init", "--quiet", "--initial-branch", "main"], check=True)
    subprocess.run([*git, "remote", "add", "origin", f"https://github.com/{full_name}.git"],
                   check=True)
    return root


async def test_bump_renders_a_chart_environment_as_its_application_says_like_the_bot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Staging's Application pins the chart's `image.tag` with a parameter: an edit of the
    values file changes no workload of staging's render. The bot renders staging as the
    Application says and refuses; `bump` in a clone of the repository reads the Application
    too and refuses alike. In a folder that does not say which repository it is, `bump` cannot
    tell the Application is this repository's, and says so."""
    files = layout("guestbook-helm")
    application = "argocd/guestbook-staging.yaml"
    files[application] = files[application].replace(
        "    path: helm-guestbook\n", "    path: helm-guestbook\n" + PINNED_BY_APPLICATION)
    world = await make_world(files=files, source_repos=("acme/guestbook",))
    try:
        digest = digest_of("guestbook:1.1.0")
        await world.emulator.publish_container("acme", "guestbook", digest, ["1.1.0"],
                                               source_repo="acme/guestbook", emit=False)
        image = f"ghcr.io/acme/guestbook:1.1.0@{digest}"
        reply = await bot_says(world, "/promote guestbook 1.1.0 staging")
        assert world.open_pulls() == []

        clone = as_clone(checkout(world, tmp_path / "clone", files), world.repo)
        code, out, said = await bump_says(clone, "guestbook", "staging", image, capsys)
        assert (code, out) == (1, "")
        assert said.startswith("the render of the chart `helm-guestbook` runs the same images")
        assert said in reply, reply

        folder = checkout(world, tmp_path / "folder", files)
        code, out, said = await bump_says(folder, "guestbook", "staging", image, capsys)
        assert code == 0 and "+  tag: " in out
        assert said == ("note: the Argo CD and Flux objects of the checkout, which may say "
                        "how a chart environment renders, are not read: it has no `origin` "
                        "remote naming its repository")
    finally:
        await close_world(world)
    assert world.emulator.violations == []
