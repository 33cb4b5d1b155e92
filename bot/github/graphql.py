"""GitHub's GraphQL API, for what REST can only ask one repository at a time.

The endpoint follows the configured REST API URL: `https://api.github.com/graphql` for
github.com (and `https://api.SUBDOMAIN.ghe.com/graphql`), `https://HOST/api/graphql` for GitHub
Enterprise Server (REST at `https://HOST/api/v3`). GraphQL has its own budget (points, 5,000 an
hour for an installation), apart from REST's requests; a query without connections costs 1.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.github.transient import TransientError

log = logging.getLogger(__name__)

# `nodes(ids:)` takes at most 100 ids
MAX_NODE_IDS = 100

_PATHS_PRESENT = """
query($ids: [ID!]!, $expression: String!) {
  nodes(ids: $ids) {
    ... on Repository { nameWithOwner object(expression: $expression) { oid } }
  }
}
"""


def graphql_url(api_url: str) -> str:
    """The GraphQL endpoint beside a REST API URL."""
    base = api_url.rstrip("/")
    if base.endswith("/api/v3"):
        return base.removesuffix("/v3") + "/graphql"
    return base + "/graphql"


async def holds_path(gh: GitHubAPI, node_ids: list[str], path: str) -> dict[str, bool]:
    """Lower-case full name → whether the repository has anything at `path` on its default
    branch, for the repositories (given by the `node_id`s REST lists) GraphQL answered for, 100
    a query; one it did not answer for (an error, a repository gone) is left out, for the
    caller to ask over REST."""
    endpoint = graphql_url(gh.base_url)
    found: dict[str, bool] = {}
    for start in range(0, len(node_ids), MAX_NODE_IDS):
        batch = node_ids[start:start + MAX_NODE_IDS]
        try:
            data: Any = await gh.graphql(_PATHS_PRESENT, endpoint=endpoint, ids=batch,
                                         expression=f"HEAD:{path}")
        except gidgethub.QueryError as exc:  # errors, with the data of what did resolve
            data = exc.response.get("data") if isinstance(exc.response, Mapping) else None
            log.log(logging.INFO if data else logging.WARNING,
                    "graphql answered errors; the rest is asked over REST",
                    extra={"errors": _summary(exc.response), "repositories": len(batch)})
        except (gidgethub.GitHubException, TransientError, ValueError) as exc:
            log.warning("graphql request failed; asking over REST",
                        extra={"error": type(exc).__name__, "repositories": len(batch)})
            continue
        nodes = data.get("nodes") if isinstance(data, Mapping) else None
        for node in nodes if isinstance(nodes, list) else ():
            if isinstance(node, Mapping) and isinstance(node.get("nameWithOwner"), str):
                found[node["nameWithOwner"].lower()] = node.get("object") is not None
    return found


def _summary(response: Any) -> list[str]:
    errors = response.get("errors") if isinstance(response, Mapping) else None
    return [str(e.get("type") or e.get("message"))[:80] for e in errors or ()
            if isinstance(e, Mapping)][:5]
