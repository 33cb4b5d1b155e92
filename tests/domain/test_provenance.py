"""Pure provenance: reading SLSA v1 statements, cross-checks, tag guesses, compare text."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from bot.domain.provenance import (
    SLSA_PROVENANCE_V1,
    AttestedBuild,
    Link,
    attestation_problem,
    build_from_attestations,
    build_from_statement,
    compare_text,
    previous_git_tags,
    repo_from_url,
)

SHA = "a" * 40


def statement(*, repository: str | None = "https://github.com/acme/web", commit: str = SHA,
              path: str = ".github/workflows/release.yml", ref: str = "refs/tags/v1.4.2",
              run: str | None = "https://github.com/acme/web/actions/runs/77/attempts/1",
              predicate_type: str = SLSA_PROVENANCE_V1, uri: str | None = None
              ) -> dict[str, Any]:
    workflow: dict[str, Any] = {"path": path, "ref": ref}
    if repository is not None:
        workflow["repository"] = repository
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "predicateType": predicate_type,
        "predicate": {
            "buildDefinition": {
                "externalParameters": {"workflow": workflow},
                "resolvedDependencies": [
                    {"uri": "pkg:npm/left-pad"},
                    {"uri": uri or f"git+https://github.com/acme/web@{ref}",
                     "digest": {"gitCommit": commit}},
                ],
            },
            "runDetails": {"metadata": {"invocationId": run} if run else {}},
        },
    }


def answer(*statements: dict[str, Any] | str) -> dict[str, Any]:
    items = []
    for item in statements:
        raw = item if isinstance(item, str) else json.dumps(item)
        payload = raw if isinstance(item, str) else base64.b64encode(raw.encode()).decode()
        items.append({"bundle": {"dsseEnvelope": {"payload": payload}}})
    return {"attestations": items}


def test_reads_repository_commit_workflow_and_run() -> None:
    build = build_from_attestations(answer(statement()))
    assert build == AttestedBuild(
        repository="acme/web", commit=SHA, workflow_path=".github/workflows/release.yml",
        workflow_ref="refs/tags/v1.4.2",
        run_url="https://github.com/acme/web/actions/runs/77/attempts/1",
    )
    assert build.run_id == "77"


def test_skips_other_predicates_and_broken_envelopes() -> None:
    sbom = statement(predicate_type="https://spdx.dev/Document")
    build = build_from_attestations(answer("not base64!", sbom,
                                           statement(repository="https://github.com/acme/api")))
    assert build is not None and build.repository == "acme/api"
    assert build_from_attestations(answer(sbom)) is None
    assert build_from_attestations({"attestations": []}) is None
    assert build_from_attestations([]) is None
    assert build_from_attestations(answer(base64.b64encode(b"[1, 2]").decode())) is None


def test_repository_from_the_dependency_when_the_workflow_names_none() -> None:
    build = build_from_statement(statement(
        repository=None, uri="git+https://ghe.example/acme/mono.git@refs/heads/main"))
    assert build is not None
    assert (build.repository, build.commit) == ("acme/mono", SHA)


def test_missing_parts_stay_unknown() -> None:
    build = build_from_statement({"predicate": {}})
    assert build == AttestedBuild(None, None, None, None, None)
    assert build.run_id is None
    assert build_from_statement({"predicate": "nonsense"}) is None
    assert AttestedBuild(None, None, None, None, "https://x/acme/web/actions").run_id is None
    no_run = build_from_statement(statement(run=None))
    assert no_run is not None and no_run.run_url is None


@pytest.mark.parametrize(("url", "expected"), [
    ("https://github.com/acme/web", "acme/web"),
    ("https://github.com/acme/web/tree/main", "acme/web"),
    ("http://127.0.0.1:8080/acme/web.git", "acme/web"),
    ("https://github.com/acme", None),
    ("acme/web", None),
    ("", None),
])
def test_repo_from_url(url: str, expected: str | None) -> None:
    assert repo_from_url(url) == expected


def test_attestation_problems() -> None:
    ok = attestation_problem(attested_repo="ACME/web", attested_commit=SHA,
                             expected_repo="acme/web", expected_commit=SHA)
    assert ok is None
    other_repo = attestation_problem(attested_repo="acme/fork", attested_commit=SHA,
                                     expected_repo="acme/web", expected_commit=SHA)
    assert other_repo == ("the attestation says the image was built from acme/fork, "
                          "but the policy's source is acme/web")
    other_commit = attestation_problem(attested_repo="acme/web", attested_commit="b" * 40,
                                       expected_repo="acme/web", expected_commit=SHA)
    assert other_commit == ("the attestation names commit bbbbbbbbbbbb, "
                            "but the release points at aaaaaaaaaaaa")
    unknown_commit = attestation_problem(attested_repo="acme/web", attested_commit="b" * 40,
                                         expected_repo="acme/web", expected_commit=None)
    assert unknown_commit is None


@pytest.mark.parametrize(("previous", "release_tag", "version", "expected"), [
    ("1.4.1", "v1.4.2", "1.4.2", ["v1.4.1", "1.4.1"]),
    ("1.4.1", "web-v1.4.2", "1.4.2", ["web-v1.4.1", "1.4.1", "v1.4.1"]),
    ("v1.4.1", "v1.4.2", "1.4.2", ["v1.4.1"]),
    ("1.4.1", "1.4.2", "1.4.2", ["1.4.1", "v1.4.1"]),
    ("1.4.1", None, "1.4.2", ["1.4.1", "v1.4.1"]),
    ("1.4.1", "release-2", "1.4.2", ["1.4.1", "v1.4.1"]),
])
def test_previous_git_tags(previous: str, release_tag: str | None, version: str,
                           expected: list[str]) -> None:
    assert previous_git_tags(previous, release_tag, version) == expected


@pytest.mark.parametrize(("ahead", "behind", "expected"), [
    (3, 0, "v1...v2 (3 commits)"),
    (1, 0, "v1...v2 (1 commit)"),
    (0, 2, "v1...v2 (2 commits back)"),
    (0, 1, "v1...v2 (1 commit back)"),
    (0, 0, "v1...v2 (0 commits)"),
    (2, None, "v1...v2 (2 commits)"),
    (None, None, "v1...v2"),
])
def test_compare_text(ahead: int | None, behind: int | None, expected: str) -> None:
    assert compare_text("v1", "v2", ahead, behind) == expected


def test_link_markdown() -> None:
    assert Link("v1.4.2", "https://x/r").markdown() == "[v1.4.2](https://x/r)"
    assert Link("v1.4.2").markdown() == "v1.4.2"


def test_source_from_labels_reads_githubs_all_labels_and_flat_keys() -> None:
    from bot.promotion.opening.candidates import source_from_labels

    nested = {"all_labels": {"org.opencontainers.image.source": "https://github.com/acme/web",
                             "org.opencontainers.image.revision": "a" * 40}}
    assert source_from_labels(nested) == ("acme/web", "a" * 40)
    flat = {"source": "https://github.com/acme/web.git", "revision": "b" * 40}
    assert source_from_labels(flat) == ("acme/web", "b" * 40)
    assert source_from_labels({}) == (None, None)
