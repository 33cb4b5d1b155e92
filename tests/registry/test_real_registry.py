"""The registry client against a real distribution registry over HTTP on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.registry.client import RegistryClient, RegistryPolicy
from bot.registry.credentials import load_auth_file
from bot.registry.errors import RegistryError
from bot.registry.lookup import ImageLookup
from conveyor_emulator import Emulator
from conveyor_emulator.registry.images import build_image
from tests.registry.support import RegistryServer, labelled_image, push

FAST = RegistryPolicy(timeout=2, attempts=2, base_delay=0.01, max_delay=0.02)


def lookup(session: aiohttp.ClientSession, server: RegistryServer, *,
           auth_file: Path | None = None, policy: RegistryPolicy = FAST) -> ImageLookup:
    credentials = load_auth_file(auth_file) if auth_file else {}
    client = RegistryClient(lambda: session, credentials=credentials,
                            endpoints={"registry.test": server.url}, policy=policy)
    return ImageLookup(client)


async def test_a_tag_resolves_to_the_index_digest(registry: RegistryServer,
                                                  session: aiohttp.ClientSession) -> None:
    image = labelled_image("web:1.4.2", source="https://github.com/acme/web", revision="a" * 40)
    await push(session, registry, "acme/web", image, ["1.4.2", "latest"])
    images = lookup(session, registry)
    found = await images.find_by_tags("registry.test/acme/web", ["v1.4.2", "1.4.2"])
    assert found is not None and found.tag == "1.4.2"
    assert found.digest == image.digest and found.manifest.is_index
    assert [p.label for p in found.manifest.platforms] == ["linux/amd64", "linux/arm64"]
    assert await images.find_by_tags("registry.test/acme/web", ["9.9.9"]) is None
    # a per-platform digest is known to the registry, and its index is found by tag
    platform = image.platform_digests[1]
    one = await images.find_by_digest("registry.test/acme/web", platform)
    assert one is not None and not one.manifest.is_index
    index = await images.index_of("registry.test/acme/web", platform)
    assert index is not None and (index.digest, index.tag) == (image.digest, "1.4.2")
    assert await images.tags_of("registry.test/acme/web", image.digest) == ["1.4.2", "latest"]
    labels = await images.provenance("registry.test/acme/web", image.digest)
    assert (labels.source_repo, labels.revision) == ("acme/web", "a" * 40)


async def test_answers_are_cached_by_digest_and_conditional_by_tag(
        registry: RegistryServer, session: aiohttp.ClientSession) -> None:
    image = build_image("api:2.0.0")
    await push(session, registry, "acme/api", image, ["2.0.0"])
    slow_to_trust = RegistryPolicy(timeout=2, attempts=1)
    images = lookup(session, registry, policy=slow_to_trust)
    client = images.client
    await images.find_by_tags("registry.test/acme/api", ["2.0.0"])
    first = client.requests
    await images.find_by_digest("registry.test/acme/api", image.digest)
    assert client.requests == first  # immutable: never asked again
    await images.find_by_tags("registry.test/acme/api", ["2.0.0"])
    assert client.requests == first  # fresh for a few seconds


async def test_tag_lists_are_read_whole(registry: RegistryServer,
                                        session: aiohttp.ClientSession) -> None:
    image = build_image("many")
    tags = [f"1.{n}.0" for n in range(7)]
    await push(session, registry, "acme/many", image, tags)
    paged = RegistryPolicy(timeout=2, attempts=1, tags_page_size=3)
    images = lookup(session, registry, policy=paged)
    # distribution 2.8 answers `?n=` with every tag at once (paging by `Link` is exercised
    # against the emulator's registry, which pages as the distribution spec describes)
    assert sorted(await images.tags("registry.test/acme/many")) == sorted(tags)
    assert await images.tags("registry.test/acme/nothing-here") == []


async def test_tag_lists_follow_link_across_pages(session: aiohttp.ClientSession) -> None:
    emulator = Emulator(webhook_secret="unused")
    await emulator.start()
    try:
        tags = [f"1.{n}.0" for n in range(7)]
        await emulator.publish_container("acme", "many", emulator.build_image("many"), tags,
                                         emit=False)
        client = RegistryClient(lambda: session, endpoints={"ghcr.io": emulator.web_url},
                                policy=RegistryPolicy(timeout=2, attempts=1, tags_page_size=3))
        assert await ImageLookup(client).tags("ghcr.io/acme/many") == sorted(tags)
        # the Bearer challenge, its token, then pages of 3, 3 and 1 tags
        assert [(e.path, e.status) for e in emulator.registry.requests.entries] == [
            ("/v2/{name}/tags/list", 401), ("/token", 200), ("/v2/{name}/tags/list", 200),
            ("/v2/{name}/tags/list", 200), ("/v2/{name}/tags/list", 200)]
        capped = RegistryClient(lambda: session, endpoints={"ghcr.io": emulator.web_url},
                                policy=RegistryPolicy(timeout=2, attempts=1, tags_page_size=2,
                                                      max_tag_pages=2))
        assert len(await ImageLookup(capped).tags("ghcr.io/acme/many")) == 4
    finally:
        await emulator.stop()


async def test_a_private_registry_needs_the_auth_file(private_registry: RegistryServer,
                                                      session: aiohttp.ClientSession,
                                                      tmp_path: Path) -> None:
    image = build_image("secret:1.0.0")
    await push(session, private_registry, "acme/secret", image, ["1.0.0"])
    anonymous = lookup(session, private_registry)
    with pytest.raises(RegistryError) as refused:
        await anonymous.find_by_tags("registry.test/acme/secret", ["1.0.0"])
    assert refused.value.status == 401
    assert str(refused.value) == ("registry registry.test answered 401 for acme/secret: set "
                                  "CONVEYOR_REGISTRY_AUTH_FILE")
    user, password = private_registry.htpasswd or ("", "")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"auths": {"registry.test": {"username": user,
                                                              "password": password}}}))
    allowed = lookup(session, private_registry, auth_file=config)
    found = await allowed.find_by_tags("registry.test/acme/secret", ["1.0.0"])
    assert found is not None and found.digest == image.digest
    config.write_text(json.dumps({"auths": {"https://registry.test": {
        "username": user, "password": "wrong-password"}}}))
    wrong = lookup(session, private_registry, auth_file=config)
    with pytest.raises(RegistryError) as rejected:
        await wrong.find_by_tags("registry.test/acme/secret", ["1.0.0"])
    assert "wrong-password" not in str(rejected.value)
    assert "credentials for registry.test in CONVEYOR_REGISTRY_AUTH_FILE" in str(rejected.value)


@pytest.fixture
async def silent_registry() -> AsyncIterator[str]:
    """Accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_registry_that_times_out(silent_registry: str,
                                         session: aiohttp.ClientSession) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    client = RegistryClient(lambda: session, endpoints={"registry.test": silent_registry},
                            policy=RegistryPolicy(timeout=0.2, attempts=3, base_delay=0.05),
                            sleep=sleep)
    with pytest.raises(RegistryError) as failed:
        await ImageLookup(client).find_by_tags("registry.test/acme/web", ["1.0.0"])
    assert str(failed.value) == ("registry registry.test did not answer within 0.2s for "
                                 "acme/web: check the network or CONVEYOR_REGISTRY_ENDPOINTS")
    assert client.requests == 3 and slept == [0.05, 0.1]
