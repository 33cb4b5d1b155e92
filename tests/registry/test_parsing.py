"""The pure parts of the registry client: names, endpoints, auth files, challenges,
manifests, pagination links."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from bot.domain.promotions.candidate import repo_from_source
from bot.registry.challenge import parse_challenge
from bot.registry.credentials import AuthFileError, load_auth_file, parse_auths
from bot.registry.errors import refusal, unreachable
from bot.registry.lookup import _newest_first
from bot.registry.manifests import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    MAX_MANIFEST_BYTES,
    OCI_INDEX,
    OCI_MANIFEST,
    ManifestError,
    config_labels,
    image_platform,
    next_link,
    parse_manifest,
)
from bot.registry.names import Repository, endpoint_for, parse_endpoints, repository_of
from bot.runtime.settings import SettingsError, load_settings


def digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def test_image_names_resolve_like_docker() -> None:
    assert repository_of("nginx") == Repository("docker.io", "library/nginx")
    assert repository_of("index.docker.io/acme/web") == Repository("docker.io", "acme/web")
    assert repository_of("ghcr.io/Acme/Web:1.0") == Repository("ghcr.io", "acme/web")
    assert repository_of("registry.local:5000/team/app@sha256:" + "a" * 64) == Repository(
        "registry.local:5000", "team/app")
    assert str(repository_of("ghcr.io/acme/web")) == "ghcr.io/acme/web"


def test_endpoints_default_and_override() -> None:
    assert endpoint_for("docker.io", {}) == "https://registry-1.docker.io"
    assert endpoint_for("ghcr.io", {}) == "https://ghcr.io"
    overrides = parse_endpoints("ghcr.io=http://127.0.0.1:5000/, docker.io=https://mirror.lan")
    assert overrides == {"ghcr.io": "http://127.0.0.1:5000", "docker.io": "https://mirror.lan"}
    assert endpoint_for("ghcr.io", overrides) == "http://127.0.0.1:5000"
    assert parse_endpoints("index.docker.io=https://m") == {"docker.io": "https://m"}
    assert parse_endpoints("") == {}
    for bad in ("ghcr.io", "ghcr.io=ftp://x", "=http://x", "ghcr.io=http://x?q=1"):
        with pytest.raises(ValueError):
            parse_endpoints(bad)


def test_auth_entries_in_every_spelling() -> None:
    encoded = base64.b64encode(b"bot:s3cret:with:colons").decode()
    found = parse_auths({"auths": {
        "https://index.docker.io/v1/": {"auth": encoded},
        "ghcr.io": {"username": "octo", "password": "ghp_token"},
        "https://registry.lan:5000": {"identitytoken": "refresh"},
        "empty.example": {},
    }})
    assert set(found) == {"docker.io", "ghcr.io", "registry.lan:5000"}
    assert found["docker.io"].basic == "Basic " + encoded
    assert found["ghcr.io"].basic == "Basic " + base64.b64encode(b"octo:ghp_token").decode()
    assert found["registry.lan:5000"].identity_token == "refresh"
    assert found["registry.lan:5000"].basic is None
    assert "ghp_token" not in repr(found)


def test_bad_auth_files_never_echo_a_secret(tmp_path: Path) -> None:
    cases = [
        {"auths": []},
        {"auths": {"ghcr.io": "ghp_secret"}},
        {"auths": {"ghcr.io": {"auth": "ghp_secret!!"}}},
        {"auths": {"ghcr.io": {"auth": base64.b64encode(b"ghp_secret").decode()}}},
        {"auths": {"ghcr.io": {"password": 7}}},
        [],
    ]
    for case in cases:
        with pytest.raises(AuthFileError) as error:
            parse_auths(case)
        assert "ghp_secret" not in str(error.value)
    path = tmp_path / "config.json"
    path.write_text("{ghp_secret")
    with pytest.raises(AuthFileError, match="not JSON"):
        load_auth_file(path)
    with pytest.raises(AuthFileError, match="cannot be read"):
        load_auth_file(tmp_path / "missing.json")


def test_settings_read_the_two_registry_variables(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    base = {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s", "GITHUB_PRIVATE_KEY": key}
    auth = tmp_path / "config.json"
    auth.write_text(json.dumps({"auths": {"ghcr.io": {"username": "u", "password": "p"}}}))
    settings = load_settings({**base, "CONVEYOR_REGISTRY_AUTH_FILE": str(auth),
                              "CONVEYOR_REGISTRY_ENDPOINTS": "ghcr.io=http://127.0.0.1:1"},
                             dotenv=tmp_path / "none")
    assert set(settings.registry_credentials) == {"ghcr.io"}
    assert settings.registry_endpoints == {"ghcr.io": "http://127.0.0.1:1"}
    assert "'p'" not in repr(settings)
    auth.write_text('{"auths": {"ghcr.io": {"auth": "ghp_x!"}}}')
    with pytest.raises(SettingsError, match=r"^CONVEYOR_REGISTRY_AUTH_FILE .*not base64") as bad:
        load_settings({**base, "CONVEYOR_REGISTRY_AUTH_FILE": str(auth)}, dotenv=tmp_path / "n")
    assert "ghp_x" not in str(bad.value)
    with pytest.raises(SettingsError, match=r"^CONVEYOR_REGISTRY_ENDPOINTS: "):
        load_settings({**base, "CONVEYOR_REGISTRY_ENDPOINTS": "ghcr.io"}, dotenv=tmp_path / "n")


def test_challenges_as_registries_send_them() -> None:
    ghcr = parse_challenge('Bearer realm="https://ghcr.io/token",service="ghcr.io",'
                           'scope="repository:acme/web:pull"')
    assert ghcr is not None and ghcr.scheme == "bearer"
    assert ghcr.params == {"realm": "https://ghcr.io/token", "service": "ghcr.io",
                           "scope": "repository:acme/web:pull"}
    hub = parse_challenge('Bearer realm="https://auth.docker.io/token",'
                          'service="registry.docker.io",scope="repository:library/nginx:pull,push"')
    assert hub is not None and hub.params["scope"] == "repository:library/nginx:pull,push"
    ecr = parse_challenge('Basic realm="https://1234.dkr.ecr.eu-west-1.amazonaws.com/",'
                          'service="ecr.amazonaws.com"')
    assert ecr is not None and ecr.scheme == "basic"
    assert parse_challenge('Basic realm="a \\"quoted\\" realm"').params == {  # type: ignore[union-attr]
        "realm": 'a "quoted" realm'}
    assert parse_challenge("") is None


def _index() -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
        {"mediaType": OCI_MANIFEST, "digest": "sha256:" + "1" * 64, "size": 1,
         "platform": {"os": "unknown", "architecture": "unknown"}},
        {"mediaType": OCI_MANIFEST, "digest": "sha256:" + "2" * 64, "size": 1,
         "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
        {"mediaType": OCI_MANIFEST, "digest": "sha256:" + "3" * 64, "size": 1,
         "platform": {"os": "linux", "architecture": "amd64"}},
    ]}).encode()


def test_an_index_is_checked_against_its_digest() -> None:
    body = _index()
    manifest = parse_manifest(body, "application/json", digest(body))
    assert manifest.is_index and manifest.digest == digest(body)
    assert [p.label for p in manifest.platforms] == ["unknown/unknown", "linux/arm64/v8",
                                                     "linux/amd64"]
    assert image_platform(manifest).digest == "sha256:" + "3" * 64  # type: ignore[union-attr]
    with pytest.raises(ManifestError, match="does not match"):
        parse_manifest(body, OCI_INDEX, "sha256:" + "0" * 64)
    with pytest.raises(ManifestError, match="does not match"):
        parse_manifest(body, OCI_INDEX, None, expected="sha256:" + "0" * 64)


def test_manifest_types_by_field_header_or_shape() -> None:
    docker = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                         "config": {"digest": "sha256:" + "c" * 64}}).encode()
    parsed = parse_manifest(docker, "", None)
    assert not parsed.is_index and parsed.config_digest == "sha256:" + "c" * 64
    listed = json.dumps({"manifests": []}).encode()
    assert parse_manifest(listed, DOCKER_LIST, None).media_type == DOCKER_LIST
    assert parse_manifest(listed, "", None).media_type == OCI_INDEX  # mediaType is optional
    for bad in (b"not json", b"[]", json.dumps({"mediaType": "text/plain"}).encode()):
        with pytest.raises(ManifestError):
            parse_manifest(bad, "", None)
    with pytest.raises(ManifestError, match="larger than 4 MB"):
        parse_manifest(b" " * (MAX_MANIFEST_BYTES + 1), OCI_MANIFEST, None)


def test_labels_links_and_sources() -> None:
    config = json.dumps({"config": {"Labels": {
        "org.opencontainers.image.revision": "abc", "n": 1, "x": None}}}).encode()
    assert config_labels(config) == {"org.opencontainers.image.revision": "abc", "n": "1"}
    assert config_labels(b"{}") == {} and config_labels(b"nope") == {}
    assert next_link('</v2/acme/web/tags/list?n=2&last=b>; rel="next"') == (
        "/v2/acme/web/tags/list?n=2&last=b")
    assert next_link(None) is None and next_link('<x>; rel="prev"') is None
    assert repo_from_source("https://github.com/acme/web") == "acme/web"
    assert repo_from_source("https://ghe.acme.dev/acme/web.git") == "acme/web"
    assert repo_from_source("https://github.com/acme") is None
    assert repo_from_source(None) is None


def test_tags_are_scanned_newest_version_first() -> None:
    tags = ["latest", "main", "v1.4.2", "1.10.0", "sha-abc", "1.9.3"]
    assert sorted(tags, key=_newest_first) == ["1.10.0", "1.9.3", "v1.4.2", "main", "sha-abc",
                                               "latest"]


def test_refusals_say_which_setting_fixes_them() -> None:
    web = Repository("ghcr.io", "acme/web")
    assert str(refusal(web, 401, has_credential=False)) == (
        "registry ghcr.io answered 401 for acme/web: set CONVEYOR_REGISTRY_AUTH_FILE")
    assert "credentials for ghcr.io in CONVEYOR_REGISTRY_AUTH_FILE were refused" in str(
        refusal(web, 403, has_credential=True))
    assert "retried later" in str(refusal(web, 503, has_credential=False))
    assert str(unreachable(web, "did not answer within 10s")) == (
        "registry ghcr.io did not answer within 10s for acme/web: check the network or "
        "CONVEYOR_REGISTRY_ENDPOINTS")
