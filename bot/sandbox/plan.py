"""What the sandbox story plays, read from a policy and the files it names.

One service (the first, or `--service`), released into the entry environment its target
environment descends from, then promoted through every gated environment on the way to the
target (the first gated environment after the entry, or `--to`). The release is a version
newer than every version the service's files pin today, admitted by every tag policy on the
way; what the target environment pins today (by digest) is what the story rolls back to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import nodesemver

from bot.cli.localrepo import chart_files, read_policy_files, repository_root
from bot.domain.durations import format_duration
from bot.domain.policy import Environment, Policy, Service, check_config_file, load_policy
from bot.domain.tags import TagPolicy, compare_versions, sort_key, version_from_tag
from bot.manifests import ManifestError, find_images
from bot.names import POLICY_PATH
from bot.sandbox.demo import DEMO_FILES, DEPLOY_REPO, artifact_digest, digest_of

REQUESTERS = ("alice", "erin", "grace")  # write access; carol only reads
TEAM_MEMBERS = ("bob", "dave", "frank")
VERSION_GUESSES = ("1.0.0", "1.1.0", "1.4.2", "1.5.0", "2.0.0", "0.2.0", "3.0.0")
PREVIOUS_VERSION = "1.0.0"


class PlanError(Exception):
    """The policy cannot be played as asked; the message is one line for the console."""


@dataclass(frozen=True)
class Cast:
    requester: str  # asks for the promotion with /promote
    # environment → (login, why they count: "@acme/sre", "listed approver", "write access")
    approvers: Mapping[str, tuple[tuple[str, str], ...]]
    merger: str  # merges the gated PRs and asks for the rollback

    def logins(self) -> set[str]:
        return {self.requester, self.merger,
                *(login for people in self.approvers.values() for login, _ in people)}


@dataclass(frozen=True)
class Plan:
    deploy_repo: str
    files: Mapping[str, str]
    policy: Policy
    service: Service
    entry: Environment
    # the gated environments from the entries to the target, each after all its upstreams
    chain: tuple[Environment, ...]
    tag: str  # the git tag of the release
    version: str
    next_tag: str | None  # a later release, for the `--keep` receive example
    cast: Cast
    previous: tuple[str, str] | None  # (version, digest) pinned in the target before
    live: Mapping[str, str]  # environment → the version its file pins today
    teams: Mapping[str, tuple[str, ...]]  # "org/slug" → members
    demo: bool
    # every entry environment the target descends from (a fan-in may start in several)
    entries: tuple[Environment, ...] = ()

    @property
    def digest(self) -> str:
        return artifact_digest(self.service, self.version)

    @property
    def target(self) -> Environment:
        return self.chain[-1] if self.chain else self.entry

    def path(self, env: Environment | str) -> str:
        return self.policy.path_for(self.service.name, env if isinstance(env, str) else env.name)


def _admitted(policies: Sequence[TagPolicy], tag: str) -> bool:
    return all(policy.admits(tag) for policy in policies)


def _semver_guesses(policies: Sequence[TagPolicy], newest_live: str | None) -> list[str]:
    guesses = list(VERSION_GUESSES)
    live_key = sort_key(newest_live) if newest_live else None
    if live_key is not None:
        major, minor, patch = live_key[:3]
        guesses = [f"{major}.{minor}.{patch + 1}", f"{major}.{minor + 1}.0",
                   f"{major + 1}.0.0", *guesses]
    for policy in policies:
        if policy.kind != "semver":
            continue
        for comparators in nodesemver.make_range(policy.pattern, False).set:
            for comparator in comparators:
                if comparator.semver is nodesemver.ANY:
                    continue
                semver = comparator.semver
                guesses += [f"{semver.major}.{semver.minor}.{semver.patch}",
                            f"{semver.major}.{semver.minor}.{semver.patch + 1}",
                            f"{semver.major}.{semver.minor + 1}.0"]
    return guesses


def choose_tags(policy: Policy, service: Service, entry: Environment,
                chain: Sequence[Environment], newest_live: str | None = None) -> list[str]:
    """Release tags the story may use, one per version, best first: admitted into every
    environment on the way (else into the entry one), newer than `newest_live` when it can
    be, and then a newer one for the `--keep` example."""
    into_entry = policy.tag_policy_for(service.name, entry.name)
    everywhere = list(into_entry)
    for env in chain:
        everywhere += policy.tag_policy_for(service.name, env.name)[1:]
    chosen: list[str] = []
    for policies in (everywhere, into_entry):
        for version in dict.fromkeys(_semver_guesses(everywhere, newest_live)):
            tag = next((t for t in (f"v{version}", version, f"{service.name}-v{version}")
                        if _admitted(policies, t)), None)
            if tag is not None:
                chosen.append(tag)
        if chosen:
            break
    if newest_live is not None:
        chosen = [tag for tag in chosen
                  if version_from_tag(tag) != version_from_tag(newest_live)]
        newer = [tag for tag in chosen if (compare_versions(tag, newest_live) or 0) > 0]
        chosen = sorted(newer, key=lambda tag: sort_key(tag) or (0, 0, 0, (0,))) or chosen
    if chosen:  # a later release (for `--keep`) comes after the story's own
        first, rest = chosen[0], chosen[1:]
        later = [tag for tag in rest if (compare_versions(tag, first) or 0) > 0]
        chosen = [first, *later, *(tag for tag in rest if tag not in later)]
    return chosen


def pinned(files: Mapping[str, str], path: str, image: str,
           tag_key: str | None = None) -> tuple[str, str | None] | None:
    """(tag, digest) of the image in the file: the first digest pin, else the first tag."""
    text = files.get(path)
    if text is None:
        return None
    try:
        found = find_images(text, image, path=path, tag_key=tag_key)
    except ManifestError:
        return None
    for occurrence in found:
        if occurrence.digest:
            return occurrence.tag or "", occurrence.digest
    tagged = next((occurrence.tag for occurrence in found if occurrence.tag), None)
    return (tagged, None) if tagged else None


def live_versions(policy: Policy, service: Service, files: Mapping[str, str]) -> dict[str, str]:
    """Environment → the version of the service its file pins today (tag or digest pin)."""
    live: dict[str, str] = {}
    for env in policy.environments:
        found = pinned(files, policy.path_for(service.name, env), service.image,
                       service.tag_key)
        if found is not None and found[0]:
            live[env] = version_from_tag(found[0])
    return live


def newest(versions: Sequence[str]) -> str | None:
    best: str | None = None
    for version in versions:
        if best is None or (compare_versions(version, best) or 0) > 0:
            best = version
    return best


def route(policy: Policy, to: str | None
          ) -> tuple[tuple[Environment, ...], tuple[Environment, ...]]:
    """(the entry environments `to` descends from, the gated environments on every way from
    them to `to`, each after all its upstreams, `to` last)."""
    envs = policy.environments
    if to is None:
        entry = next((env for env in envs.values() if not env.gated), None)
        if entry is None:
            raise PlanError("no entry environment (one without `after:`)")
        first = next(iter(policy.downstream_of(entry.name)), None)
        if first is None:
            return (entry,), ()
        to = first.name
    if to not in envs:
        raise PlanError(f"--to {to}: no such environment; environments are: "
                        f"{', '.join(envs)}")
    wanted = {*policy.ancestors(to), to}
    on_the_way = [env for env in envs.values() if env.name in wanted]
    entries = tuple(env for env in on_the_way if not env.gated)
    placed: list[Environment] = []
    waiting = [env for env in on_the_way if env.gated]
    while waiting:  # the graph is acyclic: each round places at least one environment
        ready = [env for env in waiting
                 if all(up in {e.name for e in entries} | {p.name for p in placed}
                        for up in env.after)]
        placed += ready
        waiting = [env for env in waiting if env not in ready]
    return entries, tuple(placed)


def cast_for(chain: Sequence[Environment], teams: Mapping[str, tuple[str, ...]]) -> Cast:
    """Who plays: a requester who is no approver anywhere (their approval would not count),
    the approvers each environment names (team members are seeded), one of them to merge."""
    listed = {a.lower() for env in chain for a in env.approvers if not a.startswith("@")}
    requester = next((name for name in REQUESTERS if name not in listed), "sandbox-requester")
    approvers: dict[str, tuple[tuple[str, str], ...]] = {}
    for env in chain:
        people: dict[str, str] = {}
        for entry in env.approvers:
            if entry.startswith("@"):
                for member in teams[entry[1:].lower()]:
                    people.setdefault(member, entry)
            else:
                people.setdefault(entry, "listed approver")
        if not env.approvers:
            people = {member: "write access" for member in TEAM_MEMBERS}
        approvers[env.name] = tuple(people.items())
    target = approvers.get(chain[-1].name, ()) if chain else ()
    merger = target[0][0] if target else "bob"
    return Cast(requester, approvers, merger)


def _pin_previous(text: str, image: str, version: str, digest: str) -> str:
    """The demo's Kustomize overlay with the version that runs today, pinned by digest."""
    old = f'  - name: {image}\n    newTag: "0.9.0"  # promoted by Conveyor\n'
    new = (f'  - name: {image}\n    newTag: "{version}"  # promoted by Conveyor\n'
           f"    digest: {digest}\n")
    return text.replace(old, new)


def make_plan(policy: Policy, files: Mapping[str, str], *, deploy_repo: str, demo: bool,
              service_name: str | None = None, to: str | None = None,
              teams: Mapping[str, tuple[str, ...]] | None = None,
              tag: str | None = None, next_tag: str | None = None) -> Plan:
    if not policy.services:
        raise PlanError("the policy has no services")
    if service_name is not None and service_name not in policy.services:
        raise PlanError(f"--service {service_name}: no such service; services are: "
                        f"{', '.join(policy.services)}")
    service = policy.services[service_name or next(iter(policy.services))]
    entries, chain = route(policy, to)
    entry, on_the_way = entries[0], (*entries[1:], *chain)
    if teams is None:
        teams = {approver[1:].lower(): TEAM_MEMBERS for env in policy.environments.values()
                 for approver in env.approvers if approver.startswith("@")}
    live = live_versions(policy, service, files)
    found = pinned(files, policy.path_for(service.name, chain[-1].name), service.image,
                   service.tag_key) if chain else None
    previous = (found[0], found[1]) if found is not None and found[1] is not None else None
    running = newest(list(live.values()))
    tags = [tag] if tag is not None else choose_tags(policy, service, entry, on_the_way, running)
    if tag is None and tags and running is not None and entry.name in live \
            and (compare_versions(tags[0], running) or 0) <= 0:
        # nothing admitted is newer than everything: newer than the entry's at least
        tags = choose_tags(policy, service, entry, on_the_way, live[entry.name]) or tags
    if not tags:
        newer = ""
        if running is not None:
            where = ", ".join(env for env, version in live.items() if version == running)
            newer = f", newer than {running} (running in {where})"
        raise PlanError(f"the sandbox found no release tag that service {service.name}'s tag "
                        f"policy `{service.tags}` admits into {entry.name}{newer}")
    later = [next_tag] if next_tag is not None else choose_tags(
        policy, service, entry, on_the_way, version_from_tag(tags[0]))
    return Plan(deploy_repo, files, policy, service, entry, chain, tags[0],
                version_from_tag(tags[0]), later[0] if later else None, cast_for(chain, teams),
                previous, live, teams, demo, entries)


# The sandbox's staging watches its own Argo CD reports and rolls back a failing deployment.
DEMO_WATCH = ("    auto_merge: true\n    on_failure: rollback\n"
              "    deployed_context: argocd/{service}-{env}\n"
              '    deployed_by: ["argocd[bot]"]\n')


# The sandbox's demo also ships web as a Helm chart, pinned by Flux OCIRepositories; the story
# promotes it into staging once CI pushes it.
DEMO_CHART = """  web-chart:
    chart: ghcr.io/acme/charts/web
    source: acme/web
    paths:
      staging: clusters/staging/web-chart.yaml
      production: clusters/production/web-chart.yaml
"""
CHART_SOURCE = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web-chart
  namespace: flux-system
spec:
  interval: 5m
  url: oci://ghcr.io/acme/charts/web
  ref:
    tag: 0.9.0  # promoted by Conveyor
    digest: {digest}
"""


def plan_demo(service_name: str | None = None, to: str | None = None) -> Plan:
    files = dict(DEMO_FILES)
    files[POLICY_PATH] = files[POLICY_PATH].replace("    auto_merge: true\n", DEMO_WATCH, 1)
    files[POLICY_PATH] = files[POLICY_PATH].replace("environments:\n", DEMO_CHART
                                                    + "environments:\n", 1)
    policy = load_policy(files[POLICY_PATH])
    web = policy.services["web"]
    running = digest_of(f"{web.image}:{PREVIOUS_VERSION}")
    for env in policy.environments:
        path = policy.path_for("web", env)
        files[path] = _pin_previous(files[path], web.image, PREVIOUS_VERSION, running)
    # api's staging runs 0.9.0 by digest: the failing deployment of the story rolls back to it
    api_staging = policy.path_for("api", "staging")
    api_running = digest_of(f"{policy.services['api'].image}:0.9.0")
    files[api_staging] = files[api_staging].replace('tag: "0.9.0"', f'tag: "0.9.0@{api_running}"')
    chart_running = artifact_digest(policy.services["web-chart"], "0.9.0")
    for env in policy.environments:
        files[policy.path_for("web-chart", env)] = CHART_SOURCE.format(digest=chart_running)
    # web: 1.1.0 in the story; the story's train brings 1.1.1, so the `--keep` example is 1.2.0
    web_played = (service_name or "web") == "web"
    return make_plan(policy, files, deploy_repo=DEPLOY_REPO, demo=True,
                     service_name=service_name, to=to, teams={"acme/sre": ("bob", "dave")},
                     tag="v1.1.0" if web_played else None,
                     next_tag="v1.2.0" if web_played else None)


@dataclass(frozen=True)
class Unplayable:
    """Why `--config` cannot be played: lines to print (file:line errors or one reason)."""

    lines: tuple[str, ...]


def plan_from_config(config: Path, service_name: str | None = None,
                     to: str | None = None) -> Plan | Unplayable:
    policy, issues = check_config_file(str(config))
    if policy is None or issues:
        return Unplayable((*map(str, issues),
                           f"{config}: {len(issues)} error(s); fix them and run the sandbox "
                           "again"))
    root = repository_root(config)
    found = read_policy_files(root, policy)
    if found.unreadable:
        first = found.unreadable[0]
        return Unplayable((f"{root / first.path}:{first.line}: {first.message}",))
    # the charts the files lie in are rendered in the sandbox as on GitHub
    files = {**chart_files(root, policy), POLICY_PATH: config.read_text(encoding="utf-8"),
             **found.texts}
    first_service = service_name or next(iter(policy.services), "")
    source = policy.services[first_service].source if first_service in policy.services else ""
    owner = source.split("/", 1)[0] or "acme"
    deploy_repo = f"{owner}/deploy" if source.lower() != f"{owner}/deploy".lower() \
        else f"{owner}/deploy-config"
    try:
        return make_plan(policy, files, deploy_repo=deploy_repo, demo=False,
                         service_name=service_name, to=to)
    except PlanError as exc:
        return Unplayable((f"{config}: {exc}",))


def describe_policy(plan: Plan) -> list[str]:
    services = [f"{name}{' (played)' if name == plan.service.name else ''}"
                for name in plan.policy.services]
    lines = [f"services: {', '.join(services)}",
             f"service {plan.service.name}: {plan.service.image} from {plan.service.source}, "
             f"tags `{plan.service.tags}`" + (
                 f", attestations signed by {plan.service.signer_workflow}"
                 if plan.service.signer_workflow else "")]
    for entry in plan.entries or (plan.entry,):
        watch = (f", on_failure {entry.on_failure} within {format_duration(entry.watch)}"
                 if entry.on_failure else "")
        lines.append(f"{entry.name}: entry ({'from ' + (entry.entry_from or 'any')} events"
                     f"{', auto-merge' if entry.auto_merge else ''}{watch}) — "
                     f"{plan.path(entry)}")
    for gated in plan.chain:
        facts = [f"after {gated.upstreams}", f"promote {gated.promote}",
                 f"evidence {', '.join(gated.evidence) or 'none'}",
                 f"soak {format_duration(gated.soak)}"]
        if gated.approvals:
            plural = "s" if gated.approvals != 1 else ""
            facts.append(f"{gated.approvals} approval{plural} by "
                         f"{', '.join(gated.approvers) or 'anyone with write access'}")
        if gated.deployed_context:
            facts.append(f"deployed_context {gated.deployed_context}")
        if gated.freeze:
            facts.append(f"{len(gated.freeze)} freeze window(s)")
        if gated.auto_merge:
            facts.append("auto-merge")
        if gated.require_attestation:
            facts.append("a verified attestation")
        if gated.on_failure:
            facts.append(f"on_failure {gated.on_failure} within {format_duration(gated.watch)}")
        lines.append(f"{gated.name}: gated ({'; '.join(facts)}) — {plan.path(gated)}")
    return lines
