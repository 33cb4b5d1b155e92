"""What a change of the policy file changes for each gated environment (pure).

Two loaded policies are compared, never their texts: reordered keys, comments and quoting
change nothing. An environment is judged by every setting of its entry, by each service's
settings and file in it, and by `allowed_images`; its removal, a service removed from the policy
or added to it count too. Groups and `kubernetes_version` decide no gate and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from bot.domain.durations import format_duration
from bot.domain.policy.model import Environment, Policy, Service

# the policy file's names for fields the model names otherwise
_KEYS = {"entry_from": "from"}
_NOT_RULES = {"name", "line"}
_SERVICE_NOT_RULES = {"name", "line", "paths"}  # a service's file is compared as a path


@dataclass(frozen=True)
class RuleChange:
    """One rule of a gated environment that a policy change alters."""

    environment: str
    rule: str
    before: str
    after: str

    @property
    def text(self) -> str:
        return f"{self.rule}: {self.before} → {self.after}"


def gated_rule_changes(base: Policy, head: Policy, *,
                       judged: Iterable[str] | None = None) -> tuple[RuleChange, ...]:
    """Every rule of an environment gated in ``base`` that ``head`` changes, environment by
    environment in ``base``'s order; ``judged`` limits the environments looked at."""
    wanted = set(judged) if judged is not None else None
    found: list[RuleChange] = []
    for name, env in base.environments.items():
        if not env.gated or (wanted is not None and name not in wanted):
            continue
        other = head.environments.get(name)
        if other is None:
            found.append(RuleChange(name, "environment", "defined",
                                    _removed_or_renamed(env, base, head)))
            continue
        found += _environment_changes(env, other)
        found += _service_changes(name, base, head)
        if base.allowed_images != head.allowed_images:
            found.append(RuleChange(name, "allowed_images", _shown(base.allowed_images),
                                    _shown(head.allowed_images)))
    return tuple(found)


def _removed_or_renamed(env: Environment, base: Policy, head: Policy) -> str:
    new = [e for e in head.environments.values()
           if e.name not in base.environments and e.path == env.path]
    return f"renamed to {new[0].name}" if len(new) == 1 else "removed"


def _environment_changes(before: Environment, after: Environment) -> list[RuleChange]:
    return [RuleChange(before.name, _KEYS.get(key, key), _shown(old), _shown(new))
            for key, old, new in _differences(before, after, _NOT_RULES)]


def _service_changes(env: str, base: Policy, head: Policy) -> list[RuleChange]:
    found = []
    for name, service in base.services.items():
        other = head.services.get(name)
        if other is None:
            found.append(RuleChange(env, f"service {name}", "present", "removed"))
            continue
        found += [RuleChange(env, f"services.{name}.{key}", _shown(old), _shown(new))
                  for key, old, new in _differences(service, other, _SERVICE_NOT_RULES)]
        before, after = base.path_for(name, env), head.path_for(name, env)
        if before != after:
            found.append(RuleChange(env, f"services.{name} file", before, after))
    for name, service in head.services.items():
        if name not in base.services:
            found.append(RuleChange(env, f"service {name}", "absent",
                                    f"added ({_described(service)}, file "
                                    f"{head.path_for(name, env)})"))
    return found


def _described(service: Service) -> str:
    return f"{service.kind} {service.image} from {service.source}"


def _differences(before: Any, after: Any, skipped: set[str]
                 ) -> list[tuple[str, object, object]]:
    return [(f.name, getattr(before, f.name), getattr(after, f.name)) for f in fields(before)
            if f.name not in skipped and getattr(before, f.name) != getattr(after, f.name)]


def _shown(value: object) -> str:
    """A value as a person reads it in the gate's summary."""
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) or "none"
    if isinstance(value, tuple | list):
        return ", ".join(_shown(item) for item in value) or "none"
    return str(value)
