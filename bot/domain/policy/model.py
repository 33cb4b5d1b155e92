"""The validated policy that the rest of the bot codes against."""

from __future__ import annotations

import copyreg
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType

from bot.domain.attestation import SignerWorkflow
from bot.domain.freeze import FreezeWindow
from bot.domain.policy.issues import PolicyIssue
from bot.domain.policy.kubernetes import latest_kubernetes_version
from bot.domain.policy.syntax import fill_template
from bot.domain.tags import TagPolicy
from bot.text import join_names

ENTRY_EVENT_KINDS = ("release", "package")


def _walk(start: str, step: Callable[[str], Sequence[str]]) -> tuple[str, ...]:
    """Breadth-first from ``start`` (excluded), each name once."""
    found: list[str] = []
    frontier = [start]
    while frontier:
        following = [name for current in frontier for name in step(current)
                     if name != start and name not in found]
        following = list(dict.fromkeys(following))
        found.extend(following)
        frontier = following
    return tuple(found)

# A policy crosses to the worker process of `bot/runtime/offload.py` and back (a large policy loaded
# there, a large file checked against it): its read-only mappings pickle as the dicts they wrap.
def _read_only(items: dict[object, object]) -> MappingProxyType[object, object]:
    return MappingProxyType(items)


copyreg.pickle(MappingProxyType, lambda proxy: (_read_only, (dict(proxy),)))


@dataclass(frozen=True)
class Service:
    name: str
    image: str
    source: str
    tags: TagPolicy
    paths: Mapping[str, str]  # per-environment overrides of the environment's path template
    line: int
    tag_key: str | None = None  # the Helm values key the chart reads the tag from, if not `tag`
    # what the OCI repository `image` holds: "image" (a container image) or "chart" (Helm)
    kind: str = "image"
    # the workflow whose certificate must sign the service's attestations; None: any of source
    signer_workflow: SignerWorkflow | None = None

    @property
    def is_chart(self) -> bool:
        return self.kind == "chart"


@dataclass(frozen=True)
class Environment:
    name: str
    path: str
    entry_from: str | None  # "release" | "package" | "any" for entry environments
    after: tuple[str, ...]  # the upstream environments (several: a fan-in); empty: an entry
    promote: str
    evidence: tuple[str, ...]
    soak: timedelta
    tags: TagPolicy | None
    approvals: int
    approvers: tuple[str, ...]
    allow_self_approval: bool
    deployed_context: str | None
    freeze: tuple[FreezeWindow, ...]
    merge_method: str
    auto_merge: bool
    require_attestation: bool
    line: int
    # logins whose deployment reports count (apps as "<slug>[bot]"); empty: anyone but Conveyor
    deployed_by: tuple[str, ...] = ()
    # what a trusted failure report within `watch` of a merge does: "rollback", "hold" or None
    on_failure: str | None = None
    watch: timedelta = timedelta(hours=1)

    @property
    def gated(self) -> bool:
        return bool(self.after)

    @property
    def upstreams(self) -> str:
        """The upstream environments as prose: ``staging`` or ``staging-eu and staging-us``."""
        return join_names(self.after)


@dataclass(frozen=True)
class Group:
    """Services promoted together as one release train."""

    name: str
    services: tuple[str, ...]
    together: bool  # entry environments wait for every service's image, then open one train
    line: int


@dataclass(frozen=True)
class Policy:
    version: int
    allowed_images: tuple[str, ...]
    services: Mapping[str, Service]
    environments: Mapping[str, Environment]
    # "major.minor" of the Kubernetes API that manifests are validated against
    kubernetes_version: str = field(default_factory=latest_kubernetes_version)
    groups: Mapping[str, Group] = field(default_factory=lambda: MappingProxyType({}))
    # advice that does not make the policy invalid (check-config prints it)
    notices: tuple[PolicyIssue, ...] = field(default=(), compare=False)
    _by_path: Mapping[str, tuple[tuple[str, str], ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        index: dict[str, list[tuple[str, str]]] = {}
        for service in self.services:
            for env in self.environments:
                index.setdefault(self.path_for(service, env), []).append((service, env))
        object.__setattr__(self, "_by_path", {k: tuple(v) for k, v in index.items()})

    def path_for(self, service: str, env: str) -> str:
        """The file holding ``service``'s image in ``env``: its override, else the template."""
        template = self.services[service].paths.get(env)
        if template is None:
            template = self.environments[env].path
        return fill_template(template, service, env)

    def entry_environments(self, event_kind: str) -> list[Environment]:
        """Entry environments opened by a ``release`` or ``package`` event."""
        if event_kind not in ENTRY_EVENT_KINDS:
            raise ValueError(f"event kind must be 'release' or 'package', not {event_kind!r}")
        return [env for env in self.environments.values() if env.entry_from in (event_kind, "any")]

    def ancestors(self, env: str) -> tuple[str, ...]:
        """Every environment ``env`` comes after, directly or through others, nearest first
        (``env`` excluded)."""
        return _walk(env, lambda name: self.environments[name].after
                     if name in self.environments else ())

    def descendants(self, env: str) -> tuple[str, ...]:
        """Every environment that comes after ``env``, directly or through others, nearest
        first (``env`` excluded)."""
        return _walk(env, lambda name: tuple(e.name for e in self.downstream_of(name)))

    def downstream_of(self, env: str) -> list[Environment]:
        """Environments whose ``after`` names ``env`` directly, in file order."""
        return [candidate for candidate in self.environments.values() if env in candidate.after]

    def services_for_source(self, repo_full_name: str) -> list[Service]:
        wanted = repo_full_name.casefold()
        return [s for s in self.services.values() if s.source.casefold() == wanted]

    def groups_of(self, service: str) -> list[Group]:
        """The groups that list ``service``, in file order."""
        return [group for group in self.groups.values() if service in group.services]

    def together_group_of(self, service: str) -> Group | None:
        """The ``together: true`` group of ``service`` (validation allows at most one)."""
        return next((g for g in self.groups_of(service) if g.together), None)

    def tag_policy_for(self, service: str, env: str) -> list[TagPolicy]:
        """Every policy a tag must satisfy to be promoted into ``env``."""
        policies = [self.services[service].tags]
        env_tags = self.environments[env].tags
        if env_tags is not None:
            policies.append(env_tags)
        return policies

    def environment_for_path(self, path: str) -> list[tuple[Service, Environment]]:
        """The (service, environment) pairs whose file is ``path`` (a leading ``./`` or
        ``/`` is ignored)."""
        key = path.removeprefix("./").lstrip("/")
        return [
            (self.services[service], self.environments[env])
            for service, env in self._by_path.get(key, ())
        ]
