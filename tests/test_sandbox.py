"""`python -m bot sandbox`: the story against the bundled emulator, demo and `--config`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from bot.sandbox.story import Options, run_sandbox

ROOT = Path(__file__).resolve().parent.parent

CUSTOM_POLICY = """\
version: 1
allowed_images: ["ghcr.io/example/"]
services:
  shop:
    image: ghcr.io/example/shop
    source: example/shop
    tags: "semver:^2.3"
environments:
  - name: dev
    path: envs/dev/{service}.yaml
    from: release
  - name: prod
    path: envs/prod/{service}.yaml
    after: dev
    promote: auto
    evidence: [merged]
    approvals: 2
    approvers: ["@example/ops", "zoe"]
    merge_method: merge
"""

HELM_VALUES = """\
# shop values
image:
  repository: ghcr.io/example/shop
  tag: "2.3.0"
replicas: 2
"""


async def play(tmp_path: Path, config: Path | None = None) -> tuple[int, str]:
    out = io.StringIO()
    status = await run_sandbox(Options(config=config, log_dir=tmp_path), out=out)
    return status, out.getvalue()


def numbered(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"\d+\. ", line)]


def write_config(root: Path, policy: str, files: dict[str, str]) -> Path:
    (root / ".github").mkdir(parents=True)
    config = root / ".github" / "conveyor.yml"
    config.write_text(policy, encoding="utf-8")
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return config


async def test_demo_story_plays_every_step(tmp_path: Path) -> None:
    started = time.monotonic()
    status, text = await play(tmp_path)
    assert status == 0, text
    assert time.monotonic() - started < 30
    expected = [
        "1. CI publishes ghcr.io/acme/web:1.1.0 (sha256:",
        '   Conveyor opened #1 "Promote web 1.1.0 to staging" and merged it (auto_merge)',
        '2. alice comments "/promote production" on #1',
        '   Conveyor opened #2 "Promote web 1.1.0 to production"; gate: failure — ',
        "3. Argo CD reports argocd/web-staging success on main@",
        "   gate: action_required — needs 1 more approval",
        "4. 30 minutes pass (the sandbox clock moves from 10:00 to 10:30 UTC",
        "5. bob (@acme/sre) approves #2",
        "   gate: success — all ",
        "6. bob merges #2",
        "   source deployment recorded in acme/web (production): commit ",
        '7. bob comments "/rollback web production" on #2',
        '"Roll back web in production to 1.0.0 (from 1.1.0)" (1.0.0 is sha256:',
        "8. CI publishes ghcr.io/acme/api:1.1.0 (group storefront: web, api)",
        '9. alice comments "/promote production storefront" on #2',
        '"Promote storefront to production (1 service)" (left out, already in production: '
        "web); gate: failure — api → production: no deployed evidence",
        "10. Argo CD reports argocd/api-staging failure on main@",
        '   Conveyor opened #7 "Roll back api in staging to 0.9.0 (from 1.1.0)" and merged it '
        "(auto_merge)",
        "   #6: gate: failure — api → production: sha256:",
        " was reported failing in staging at 2026-11-30T10:30:01Z",
        "11. CI pushes the Helm chart ghcr.io/acme/charts/web:1.1.0 (sha256:",
        '   Conveyor opened #8 "Promote web-chart 1.1.0 to staging" and merged it (auto_merge): '
        "clusters/staging/web-chart.yaml pins the chart by version and digest",
        'Dashboard: issue #3 "Conveyor dashboard" labelled conveyor-dashboard in acme/deploy',
        "   web-chart  1.1.0    0.9.0",
        "   production   1.1.0",
        "Story played in ",
        # every path at its floor (docs/performance.md): well inside GitHub's 80 writes a
        # minute, which the story, played in seconds, would otherwise wait for
        "65 of those requests were writes (POST, PATCH, PUT, DELETE): GitHub allows an "
        "installation 80 a minute and 500 an hour.",
    ]
    position = 0
    for fragment in expected:
        found = text.find(fragment, position)
        assert found >= 0, f"{fragment!r} not found in order in:\n{text}"
        position = found
    assert "gate: failure — web → production: no deployed evidence from staging" in text
    assert "soaking until 2026-11-30T10:30:00Z" in text
    assert "FAILED" not in text
    # the console stays readable: the bot's JSON logs go to a file, named at the end
    assert not [line for line in text.splitlines() if line.lstrip().startswith("{")]
    log = tmp_path / "conveyor.log"
    assert f"Conveyor's log: {log}" in text
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert records and all("message" in record for record in records)
    assert not [r for r in records if r["level"] in ("error", "critical")], records


async def test_a_promotion_left_open_says_why(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without Helm (a fresh one, as the quick start runs it): the chart's
    promotion into staging is not merged, and the story says what its gate found."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl on the PATH")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "kubectl").symlink_to(kubectl)
    monkeypatch.setenv("PATH", str(tools))
    status, text = await play(tmp_path)
    assert status == 0, text
    entered = next(line for line in text.splitlines() if line.startswith("   Conveyor opened #5"))
    assert entered == "   Conveyor opened #5 into staging"
    assert ("   #5 left open: gate: failure — production render: `charts/api` cannot be judged: "
            "`charts/api/values-staging.yaml` changes the chart, and chart rendering is off "
            "(no helm)") in text


async def test_custom_config_plays_what_applies(tmp_path: Path) -> None:
    config = write_config(tmp_path / "repo", CUSTOM_POLICY, {
        "envs/dev/shop.yaml": HELM_VALUES, "envs/prod/shop.yaml": HELM_VALUES})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    assert "example/deploy with " in text
    assert numbered(text) == [
        "1. CI publishes ghcr.io/example/shop:2.3.1 (sha256:"
        + numbered(text)[0].split("(sha256:", 1)[1],
        "2. bob merges #1",
        "3. #1 is merged; prod has `promote: auto`",
        "4. (skipped) Argo CD reports dev synced — prod asks for no `deployed` evidence",
        "5. (skipped) time passes — prod has no soak",
        "6. bob (@example/ops) approves #2",
        "7. dave (@example/ops) approves #2",
        "8. bob merges #2",
        '9. (skipped) bob comments "/rollback shop prod" — envs/prod/shop.yaml pinned no '
        "digest before this story, so there is nothing to roll back to",
        "10. (skipped) a deployment fails — no environment has on_failure",
    ]
    assert "and alice publishes release v2.3.1 in example/shop" in text
    assert "  running today: shop 2.3.0 in dev, 2.3.0 in prod" in text
    assert '   Conveyor opened #2 "Promote shop 2.3.1 to prod"; gate: action_required' in text
    assert "   gate: success" in text
    assert "source deployment recorded in example/shop (prod)" in text
    assert "   prod         2.3.1" in text



async def test_custom_config_rolls_back_to_what_ran_before(tmp_path: Path) -> None:
    running = "sha256:" + "1" * 64
    pinned = HELM_VALUES.replace('tag: "2.3.0"', f'tag: "2.3.1@{running}"')
    config = write_config(tmp_path / "repo", CUSTOM_POLICY, {
        "envs/dev/shop.yaml": HELM_VALUES, "envs/prod/shop.yaml": pinned})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    assert "  running in prod today: shop 2.3.1 (sha256:111111111111)" in text
    # a release newer than what runs anywhere
    assert "1. CI publishes ghcr.io/example/shop:2.3.2 (sha256:" in text
    assert '9. bob comments "/rollback shop prod" on #2' in text
    assert '"Roll back shop in prod to 2.3.1 (from 2.3.2)" (2.3.1 is sha256:111111111111)' \
        in text

async def test_custom_config_without_a_gated_environment(tmp_path: Path) -> None:
    policy = CUSTOM_POLICY.split("  - name: prod")[0].replace("from: release",
                                                              "from: any\n    auto_merge: true")
    config = write_config(tmp_path / "repo", policy, {"envs/dev/shop.yaml": HELM_VALUES})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    assert "merged it (auto_merge)" in text
    assert "the policy has no gated environment after dev: the story ends here" in text
    assert numbered(text)[1:] == ["2. (skipped) a deployment fails — no environment has "
                                  "on_failure"]


async def test_invalid_config_prints_file_line_errors(tmp_path: Path) -> None:
    broken = CUSTOM_POLICY.replace("    source: example/shop\n",
                                   "    source: example/shop\n    colour: blue\n")
    broken = broken.replace("    after: dev\n", "    after: nowhere\n")
    config = write_config(tmp_path / "repo", broken, {})
    status, text = await play(tmp_path, config)
    assert status == 1
    assert f"{config}:7:5: services.shop.colour: unknown key" in text
    assert re.search(rf"^{re.escape(str(config))}:\d+:\d+: environments\[1\]\.after: ",
                     text, re.M)
    assert "Conveyor sandbox" not in text  # nothing was started


async def test_a_step_that_does_not_happen_fails_the_run(tmp_path: Path) -> None:
    # the production file does not mention the image: Conveyor cannot promote into it
    config = write_config(tmp_path / "repo", CUSTOM_POLICY.replace("promote: auto",
                                                                   "promote: manual"), {
        "envs/dev/shop.yaml": HELM_VALUES, "envs/prod/shop.yaml": "replicas: 2\n"})
    status, text = await play(tmp_path, config)
    assert status == 1, text
    assert '3. alice comments "/promote prod" on #1' in text
    assert 'FAILED at step 3: Conveyor opened no "Promote shop 2.3.1 to prod" in ' \
        "example/deploy: Conveyor replied: " in text
    assert "Story stopped in " in text


async def test_image_on_another_registry_plays(tmp_path: Path) -> None:
    def elsewhere(text: str) -> str:
        return text.replace("ghcr.io/example/", "registry.example.com/example/")
    config = write_config(tmp_path / "repo", elsewhere(CUSTOM_POLICY), {
        "envs/dev/shop.yaml": elsewhere(HELM_VALUES),
        "envs/prod/shop.yaml": elsewhere(HELM_VALUES)})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    assert "1. CI publishes registry.example.com/example/shop:2.3.1 (sha256:" in text
    assert 'Conveyor opened #1 "Promote shop 2.3.1 to dev"' in text
    assert 'Conveyor opened #2 "Promote shop 2.3.1 to prod"' in text


def test_command_line_exits_zero_with_a_readable_console(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "bot", "sandbox", "--log-dir", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert "Story played in " in done.stdout
    assert not [line for line in done.stdout.splitlines() if line.startswith("{")]


def test_command_line_missing_config_file(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "bot", "sandbox", "--config", str(tmp_path / "nope.yml")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == f"{tmp_path / 'nope.yml'}: no such file"



async def test_keep_mode_serves_until_stopped(tmp_path: Path) -> None:
    # a tag policy that admits one version only: the example is the story's release again
    config = write_config(tmp_path / "repo", CUSTOM_POLICY.replace("semver:^2.3", "semver:2.3.1"),
                          {"envs/dev/shop.yaml": HELM_VALUES, "envs/prod/shop.yaml": HELM_VALUES})
    out = io.StringIO()
    stop = asyncio.Event()
    task = asyncio.create_task(run_sandbox(Options(config=config, keep=True, log_dir=tmp_path),
                                           out=out, stop=stop))
    for _ in range(600):
        if "python -m bot receive -e release" in out.getvalue() or task.done():
            break
        await asyncio.sleep(0.05)
    text = out.getvalue()
    assert "keep running (Ctrl-C stops them)" in text, text
    assert "(release v2.3.1 of example/shop again: Conveyor opens nothing new" in text
    payload = json.loads((tmp_path / "release.json").read_text(encoding="utf-8"))
    assert (payload["action"], payload["release"]["tag_name"]) == ("released", "v2.3.1")
    # every printed link opens a page: the pull request list, each PR, the dashboard
    links = re.findall(r"(http://127\.0\.0\.1:\d+/example/deploy/(?:pulls|pull/\d+|issues/\d+))",
                       text)
    assert len(links) >= 4, text
    async with aiohttp.ClientSession() as session:
        for link in links:
            async with session.get(link) as resp:
                assert resp.status == 200, link
                page = await resp.text()
                assert page.startswith("<!doctype html>"), page
        async with session.get(links[1]) as resp:
            assert "conveyor/promotion-gate" in await resp.text()
    assert not task.done()
    stop.set()
    assert await asyncio.wait_for(task, 30) == 0
    assert out.getvalue().endswith("sandbox stopped\n")


async def test_keep_prompt_acts_as_people(tmp_path: Path) -> None:
    running = "sha256:" + "1" * 64
    config = write_config(tmp_path / "repo", CUSTOM_POLICY, {
        "envs/dev/shop.yaml": HELM_VALUES,
        "envs/prod/shop.yaml": HELM_VALUES.replace('tag: "2.3.0"', f'tag: "2.3.1@{running}"')})
    lines = asyncio.StreamReader()
    out = io.StringIO()
    task = asyncio.create_task(run_sandbox(Options(config=config, keep=True, log_dir=tmp_path),
                                           out=out, stop=asyncio.Event(), commands=lines))
    for _ in range(600):
        if "Type `help`" in out.getvalue() or task.done():
            break
        await asyncio.sleep(0.05)
    assert "Type `help`" in out.getvalue(), out.getvalue()
    played = out.getvalue()
    assert '"Roll back shop in prod to 2.3.1 (from 2.3.2)"' in played  # #3, two approvals
    for line in ("comment 1 /promote prod", "approve 3 dave", "approve 3 frank", "merge 3",
                 "merge 1", "deploy nowhere", "wait 5m", "frobnicate", "prs", "quit"):
        lines.feed_data(f"{line}\n".encode())
    assert await asyncio.wait_for(task, 30) == 0
    said = out.getvalue()[len(played):]
    assert "  Conveyor replied: /promote prod" in said
    assert "  gate: action_required — needs 1 more approval from approvers (1 of 2)" in said
    assert "  gate: success" in said, said
    assert "  merged #3\n" in said
    assert "  ✗ the emulator refused it: 405 " in said  # #1 is merged already
    assert "  ✗ no environment nowhere; environments are: dev, prod" in said
    assert "  ✗ cannot do 'frobnicate'; `help` lists what can be done" in said
    assert re.search(r"  #3 Roll back shop in prod to 2\.3\.1 \(from 2\.3\.2\) \(merged\) "
                     r"http://127\.0\.0\.1:\d+/example/deploy/pull/3", said), said
    assert said.endswith("sandbox stopped\n")


async def test_freeze_window_is_waited_out_and_auto_merge_merges(tmp_path: Path) -> None:
    policy = CUSTOM_POLICY.replace("    promote: auto\n", "    promote: manual\n").replace(
        "    merge_method: merge\n",
        '    merge_method: merge\n    freeze: ["Mon 09:00 - Mon 12:00 UTC"]\n'
        "    auto_merge: true\n    soak: 1h\n    evidence: [merged, deployed]\n",
    ).replace("    evidence: [merged]\n", "")
    config = write_config(tmp_path / "repo", policy, {
        "envs/dev/shop.yaml": HELM_VALUES, "envs/prod/shop.yaml": HELM_VALUES})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    assert "4. Argo CD records a successful deployment to dev of main@" in text
    assert "5. 1 hour passes (the sandbox clock moves from 10:00 to 11:00 UTC" in text
    assert "   gate: in_progress — frozen until 2026-11-30T12:00:00Z" in text
    assert "8. frozen until 2026-11-30T12:00:00Z: time passes (the sandbox clock moves from " \
        "11:00 to 12:00 UTC)" in text
    assert "9. Conveyor merges #2 itself (prod has auto_merge)" in text
    assert "source deployment recorded in example/shop (prod)" in text


# -- the user's own repository ---------------------------------------------------------------------
LAYOUTS = ROOT / "tests" / "data" / "layouts"


async def test_eleven_services_in_one_kustomize_overlay(tmp_path: Path) -> None:
    config = LAYOUTS / "boutique-kustomize/.github/conveyor.yml"
    out = io.StringIO()
    status = await run_sandbox(Options(config=config, log_dir=tmp_path, service="cartservice",
                                       to="production"), out=out)
    text = out.getvalue()
    assert status == 0, text
    assert "  running in production today: cartservice 0.10.1 (sha256:222222222222)" in text
    assert '   Conveyor opened #1 "Promote cartservice 0.10.2 to dev" and merged it' in text
    assert "4. 1 hour passes (the sandbox clock moves from 10:00 to 11:00 UTC" in text
    assert "5. bob (@boutique/platform) approves #2" in text
    assert '"Roll back cartservice in production to 0.10.1 (from 0.10.2)"' in text
    # the dashboard: cartservice moved, the ten other services of the same file did not
    rows = dashboard_rows_of(text)
    assert rows["cartservice"]["production"][:2] == ["0.10.2", numbered_digest(text)]
    for service, digit in (("frontend", "1"), ("productcatalogservice", "3"),
                           ("loadgenerator", "b")):
        assert rows[service]["production"][:2] == ["0.10.1", "sha256:" + digit * 12]
        assert rows[service]["dev"][:2] == ["0.10.1", "—"]


def dashboard_rows_of(text: str) -> dict[str, dict[str, list[str]]]:
    """service → environment → the dashboard row's other cells, from the console."""
    rows: dict[str, dict[str, list[str]]] = {}
    current = ""
    for line in text.split("Dashboard: ", 1)[1].splitlines()[1:]:
        cells = line.split()
        if len(cells) == 1:
            current = cells[0]
            rows[current] = {}
        elif cells and cells[0] != "environment" and current:
            rows[current][cells[0]] = cells[1:]
    return rows


def numbered_digest(text: str) -> str:
    """The short digest of the story's release (step 1)."""
    return "sha256:" + text.split("\n1. CI publishes ", 1)[1].split("(sha256:", 1)[1][:12]


async def test_helm_chart_with_values_per_environment_and_flux(tmp_path: Path) -> None:
    config = LAYOUTS / "podinfo-helm/.github/conveyor.yml"
    status, text = await play(tmp_path, config)
    assert status == 0, text
    # staging pins 6.14.1 by tag: the release is newer than that
    assert "  running in production today: podinfo 6.14.0 (sha256:6e1a4f0c3b2d)" in text
    assert "1. CI publishes ghcr.io/podinfo-org/podinfo:6.14.2 (sha256:" in text
    assert "3. Flux reports kustomization/podinfo-staging/3f9c2a1b success on main@" in text
    assert "Argo CD" not in text
    assert '"Roll back podinfo in production to 6.14.0 (from 6.14.2)"' in text
    assert "FAILED" not in text


async def test_plain_manifests_through_two_gates_to_production(tmp_path: Path) -> None:
    config = LAYOUTS / "plain-manifests/.github/conveyor.yml"
    out = io.StringIO()
    status = await run_sandbox(Options(config=config, log_dir=tmp_path, to="production",
                                       service="billing"), out=out)
    text = out.getvalue()
    assert status == 0, text
    assert "  services: orders, billing (played)" in text
    assert "  running today: billing 0.8.3 in dev, 0.8.3 in staging, 0.8.2 in production" in text
    assert numbered(text)[1:] == [
        "2. #1 is merged; staging has `promote: auto`",
        "3. (skipped) Argo CD reports dev synced — staging asks for no `deployed` evidence",
        "4. (skipped) time passes — staging has no soak",
        "5. (skipped) an approver reviews — staging needs no approvals",
        "6. Conveyor merges #2 itself (staging has auto_merge)",
        '7. alice comments "/promote production" on #2',
        "8. Argo CD records a successful deployment to staging of main@"
        + numbered(text)[7].rsplit("@", 1)[1],
        "9. 2 hours pass (the sandbox clock moves from 10:00 to 12:00 UTC; 3 timer(s) of "
        "Conveyor fire)",
        "10. bob (@northwind/sre) approves #3",
        "11. dave (@northwind/sre) approves #3",
        "12. frozen until 2026-11-30T13:00:00Z: time passes (the sandbox clock moves from 12:00 "
        "to 13:00 UTC)",
        "13. bob merges #3",
        '14. (skipped) bob comments "/rollback billing production" — '
        "manifests/production/billing.yaml pinned no digest before this story, so there is "
        "nothing to roll back to",
        "15. (skipped) a deployment fails — no environment has on_failure",
    ]
    assert "1. CI publishes ghcr.io/northwind/billing:0.8.4 (sha256:" in text
    assert "   gate: action_required — needs 1 more approval from approvers (1 of 2)" in text
    assert "source deployment recorded in northwind/billing (production)" in text


async def test_images_on_docker_hub_play_through_the_registry(tmp_path: Path) -> None:
    # the same layout with its images on Docker Hub, by full and by short name: no
    # registry_package event exists there, the release alone leads Conveyor to the image
    repo = tmp_path / "repo"
    for source in (LAYOUTS / "plain-manifests").rglob("*.y*ml"):
        target = repo / source.relative_to(LAYOUTS / "plain-manifests")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        target.write_text(text.replace("ghcr.io/northwind/billing", "northwind/billing")
                          .replace("ghcr.io/northwind/", "docker.io/northwind/"),
                          encoding="utf-8")
    out = io.StringIO()
    status = await run_sandbox(Options(config=repo / ".github" / "conveyor.yml",
                                       log_dir=tmp_path, to="production",
                                       service="billing"), out=out)
    text = out.getvalue()
    assert status == 0, text
    assert "1. CI publishes northwind/billing:0.8.4 (sha256:" in text
    assert "13. bob merges #3" in text
    assert "source deployment recorded in northwind/billing (production)" in text


async def test_unknown_service_or_environment(tmp_path: Path) -> None:
    config = LAYOUTS / "plain-manifests/.github/conveyor.yml"
    out = io.StringIO()
    assert await run_sandbox(Options(config=config, log_dir=tmp_path, service="web"),
                             out=out) == 1
    assert out.getvalue() == (f"{config}: --service web: no such service; services are: "
                              "orders, billing\n")
    out = io.StringIO()
    assert await run_sandbox(Options(log_dir=tmp_path, to="prod"), out=out) == 1
    assert out.getvalue() == ("the demo policy: --to prod: no such environment; environments "
                              "are: staging, production\n")


async def test_a_refusal_is_explained_on_the_console(tmp_path: Path) -> None:
    # the entry file does not mention the image: Conveyor refuses and says so on the source
    config = write_config(tmp_path / "repo", CUSTOM_POLICY, {
        "envs/dev/shop.yaml": "replicas: 2\n", "envs/prod/shop.yaml": HELM_VALUES})
    status, text = await play(tmp_path, config)
    assert status == 1
    failure = next(line for line in text.splitlines() if line.startswith("FAILED at step 1: "))
    assert failure.startswith('FAILED at step 1: Conveyor opened no "Promote shop 2.3.1 to '
                              'dev" in example/deploy: Conveyor refused it (conveyor/promotion '
                              "(dev): "), failure
    assert "ghcr.io/example/shop" in failure


async def test_a_downstream_skip_is_explained_from_the_log(tmp_path: Path) -> None:
    # prod runs 3.0.0 already; every release the tag policy admits is older
    config = write_config(tmp_path / "repo", CUSTOM_POLICY, {
        "envs/dev/shop.yaml": HELM_VALUES,
        "envs/prod/shop.yaml": HELM_VALUES.replace('"2.3.0"', '"3.0.0"')})
    status, text = await play(tmp_path, config)
    assert status == 1
    assert "3. #1 is merged; prod has `promote: auto`" in text
    assert "1. CI publishes ghcr.io/example/shop:2.3.1 (sha256:" in text  # newer than dev's
    assert "example/deploy: Conveyor logged: shop 3.0.0 is live in prod, newer than 2.3.1; " \
        "use /rollback to go back" in text


async def test_only_the_files_the_policy_names_are_read(tmp_path: Path) -> None:
    config = write_config(tmp_path / "repo", CUSTOM_POLICY, {
        "envs/dev/shop.yaml": HELM_VALUES, "envs/prod/shop.yaml": HELM_VALUES})
    unrelated = tmp_path / "repo" / "other" / "notes.yaml"
    unrelated.parent.mkdir()
    unrelated.write_bytes("# caf\u00e9\n".encode("latin-1"))
    status, text = await play(tmp_path, config)
    assert status == 0, text
    (tmp_path / "repo" / "envs/dev/shop.yaml").write_bytes(
        HELM_VALUES.encode() + "# caf\u00e9\n".encode("latin-1"))
    status, text = await play(tmp_path, config)
    assert status == 1
    assert text == (f"{(tmp_path / 'repo' / 'envs/dev/shop.yaml').resolve()}:6: not valid UTF-8 "
                    "(byte 0xe9 at line 6, column 6); Conveyor edits UTF-8 files only\n")


def test_a_run_leaves_no_temporary_folder(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "bot", "sandbox"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Conveyor's log goes with the run's temporary folder (--log-dir DIR keeps it)." \
        in done.stdout
    assert list(tmp_path.iterdir()) == []


FAN_IN_POLICY = """\
version: 1
allowed_images: ["ghcr.io/example/"]
services:
  shop:
    image: ghcr.io/example/shop
    source: example/shop
    tags: "semver:^2.3"
environments:
  - name: dev-eu
    path: envs/dev-eu/{service}.yaml
    from: release
  - name: dev-us
    path: envs/dev-us/{service}.yaml
    from: release
  - name: prod
    path: envs/prod/{service}.yaml
    after: [dev-eu, dev-us]
    promote: auto
    evidence: [merged, deployed]
"""


async def test_a_fan_in_config_plays_through_both_upstreams(tmp_path: Path) -> None:
    config = write_config(tmp_path / "repo", FAN_IN_POLICY, {
        f"envs/{env}/shop.yaml": HELM_VALUES for env in ("dev-eu", "dev-us", "prod")})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    steps = numbered(text)
    assert steps[1:6] == [
        "2. bob merges #1",
        "3. bob merges #2",
        "4. #2 is merged; prod has `promote: auto`",
        "5. Argo CD records a successful deployment to dev-eu of main@"
        + steps[4].rsplit("@", 1)[1],
        "6. Argo CD records a successful deployment to dev-us of main@"
        + steps[5].rsplit("@", 1)[1],
    ]
    assert '   Conveyor opened #3 "Promote shop 2.3.1 to prod"; gate: failure' in text
    assert "   gate: failure — shop → prod: no deployed evidence from dev-us for " in text
    assert "  dev-eu: entry (from release events) — envs/dev-eu/shop.yaml" in text
    assert "  dev-us: entry (from release events) — envs/dev-us/shop.yaml" in text
    assert "  prod: gated (after dev-eu and dev-us; promote auto;" in text
    assert "   prod         2.3.1" in text


CHART_POLICY = """\
version: 1
allowed_images: ["ghcr.io/example/"]
services:
  shop-chart:
    chart: ghcr.io/example/charts/shop
    source: example/shop
    tags: "semver:^2.3"
environments:
  - name: dev
    path: envs/dev/{service}.yaml
    from: release
  - name: prod
    path: envs/prod/helmfile.yaml
    after: dev
    promote: auto
    evidence: [merged]
"""

HELMFILE = """\
releases:
  - name: shop
    chart: oci://ghcr.io/example/charts/shop
    version: 2.3.0
"""


async def test_a_chart_service_plays_through_to_production(tmp_path: Path) -> None:
    config = write_config(tmp_path / "repo", CHART_POLICY, {
        "envs/dev/shop-chart.yaml": HELMFILE, "envs/prod/helmfile.yaml": HELMFILE})
    status, text = await play(tmp_path, config)
    assert status == 0, text
    assert numbered(text)[0].startswith("1. CI publishes ghcr.io/example/charts/shop:2.3.1 (")
    assert '   Conveyor opened #2 "Promote shop-chart 2.3.1 to prod"; gate: success' in text
    assert "   prod         2.3.1" in text
