from __future__ import annotations

import pytest

from bot.domain.images import (
    ImageRef,
    canonical_image_name,
    image_allowed,
    is_digest,
    parse_image_ref,
    same_image,
)

DIGEST = "sha256:" + "ab" * 32


def test_parse_name_tag_digest() -> None:
    ref = parse_image_ref(f"ghcr.io/acme/web:1.4.2@{DIGEST}")
    assert ref == ImageRef("ghcr.io/acme/web", "1.4.2", DIGEST)
    assert str(ref) == f"ghcr.io/acme/web:1.4.2@{DIGEST}"


def test_parse_short_name() -> None:
    assert parse_image_ref("nginx") == ImageRef("nginx", None, None)


def test_registry_port_is_not_a_tag() -> None:
    assert parse_image_ref("localhost:5000/app") == ImageRef("localhost:5000/app", None, None)
    assert parse_image_ref("localhost:5000/app:2") == ImageRef("localhost:5000/app", "2", None)
    assert parse_image_ref("registry.local:443/a/b@" + DIGEST).digest == DIGEST


def test_parse_keeps_spelling() -> None:
    ref = parse_image_ref("GHCR.io/Acme/Web:1")
    assert ref.name == "GHCR.io/Acme/Web"
    assert ref.canonical_name == "ghcr.io/acme/web"


@pytest.mark.parametrize(
    "text",
    [
        "",
        " nginx",
        "nginx ",
        "nginx:",
        "nginx:-bad",
        "nginx@sha256:abc",
        f"nginx@{DIGEST.upper()}",
        "nginx@md5:" + "a" * 32,
        "ghcr.io//web",
        "ghcr.io/acme/web:1.0:2.0",
        "https://ghcr.io/acme/web",
        "{{ .Values.image }}",
        "a" * 513,
        "a/" * 300 + "b",
        "bad_host_:5000/x",
    ],
)
def test_parse_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_image_ref(text)


def test_parse_tag_length_limit() -> None:
    assert parse_image_ref("a:" + "t" * 128).tag == "t" * 128
    with pytest.raises(ValueError):
        parse_image_ref("a:" + "t" * 129)


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("nginx", "docker.io/library/nginx"),
        ("docker.io/nginx", "docker.io/library/nginx"),
        ("index.docker.io/library/nginx", "docker.io/library/nginx"),
        ("registry-1.docker.io/bitnami/redis", "docker.io/bitnami/redis"),
        ("bitnami/redis", "docker.io/bitnami/redis"),
        ("ghcr.io/Acme/Web", "ghcr.io/acme/web"),
        ("localhost:5000/app", "localhost:5000/app"),
        ("localhost/app", "localhost/app"),
        ("nginx:1.25", "docker.io/library/nginx"),
        (f"ghcr.io/acme/web:1@{DIGEST}", "ghcr.io/acme/web"),
    ],
)
def test_canonical_image_name(name: str, canonical: str) -> None:
    assert canonical_image_name(name) == canonical


def test_same_image() -> None:
    assert same_image("nginx", "docker.io/library/nginx:1.25")
    assert same_image("nginx", "index.docker.io/library/nginx")
    assert same_image("ghcr.io/acme/web", "GHCR.IO/ACME/WEB")
    assert not same_image("ghcr.io/acme/web", "ghcr.io/acme/web2")
    assert not same_image("localhost:5000/app", "localhost/app")
    assert not same_image("nginx", "not an image")


def test_is_digest() -> None:
    assert is_digest(DIGEST)
    assert not is_digest(DIGEST.upper())
    assert not is_digest(DIGEST[:-1])
    assert not is_digest("sha512:" + "a" * 64)
    assert not is_digest(DIGEST + "\n")


@pytest.mark.parametrize(
    ("name", "prefixes", "allowed"),
    [
        ("ghcr.io/acme/web", ["ghcr.io/acme/"], True),
        ("ghcr.io/Acme/web", ["ghcr.io/acme/"], True),
        ("ghcr.io/acme/team/web:1", ["ghcr.io/acme/"], True),
        ("ghcr.io/acme-evil/web", ["ghcr.io/acme/"], False),
        ("ghcr.io/acme", ["ghcr.io/acme/"], False),
        ("ghcr.io/acme-evil/web", ["ghcr.io/acme"], False),
        ("ghcr.io/acme/web", ["ghcr.io/acme/web"], True),
        ("ghcr.io/acme/web/sub", ["ghcr.io/acme/web"], True),
        ("ghcr.io/acme/web2", ["ghcr.io/acme/web"], False),
        ("ghcr.io/x/y", ["ghcr.io/"], True),
        ("ghcr.io/x/y", ["ghcr.io"], True),
        ("ghcr.io.evil.com/x", ["ghcr.io"], False),
        ("nginx", ["docker.io/library/"], True),
        ("nginx", ["nginx"], True),
        ("docker.io/library/nginx", ["index.docker.io/library/nginx"], True),
        ("bitnami/redis", ["bitnami/"], True),
        ("bitnami/redis", ["docker.io/"], True),
        ("localhost:5000/app", ["localhost:5000/"], True),
        ("localhost:5001/app", ["localhost:5000/"], False),
        ("ghcr.io/acme/web", [], False),
        ("ghcr.io/acme/web", ["", "/", "ghcr.io/other/"], False),
        ("not an image", ["ghcr.io/"], False),
    ],
)
def test_image_allowed(name: str, prefixes: list[str], allowed: bool) -> None:
    assert image_allowed(name, prefixes) is allowed
