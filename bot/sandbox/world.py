"""The world the story plays in: its people, organisations and repositories, and the images
that run today, published on the emulator before the story starts."""

from __future__ import annotations

import contextlib

from bot.names import GATE_CHECK
from bot.sandbox.demo import artifact_digest, seed
from bot.sandbox.plan import Plan, pinned
from bot.sandbox.runner import Sandbox
from bot.sandbox.stack import SandboxError, image_parts
from conveyor_emulator.registry.images import image_for

PEOPLE = {"alice": "Alice Dev", "bob": "Bob SRE", "carol": "Carol Reader", "dave": "Dave SRE",
          "erin": "Erin Dev", "frank": "Frank SRE"}


def registry_hosts(plan: Plan) -> set[str]:
    """Every registry the policy's images live on: the emulator serves them all."""
    hosts = set()
    for service in plan.policy.services.values():
        with contextlib.suppress(SandboxError):
            hosts.add(image_parts(service.image)[0])
    return hosts


def reporters(plan: Plan) -> list[str]:
    """Who reports deployments in the story: the policy's `deployed_by`, else Argo CD."""
    return [login for env in plan.chain for login in env.deployed_by] or ["argocd[bot]"]


async def seed_world(sandbox: Sandbox, plan: Plan) -> None:
    emulator = sandbox.emulator
    _registry, image_owner, package = image_parts(plan.service.image)
    if plan.demo:
        seed(emulator, plan.files)
    else:
        deploy_owner = plan.deploy_repo.split("/", 1)[0]
        source_owner = plan.service.source.split("/", 1)[0]
        orgs = {deploy_owner, source_owner, image_owner,
                *(team.split("/", 1)[0] for team in plan.teams)}
        for org in sorted(orgs):
            emulator.add_org(org)
        for login, name in PEOPLE.items():
            emulator.add_user(login, name=name)
        for login in sorted(plan.cast.logins()):
            if emulator.account(login) is None:
                emulator.add_user(login)
        emulator.add_user("github-actions[bot]", type="Bot")
        for login in {"argocd[bot]", *reporters(plan)}:
            if emulator.account(login) is None:
                emulator.add_user(login, type="Bot" if login.endswith("[bot]") else "User")
        for team, members in plan.teams.items():
            org, slug = team.split("/", 1)
            emulator.add_team(org, slug, list(members))
        emulator.add_repo(plan.service.source, files={
            "README.md": f"# {plan.service.source}\n", "Dockerfile": "FROM scratch\n"})
        emulator.add_repo(plan.deploy_repo, files=dict(plan.files))
        writers = ({*PEOPLE, *plan.cast.logins(), *reporters(plan)} - {"carol"})
        for repo in (plan.deploy_repo, plan.service.source):
            for login in sorted(writers):
                emulator.set_permission(repo, login, "write")
            emulator.set_permission(repo, "carol", "read")
        by_owner: dict[str, list[str]] = {}
        for repo in (plan.deploy_repo, plan.service.source):
            by_owner.setdefault(repo.split("/", 1)[0], []).append(repo)
        for owner, repos in by_owner.items():
            emulator.install(owner, repos)
    # the recommended setup: the default branch requires the gate from Conveyor's app (a
    # ruleset), so the story's dashboard and gates have no warning to give
    emulator.add_ruleset(plan.deploy_repo, [(GATE_CHECK, emulator.world.app_id)])
    source = plan.service.source
    # what runs today was released from the source's first commit, long ago: each version the
    # files pin is a published image (and a git tag), so that Conveyor can look it up
    first = emulator.commit(source, emulator.world.repo_by_name(source).default_branch)
    running: dict[str, str] = {}
    if plan.previous is not None:
        running[plan.previous[0]] = plan.previous[1]
    for env in plan.policy.environments:
        found = pinned(plan.files, plan.path(env), plan.service.image,
                       plan.service.tag_key)
        if found is not None:
            tag, digest = found
            running.setdefault(tag, digest or artifact_digest(plan.service, tag))
    for version, digest in sorted(running.items()):
        if version:
            git_tag = version if version.startswith("v") else f"v{version}"
            await emulator.create_tag(source, git_tag, first["sha"], user="alice")
        if image_for(digest) is not None:
            # a digest pinned in one's own manifests names no content the sandbox has: the
            # registry rightly knows nothing about it
            await emulator.publish_container(image_owner, package, digest,
                                             [version] if version else [], source_repo=source,
                                             revision=first["sha"], emit=False)
    # the change this story releases
    await emulator.push_files(source, {"CHANGELOG.md": f"## {plan.version}\n\n- Faster checkout\n"},
                              message="Faster checkout (#12)", author="alice")
    await sandbox.settle()
