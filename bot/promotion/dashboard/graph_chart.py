"""The environments as a Mermaid flowchart GitHub renders: one node per environment with the
version each service runs there, one arrow per `after`. Bounded: at most
`SERVICES_PER_NODE` services are named in a node, the rest counted."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bot.domain.policy import Policy
from bot.promotion.dashboard.status import StatusRow

SERVICES_PER_NODE = 3
# Mermaid ends a quoted label at `"` and reads `<`/`>` as HTML; names and tags need neither.
_UNSAFE = re.compile(r'[^A-Za-z0-9_.:+@/ -]')


def policy_edges(policy: Policy) -> dict[str, tuple[str, ...]]:
    """Each environment, in policy order, with the ones it comes after."""
    return {name: env.after for name, env in policy.environments.items()}


def flowchart(edges: Mapping[str, Sequence[str]], rows: Sequence[StatusRow]) -> str:
    """A ```mermaid block: ``edges`` maps each environment, in policy order, to the ones it
    comes after; ``rows`` give what runs where."""
    if not edges:
        return ""
    ids = {name: f"e{index}" for index, name in enumerate(edges)}
    lines = ["```mermaid", "flowchart LR"]
    for name in edges:
        lines.append(f'  {ids[name]}["{_label(name, [r for r in rows if r.environment == name])}"]')
    for name, upstreams in edges.items():
        lines += [f"  {ids[upstream]} --> {ids[name]}" for upstream in upstreams
                  if upstream in ids]
    lines.append("```")
    return "\n".join(lines)


def _label(environment: str, rows: Sequence[StatusRow]) -> str:
    parts = [f"<b>{_safe(environment)}</b>"]
    services = len({row.service for row in rows})
    for row in rows[:SERVICES_PER_NODE]:
        version = _safe(row.version) if row.version else "—"
        parts.append(version if services == 1 else f"{_safe(row.service)} {version}")
    if len(rows) > SERVICES_PER_NODE:
        parts.append(f"+{len(rows) - SERVICES_PER_NODE} more services")
    return "<br/>".join(parts)


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text)
