"""Every class of policy validation error, with its exact message and position."""

from __future__ import annotations

import textwrap

import pytest

from bot.domain.policy import PolicyError, PolicyIssue, load_policy

HEAD = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
environments:
  - name: staging
    path: apps/{service}/staging.yaml
"""  # lines 1-9; cases append from line 10 on


def issues_of(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(PolicyError) as caught:
        load_policy(textwrap.dedent(text))
    return [(i.line, i.column, i.message) for i in caught.value.issues]


CASES: list[tuple[str, str, list[tuple[int, int, str]]]] = [
    (
        "unknown key with suggestion",
        HEAD + "  - name: production\n    path: p.yaml\n    after: staging\n    aprovals: 1\n",
        [(13, 5, "environments[1].aprovals: unknown key (did you mean 'approvals'?)")],
    ),
    (
        "unknown top-level key without a close match",
        HEAD + "colour: blue\n",
        [
            (
                10,
                1,
                "colour: unknown key (expected one of: version, allowed_images, services, "
                "environments, kubernetes_version, groups)",
            )
        ],
    ),
    (
        "wrong type",
        HEAD.replace("  - name: staging\n", "  - name: staging\n    auto_merge: yes\n"),
        [(9, 17, "environments[0].auto_merge: expected true or false, got string")],
    ),
    (
        "integer where a string is expected",
        HEAD.replace("source: acme/web", "source: 42"),
        [(6, 13, "services.web.source: expected a repository as owner/repo, got integer")],
    ),
    (
        "missing required keys",
        "version: 1\nallowed_images: [ghcr.io/acme/]\n",
        [
            (1, 1, "missing required key 'environments'"),
            (1, 1, "missing required key 'services'"),
        ],
    ),
    (
        "unsupported version",
        HEAD.replace("version: 1", "version: 2"),
        [(1, 10, "version: must be 1, not 2")],
    ),
    (
        "after names an unknown environment",
        HEAD + "  - name: production\n    path: p.yaml\n    after: stagin\n",
        [(12, 12, "environments[1].after: unknown environment 'stagin' (did you mean 'staging'?)")],
    ),
    (
        "cycle in after",
        HEAD
        + "  - name: a\n    path: a.yaml\n    after: b\n"
        + "  - name: b\n    path: b.yaml\n    after: a\n",
        [(12, 12, "environments[1].after: cycle in 'after': a → b → a")],
    ),
    (
        "environment after itself",
        HEAD + "  - name: qa\n    path: qa.yaml\n    after: qa\n",
        [(12, 12, "environments[1].after: an environment cannot come after itself")],
    ),
    (
        "duplicate environment",
        HEAD + "  - name: Staging\n    path: s2.yaml\n",
        [
            (
                10,
                11,
                "environments[1].name: duplicate environment 'Staging' (first defined at line 8)",
            )
        ],
    ),
    (
        "duplicate key",
        HEAD.replace("    source: acme/web\n", "    source: acme/web\n    source: acme/api\n"),
        [(7, 5, "duplicate key 'source' (first defined at line 6)")],
    ),
    (
        "path with ..",
        HEAD.replace("apps/{service}/staging.yaml", "apps/../../etc/{service}.yaml"),
        [
            (
                9,
                11,
                "environments[0].path: path 'apps/../../etc/{service}.yaml' leaves the "
                "repository: '..' is not allowed",
            )
        ],
    ),
    (
        "absolute path override",
        HEAD.replace(
            "    source: acme/web\n",
            "    source: acme/web\n    paths:\n      staging: /etc/passwd\n",
        ),
        [
            (
                8,
                16,
                "services.web.paths.staging: path '/etc/passwd' is absolute: write it relative "
                "to the repository root",
            )
        ],
    ),
    (
        "backslash in path",
        HEAD.replace("apps/{service}/staging.yaml", "'apps\\{service}\\s.yaml'"),
        [
            (
                9,
                11,
                "environments[0].path: path 'apps\\\\{service}\\\\s.yaml' contains a "
                "backslash: use '/' between directories",
            )
        ],
    ),
    (
        "unknown placeholder",
        HEAD.replace("apps/{service}/staging.yaml", "apps/{name}/staging.yaml"),
        [
            (
                9,
                11,
                "environments[0].path: unknown placeholder {name} in path "
                "'apps/{name}/staging.yaml': only {service} and {env} are allowed",
            )
        ],
    ),
    (
        "paths override for an unknown environment",
        HEAD.replace(
            "    source: acme/web\n", "    source: acme/web\n    paths:\n      stageing: x.yaml\n"
        ),
        [
            (
                8,
                7,
                "services.web.paths.stageing: unknown environment 'stageing' "
                "(did you mean 'staging'?)",
            )
        ],
    ),
    (
        "tag_key naming another part of the image",
        HEAD.replace("    source: acme/web\n", "    source: acme/web\n    tag_key: digest\n"),
        [
            (
                7,
                14,
                "services.web.tag_key: 'digest' is not a key a chart reads the tag from; write "
                "the key beside repository in the values, such as version or imageTag",
            )
        ],
    ),
    (
        "tag_key of the wrong type",
        HEAD.replace("    source: acme/web\n", "    source: acme/web\n    tag_key: [version]\n"),
        [(7, 14, "services.web.tag_key: expected a Helm values key such as version, got list")],
    ),
    (
        "bad semver range",
        HEAD.replace(
            "    source: acme/web\n", '    source: acme/web\n    tags: "semver:^1.x.banana"\n'
        ),
        [
            (
                7,
                11,
                "services.web.tags: invalid semver range '^1.x.banana': Invalid comparator: "
                "^1.x.banana",
            )
        ],
    ),
    (
        "semver range that matches nothing",
        HEAD.replace("    source: acme/web\n", '    source: acme/web\n    tags: "semver:>=2 <1"\n'),
        [(7, 11, "services.web.tags: semver range '>=2 <1' matches no version")],
    ),
    (
        "bad regexp",
        HEAD.replace(
            "    source: acme/web\n", '    source: acme/web\n    tags: "regexp:v(\\\\d+"\n'
        ),
        [
            (
                7,
                11,
                "services.web.tags: invalid regular expression 'v(\\\\d+': missing ), "
                "unterminated subpattern at position 1",
            )
        ],
    ),
    (
        "catastrophic regexp",
        HEAD.replace("    source: acme/web\n", '    source: acme/web\n    tags: "regexp:(a+)+$"\n'),
        [
            (
                7,
                11,
                "services.web.tags: regular expression '(a+)+$' risks catastrophic "
                "backtracking: nested quantifiers (such as (a+)+ or (a*)*)",
            )
        ],
    ),
    (
        "overlapping alternation",
        HEAD.replace(
            "    source: acme/web\n", '    source: acme/web\n    tags: "regexp:(a|aa)+"\n'
        ),
        [
            (
                7,
                11,
                "services.web.tags: regular expression '(a|aa)+' risks catastrophic "
                "backtracking: repeated alternatives that can match the same text "
                "(such as (a|aa)+)",
            )
        ],
    ),
    (
        "bad duration",
        HEAD + "  - name: production\n    path: p.yaml\n    after: staging\n    soak: 30 minutes\n",
        [
            (
                13,
                11,
                "environments[1].soak: invalid duration '30 minutes': use 0 or a number with "
                "units d, h, m, s in that order, such as 45s, 30m, 1h30m or 2d",
            )
        ],
    ),
    (
        "duration above the maximum",
        HEAD + "  - name: production\n    path: p.yaml\n    after: staging\n    soak: 31d\n",
        [(13, 11, "environments[1].soak: duration '31d' is longer than the maximum of 30d")],
    ),
    (
        "bad approver",
        HEAD
        + "  - name: production\n    path: p.yaml\n    after: staging\n    approvals: 1\n"
        + "    approvers: [-bob, '@acme']\n",
        [
            (
                14,
                17,
                "environments[1].approvers: invalid GitHub login '-bob': up to 39 letters, "
                "digits or single hyphens, not starting or ending with a hyphen (teams are "
                "written @org/team-slug)",
            ),
            (
                14,
                23,
                "environments[1].approvers: invalid team '@acme': write a team as @org/team-slug",
            ),
        ],
    ),
    (
        "more approvals than listed approvers",
        HEAD
        + "  - name: production\n    path: p.yaml\n    after: staging\n    approvals: 2\n"
        + "    approvers: [alice]\n",
        [
            (
                13,
                16,
                "environments[1].approvals: 2 approvals required but only 1 approver(s) "
                "listed, so the gate could never pass",
            )
        ],
    ),
    (
        "bad freeze window",
        HEAD
        + '    freeze: ["Fri 16:00 - Mon 25:00 Europe/Berlin", '
        + '"Fri 16:00 - Mon 08:00 Mars/Base"]\n',
        [
            (
                10,
                14,
                "environments[0].freeze: invalid time '25:00': use 24-hour HH:MM between "
                "00:00 and 23:59",
            ),
            (
                10,
                53,
                "environments[0].freeze: unknown time zone 'Mars/Base': use an IANA name "
                "such as Europe/Berlin or UTC",
            ),
        ],
    ),
    (
        "freeze window at the end of the calendar",
        HEAD + '    freeze: ["9999-12-30 - 9999-12-31"]\n',
        [
            (
                10,
                14,
                "environments[0].freeze: invalid date '9999-12-31': use a date between "
                "0001-01-02 and 9999-12-30",
            )
        ],
    ),
    (
        "image not under allowed_images",
        HEAD.replace("image: ghcr.io/acme/web", "image: docker.io/evil/web"),
        [
            (
                5,
                12,
                "services.web.image: 'docker.io/evil/web' is not under any prefix of "
                "allowed_images (ghcr.io/acme/); add its prefix there or fix the name",
            )
        ],
    ),
    (
        "image with a tag",
        HEAD.replace("image: ghcr.io/acme/web", "image: ghcr.io/acme/web:1.0"),
        [
            (
                5,
                12,
                "services.web.image: image 'ghcr.io/acme/web:1.0' must be a name without tag "
                "or digest, such as ghcr.io/acme/web",
            )
        ],
    ),
    (
        "from on a gated environment and promote on an entry environment",
        HEAD
        + "    promote: auto\n"
        + "  - name: production\n    path: p.yaml\n    after: staging\n    from: release\n",
        [
            (
                10,
                5,
                "environments[0].promote: only applies to gated environments (those with 'after')",
            ),
            (
                14,
                5,
                "environments[1].from: only applies to entry environments; this one is gated "
                "by 'after' and is opened by /promote or promote: auto",
            ),
        ],
    ),
    (
        "bad choice values",
        HEAD + "    from: releases\n    merge_method: fast-forward\n",
        [
            (
                10,
                11,
                "environments[0].from: must be one of release, package, any, not 'releases' "
                "(did you mean 'release'?)",
            ),
            (
                11,
                19,
                "environments[0].merge_method: must be one of squash, merge, rebase, not "
                "'fast-forward'",
            ),
        ],
    ),
    (
        "bad evidence and approvals out of range",
        HEAD
        + "  - name: production\n    path: p.yaml\n    after: staging\n"
        + "    evidence: [merged, tested]\n    approvals: 11\n",
        [
            (
                13,
                24,
                "environments[1].evidence: unknown evidence 'tested'; use merged and/or deployed",
            ),
            (14, 16, "environments[1].approvals: must be between 0 and 10, not 11"),
        ],
    ),
    (
        "bad source repository",
        HEAD.replace("source: acme/web", "source: acme"),
        [(6, 13, "services.web.source: invalid repository 'acme': write it as owner/repo")],
    ),
    (
        "empty allowed_images",
        HEAD.replace('allowed_images: ["ghcr.io/acme/"]', "allowed_images: []"),
        [
            (
                2,
                17,
                'allowed_images: list 1 to 100 image prefixes, such as "ghcr.io/acme/"',
            )
        ],
    ),
    (
        "two environments share a file",
        HEAD + "  - name: production\n    path: apps/{service}/staging.yaml\n    after: staging\n",
        [
            (
                11,
                11,
                "environments[1].path: same path as environment 'staging'; each environment "
                "needs its own file (use {env} or a different directory)",
            )
        ],
    ),
    (
        "override sends two environments to one file",
        HEAD.replace(
            "    source: acme/web\n",
            "    source: acme/web\n    paths:\n      production: apps/web/staging.yaml\n",
        )
        + "  - name: production\n    path: apps/{service}/prod.yaml\n    after: staging\n",
        [
            (
                8,
                19,
                "services.web.paths.production: 'apps/web/staging.yaml' is also the file of "
                "environment 'staging'; each environment needs its own file",
            )
        ],
    ),
    (
        "an environment with a bad name is still checked",
        HEAD + "  - name: 'prod env'\n    path: p.yaml\n    merge_method: ff\n",
        [
            (
                10,
                11,
                "environments[1].name: invalid environment name 'prod env': use 1-63 letters, "
                "digits, '.', '_' or '-', starting with a letter or digit",
            ),
            (
                12,
                19,
                "environments[1].merge_method: must be one of squash, merge, rebase, not 'ff'",
            ),
        ],
    ),
    (
        "reserved environment name",
        HEAD + "  - name: rollback\n    path: r.yaml\n",
        [
            (
                10,
                11,
                "environments[1].name: 'rollback' is reserved (Conveyor uses it in branch names)",
            )
        ],
    ),
    (
        "gate-only keys on an entry environment",
        HEAD + "    approvals: 1\n    soak: 5m\n",
        [
            (
                10,
                5,
                "environments[0].approvals: only applies to gated environments (those with "
                "'after')",
            ),
            (
                11,
                5,
                "environments[0].soak: only applies to gated environments (those with 'after')",
            ),
        ],
    ),
    (
        "approvers without approvals, deployed_context without deployed evidence",
        HEAD
        + "  - name: production\n    path: p.yaml\n    after: staging\n"
        + "    approvers: [alice]\n    deployed_context: argocd/staging\n",
        [
            (
                13,
                5,
                "environments[1].approvers: has no effect while approvals is 0; set "
                "approvals: 1 or more",
            ),
            (
                14,
                23,
                "environments[1].deployed_context: only used with evidence: [deployed]; add "
                "'deployed' to evidence",
            ),
        ],
    ),
    (
        "two services with the same image",
        HEAD.replace(
            "environments:\n",
            "  web2:\n    image: GHCR.io/acme/web\n    source: acme/web\nenvironments:\n",
        ),
        [
            (
                8,
                12,
                "services.web2.image: 'GHCR.io/acme/web' is already the image of service 'web'",
            )
        ],
    ),
    (
        "missing required service keys and a bad service name",
        HEAD.replace("environments:\n", "  bad/name:\n    tags: any\nenvironments:\n"),
        [
            (
                7,
                3,
                "services.bad/name: invalid service name 'bad/name': use 1-63 letters, digits, "
                "'.', '_' or '-', starting with a letter or digit",
            ),
            (8, 5, "services.bad/name: missing required key 'image' (or 'chart' for a Helm chart)"),
            (8, 5, "services.bad/name: missing required key 'source'"),
        ],
    ),
    (
        "not a mapping",
        "- just\n- a list\n",
        [
            (
                1,
                1,
                "the policy must be a mapping with the keys version, allowed_images, services "
                "and environments",
            )
        ],
    ),
    (
        "several errors at once",
        """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: quay.io/acme/web
    source: acme/web
    tag: "semver:^1"
environments:
  - name: staging
    path: /abs/{service}.yaml
  - name: production
    path: apps/{service}/prod.yaml
    after: stage
    soak: -5m
""",
        [
            (
                5,
                12,
                "services.web.image: 'quay.io/acme/web' is not under any prefix of "
                "allowed_images (ghcr.io/acme/); add its prefix there or fix the name",
            ),
            (7, 5, "services.web.tag: unknown key (did you mean 'tags'?)"),
            (
                10,
                11,
                "environments[0].path: path '/abs/{service}.yaml' is absolute: write it "
                "relative to the repository root",
            ),
            (
                13,
                12,
                "environments[1].after: unknown environment 'stage' (did you mean 'staging'?)",
            ),
            (
                14,
                11,
                "environments[1].soak: invalid duration '-5m': use 0 or a number with "
                "units d, h, m, s in that order, such as 45s, 30m, 1h30m or 2d",
            ),
        ],
    ),
]


GROUPS_HEAD = HEAD.replace(
    "environments:", "  api:\n    image: ghcr.io/acme/api\n    source: acme/api\nenvironments:"
)  # lines 1-12; group cases append from line 13 on

CASES += [
    (
        "group with an unknown service, a duplicate and a non-string",
        GROUPS_HEAD + "groups:\n  storefront: [wbe, api, api, 3]\n",
        [
            (14, 16, "groups.storefront[0]: unknown service 'wbe' (did you mean 'web'?)"),
            (14, 26, "groups.storefront[2]: service 'api' is listed twice"),
            (14, 31, "groups.storefront[3]: expected a service name, got integer"),
        ],
    ),
    (
        "empty group, in both forms",
        GROUPS_HEAD + "groups:\n  storefront: []\n  checkout:\n    services: []\n",
        [
            (14, 15, "groups.storefront: a group needs at least one service"),
            (16, 15, "groups.checkout.services: a group needs at least one service"),
        ],
    ),
    (
        "group named like a service, and the reserved name all",
        GROUPS_HEAD + "groups:\n  Web: [api]\n  all: [web]\n",
        [
            (
                14,
                3,
                "groups.Web: 'Web' is also the name of service 'web'; /rollback and /promote "
                "could not tell them apart, so rename the group",
            ),
            (15, 3, "groups.all: 'all' is reserved (/promote <env> --all promotes every service)"),
        ],
    ),
    (
        "group names differing only in case",
        GROUPS_HEAD + "groups:\n  shop: [web]\n  Shop: [api]\n",
        [(15, 3, "groups.Shop: duplicate group (differs from 'shop' only in case)")],
    ),
    (
        "group of the wrong shape, mapping form with a typo and a wrong together",
        GROUPS_HEAD
        + "groups:\n  a: web\n  b: {servics: [web]}\n  c: {services: [web], together: yes}\n",
        [
            (
                14,
                6,
                "groups.a: expected a list of services or a mapping with services and "
                "together, got string",
            ),
            (15, 6, "groups.b: missing required key 'services'"),
            (15, 7, "groups.b.servics: unknown key (did you mean 'services'?)"),
            (16, 34, "groups.c.together: expected true or false, got string"),
        ],
    ),
    (
        "a service in two together groups",
        GROUPS_HEAD
        + "groups:\n  a: {services: [web, api], together: true}\n"
        + "  b: {services: [api], together: true}\n  c: [web, api]\n",
        [
            (
                15,
                18,
                "groups.b.services[0]: service 'api' is already in group 'a' with together: "
                "true; a service can wait for one group only",
            )
        ],
    ),
    (
        "groups must be a mapping",
        GROUPS_HEAD + "groups: [web, api]\n",
        [(13, 9, "groups: expected a mapping of group name to services, got list")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_error(text: str, expected: list[tuple[int, int, str]]) -> None:
    assert issues_of(text) == expected


def test_issue_str_and_error_message() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(HEAD + "colour: blue\n", path="deploy/.github/conveyor.yml")
    issue = caught.value.issues[0]
    assert isinstance(issue, PolicyIssue)
    assert str(issue).startswith("deploy/.github/conveyor.yml:10:1: colour: unknown key")
    assert str(caught.value) == str(issue)


def test_file_size_bound() -> None:
    text = HEAD + "#" * (256 * 1024) + "\n"
    assert issues_of(text) == [(1, 1, "the policy file is larger than 256 KiB")]


def test_environment_count_bound() -> None:
    envs = "".join(f"  - name: e{i}\n    path: e{i}.yaml\n" for i in range(21))
    text = HEAD.split("environments:")[0] + "environments:\n" + envs
    assert issues_of(text) == [
        (8, 3, "environments: at most 20 environments are supported, found 21")
    ]


def test_service_count_bound() -> None:
    services = "".join(
        f"  s{i}:\n    image: ghcr.io/acme/s{i}\n    source: acme/s{i}\n" for i in range(2001)
    )
    text = (
        'version: 1\nallowed_images: ["ghcr.io/acme/"]\nservices:\n'
        + services
        + ("environments:\n  - name: staging\n    path: a/{service}.yaml\n")
    )
    assert issues_of(text) == [(4, 3, "services: at most 2000 services are supported, found 2001")]


def test_invalid_yaml_is_positioned() -> None:
    # the wording comes from libyaml or ruamel's pure parser, whichever is installed
    [(line, column, message)] = issues_of("version: 1\nservices: [\n")
    assert (line, column) in ((2, 1), (3, 1))
    assert message.startswith("invalid YAML: ")


def test_duplicate_keys_are_reported_with_other_errors() -> None:
    text = HEAD.replace("    source: acme/web\n", "    source: acme/web\n    image: x\n") + (
        "  - name: production\n    path: p.yaml\n    after: nowhere\n    after: staging\n"
    )
    assert issues_of(text) == [
        (7, 5, "duplicate key 'image' (first defined at line 5)"),
        (13, 12, "environments[1].after: unknown environment 'nowhere'"),
        (14, 5, "duplicate key 'after' (first defined at line 13)"),
    ]


def test_single_document_only() -> None:
    assert issues_of(HEAD + "---\nversion: 1\n") == [
        (10, 1, "the policy file must hold a single YAML document")
    ]


def test_deep_nesting_is_refused_without_recursion() -> None:
    depth = 100_000
    text = "version: 1\nservices: " + "[" * depth + "]" * depth + "\n"
    assert issues_of(text) == [(2, 42, "the document is nested deeper than 32 levels")]


def test_recursive_alias() -> None:
    assert issues_of("version: 1\nservices: &s [*s]\n") == [(2, 15, "alias '*s' refers to itself")]


def test_environments_sharing_a_file_for_one_service_point_at_the_later_path() -> None:
    # no override is involved: the error belongs to the environment's own `path`
    text = HEAD + "  - name: qa\n    path: apps/web/staging.yaml\n"
    assert issues_of(text) == [
        (11, 11, "environments[1].path: 'apps/web/staging.yaml' is also the file of environment "
                 "'staging' for service 'web'; each environment needs its own file"),
    ]
    # an override of another environment does not move the blame onto a key that is not there
    overridden = HEAD.replace(
        "    source: acme/web\n",
        "    source: acme/web\n    paths:\n      production: apps/web/prod.yaml\n",
    ) + ("  - name: qa\n    path: apps/web/staging.yaml\n"
         "  - name: production\n    path: p.yaml\n")
    assert issues_of(overridden) == [
        (13, 11, "environments[1].path: 'apps/web/staging.yaml' is also the file of environment "
                 "'staging' for service 'web'; each environment needs its own file"),
    ]


def test_an_invalid_approvals_count_is_reported_once() -> None:
    text = HEAD + ("  - name: production\n    path: p.yaml\n    after: staging\n"
                   "    approvals: 11\n    approvers: [alice]\n")
    assert issues_of(text) == [(13, 16, "environments[1].approvals: must be between 0 and 10, "
                                        "not 11")]


def test_an_invalid_allowed_images_entry_hides_no_other_image_error() -> None:
    text = HEAD.replace('["ghcr.io/acme/"]', '["ghcr.io/acme/", "Not An Image!"]').replace(
        "image: ghcr.io/acme/web", "image: ghcr.io/other/web")
    assert issues_of(text) == [
        (2, 35, "allowed_images[1]: invalid image prefix 'Not An Image!': expected a registry "
                "and optional path, such as ghcr.io/acme/"),
        (5, 12, "services.web.image: 'ghcr.io/other/web' is not under any prefix of "
                "allowed_images (ghcr.io/acme/); add its prefix there or fix the name"),
    ]


@pytest.mark.parametrize(("prefix", "image"), [
    ("docker.io/weaveworksdemos/", "weaveworksdemos/carts"),
    ("docker.io/library/", "nginx"),
    ("index.docker.io/library/", "docker.io/nginx"),
    ("GHCR.io/Acme/", "ghcr.io/acme/web"),
    ("ghcr.io/acme/", "ghcr.io/Acme/Web"),
])
def test_allowed_images_compare_like_image_names(prefix: str, image: str) -> None:
    text = HEAD.replace('["ghcr.io/acme/"]', f'["{prefix}"]').replace(
        "image: ghcr.io/acme/web", f"image: {image}")
    assert load_policy(text).services["web"].image == image


def test_allowed_images_still_refuse_a_neighbour() -> None:
    text = HEAD.replace('["ghcr.io/acme/"]', '["docker.io/weaveworksdemos/"]').replace(
        "image: ghcr.io/acme/web", "image: weaveworksdemos-evil/carts")
    [(_line, _column, message)] = issues_of(text)
    assert message.startswith("services.web.image: 'weaveworksdemos-evil/carts' is not under")
