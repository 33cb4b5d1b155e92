"""The GraphQL endpoint: GitHub's schema decides what a query may ask, installation tokens
decide which repositories it sees, GitHub's limits and error shapes."""

from __future__ import annotations

import hashlib
from typing import Any

import aiohttp
import gidgethub
import pytest
from gidgethub.aiohttp import GitHubAPI

from bot.github.graphql import graphql_url
from conveyor_emulator import Emulator
from conveyor_emulator.store.node_ids import node_id

from .conftest import app_jwt, token_for

BLOB_AT = """
query($ids: [ID!]!, $expression: String!) {
  nodes(ids: $ids) {
    ... on Repository {
      nameWithOwner
      object(expression: $expression) {
        __typename
        ... on Blob { oid byteSize isBinary isTruncated text }
      }
    }
  }
}
"""


def repo_id(em: Emulator, full_name: str) -> str:
    return node_id("Repository", em.world.repo_by_name(full_name).id)


async def post(session: aiohttp.ClientSession, em: Emulator, body: Any,
               authorization: str | None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": authorization} if authorization else {}
    async with session.post(graphql_url(em.base_url), json=body, headers=headers) as answer:
        return answer.status, await answer.json()


async def test_the_endpoint_is_ghes_path_beside_the_rest_api(emulator: Emulator) -> None:
    assert graphql_url(emulator.base_url).endswith("/api/graphql")
    assert graphql_url("https://api.github.com") == "https://api.github.com/graphql"
    assert graphql_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com/api/graphql"


async def test_a_query_reads_blobs_at_the_default_branch_of_many_repositories(
        emulator: Emulator, gh: GitHubAPI) -> None:
    ids = [repo_id(emulator, name) for name in ("acme/deploy", "acme/web")]
    data = await gh.graphql(BLOB_AT, endpoint=graphql_url(emulator.base_url), ids=ids,
                            expression="HEAD:.github/conveyor.yml")
    deploy, web = data["nodes"]
    text = b"version: 1\n"
    assert deploy == {"nameWithOwner": "acme/deploy", "object": {
        "__typename": "Blob", "oid": hashlib.sha1(b"blob %d\0" % len(text) + text).hexdigest(),
        "byteSize": len(text), "isBinary": False, "isTruncated": False,
        "text": "version: 1\n"}}
    assert web == {"nameWithOwner": "acme/web", "object": None}
    data = await gh.graphql(BLOB_AT, endpoint=graphql_url(emulator.base_url), ids=ids[:1],
                            expression="HEAD:apps")
    assert data["nodes"][0]["object"] == {"__typename": "Tree"}
    used = [e for e in emulator.requests.entries if e.path == "/graphql"]
    assert [(e.status, e.resource) for e in used] == [(200, "graphql")] * 2


async def test_a_field_github_does_not_have_is_refused(emulator: Emulator,
                                                       gh: GitHubAPI) -> None:
    with pytest.raises(gidgethub.QueryError) as refused:
        await gh.graphql("query($id: ID!) { node(id: $id) { ... on Repository { pushedAt } } }",
                         endpoint=graphql_url(emulator.base_url),
                         id=repo_id(emulator, "acme/deploy"))
    [error] = refused.value.response["errors"]
    assert "pushedAt" in error["message"] and error["locations"]
    assert "data" not in refused.value.response
    with pytest.raises(gidgethub.QueryError):  # an argument GitHub does not take
        await gh.graphql('{ nodes(ids: [], first: 3) { id } }',
                         endpoint=graphql_url(emulator.base_url))


async def test_more_than_100_ids_are_refused_and_unknown_ids_are_null(
        emulator: Emulator, gh: GitHubAPI) -> None:
    endpoint = graphql_url(emulator.base_url)
    ids = [repo_id(emulator, "acme/deploy")] * 101
    with pytest.raises(gidgethub.QueryError) as refused:
        await gh.graphql(BLOB_AT, endpoint=endpoint, ids=ids, expression="HEAD:x")
    assert refused.value.response["data"] is None
    [error] = refused.value.response["errors"]
    assert error["type"] == "ARGUMENT_LIMIT" and "101" in error["message"]
    data = await gh.graphql(BLOB_AT, endpoint=endpoint, ids=ids[:100], expression="HEAD:x")
    assert len(data["nodes"]) == 100

    unknown = node_id("Repository", 999999)
    with pytest.raises(gidgethub.QueryError) as partial:
        await gh.graphql(BLOB_AT, endpoint=endpoint, ids=[unknown, ids[0], "junk"],
                         expression="HEAD:README.md")
    answer = partial.value.response
    assert [n and n["nameWithOwner"] for n in answer["data"]["nodes"]] == [
        None, "acme/deploy", None]
    assert [(e["type"], e["path"]) for e in answer["errors"]] == [
        ("NOT_FOUND", ["nodes", 0]), ("NOT_FOUND", ["nodes", 2])]


async def test_a_repository_outside_the_token_is_not_found(
        emulator: Emulator, session: aiohttp.ClientSession) -> None:
    inst = emulator.install("acme", ["web"])
    token = await token_for(emulator, session, inst)
    status, answer = await post(session, emulator, {
        "query": "query($id: ID!) { node(id: $id) { id } }",
        "variables": {"id": repo_id(emulator, "acme/deploy")}}, f"token {token}")
    assert status == 200
    assert answer["data"] == {"node": None}
    assert answer["errors"][0]["type"] == "NOT_FOUND"


async def test_only_installation_tokens_are_served(emulator: Emulator,
                                                   session: aiohttp.ClientSession) -> None:
    query = {"query": "{ __typename }"}
    for authorization, message in ((None, "requires you to be authenticated"),
                                   ("token nope", "Bad credentials"),
                                   (f"Bearer {app_jwt(emulator)}", "Bad credentials")):
        status, answer = await post(session, emulator, query, authorization)
        assert status == 401 and message in answer["message"], answer
    inst = emulator.install("acme")
    token = await token_for(emulator, session, inst)
    status, answer = await post(session, emulator, query, f"bearer {token}")
    assert (status, answer) == (200, {"data": {"__typename": "Query"}})
    status, answer = await post(session, emulator, {"query": "{ nodes(ids: []) { id } "},
                                f"token {token}")
    assert status == 200 and "data" not in answer and answer["errors"][0]["locations"]


async def test_points_are_their_own_budget(emulator: Emulator,
                                           session: aiohttp.ClientSession) -> None:
    inst = emulator.install("acme")
    token = await token_for(emulator, session, inst)
    emulator.rate_limits.limit = 2
    query = {"query": "{ __typename }"}
    for _ in range(2):
        status, answer = await post(session, emulator, query, f"token {token}")
        assert answer == {"data": {"__typename": "Query"}}
    status, answer = await post(session, emulator, query, f"token {token}")
    assert status == 200 and answer["errors"][0]["type"] == "RATE_LIMITED"
    async with session.get(emulator.base_url + "/repos/acme/web",
                           headers={"Authorization": f"token {token}"}) as rest:
        assert rest.status == 200  # REST's requests are counted apart
        assert rest.headers["x-ratelimit-resource"] == "core"


async def test_objects_by_revision_path_or_oid(emulator: Emulator, gh: GitHubAPI) -> None:
    endpoint = graphql_url(emulator.base_url)
    query = """query($id: ID!, $expression: String, $oid: GitObjectID) {
      node(id: $id) { ... on Repository { object(expression: $expression, oid: $oid) {
        __typename oid abbreviatedOid } } } }"""
    deploy = repo_id(emulator, "acme/deploy")
    head = emulator.world.repo_by_name("acme/deploy").branch_sha("main")
    assert head is not None

    async def object_at(**where: str) -> Any:
        return (await gh.graphql(query, endpoint=endpoint, id=deploy, **where))["node"]["object"]

    assert await object_at(expression="HEAD") == {"__typename": "Commit", "oid": head,
                                                  "abbreviatedOid": head[:7]}
    assert (await object_at(expression="main:apps"))["__typename"] == "Tree"
    readme = await object_at(expression=f"{head}:README.md")
    assert readme["__typename"] == "Blob"
    assert await object_at(oid=readme["oid"]) == readme
    assert await object_at(oid=head) == await object_at(expression="HEAD")
    assert await object_at(oid="0" * 40) is None
    assert await object_at(expression="nowhere:README.md") is None
    assert await object_at(expression="HEAD:missing.txt") is None


async def test_a_server_error_is_a_502(emulator: Emulator,
                                       session: aiohttp.ClientSession) -> None:
    inst = emulator.install("acme")
    token = await token_for(emulator, session, inst)
    emulator.faults.graphql_error_rate = 1.0
    status, answer = await post(session, emulator, {"query": "{ __typename }"},
                                f"token {token}")
    assert status == 502 and answer["message"] == "Server Error"
