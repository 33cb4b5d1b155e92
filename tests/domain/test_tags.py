"""Tag policies, versions derived from tags, and version ordering."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.regex_safety import check_regex_safety
from bot.domain.tags import (
    TagPolicy,
    compare_versions,
    is_newer,
    sort_key,
    tag_prefix,
    version_from_tag,
)


@pytest.mark.parametrize(
    ("tag", "version"),
    [
        ("v1.4.2", "1.4.2"),
        ("web-v1.4.2", "1.4.2"),
        ("web/1.4.2", "1.4.2"),
        ("web/v1.4.2", "1.4.2"),
        ("web-1.4.2", "1.4.2"),
        ("@acme/web@1.4.2", "1.4.2"),
        ("1.4.2", "1.4.2"),
        ("v1.4.2-rc.1", "1.4.2-rc.1"),
        ("web-v1.4.2-rc.1+build.7", "1.4.2-rc.1+build.7"),
        ("1.2.3-1.2.4", "1.2.3-1.2.4"),  # a whole-tag semver wins over a prefix split
        ("my-api-v2.0.0", "2.0.0"),
        ("v2024.01", "2024.01"),
        ("v20240101", "20240101"),
        ("vnext", "vnext"),
        ("latest", "latest"),
        ("web-v1.4", "web-v1.4"),
        ("01.2.3", "01.2.3"),
        ("", ""),
    ],
)
def test_version_from_tag(tag: str, version: str) -> None:
    assert version_from_tag(tag) == version


SEMVER_TABLE = [
    ("semver:^1.4", "v1.4.2", True),
    ("semver:^1.4", "1.9.0", True),
    ("semver:^1.4", "web-v1.4.2", True),
    ("semver:^1.4", "web/1.4.2", True),
    ("semver:^1.4", "1.3.9", False),
    ("semver:^1.4", "2.0.0", False),
    ("semver:^1.4", "1.5.0-rc.1", False),  # prereleases only when the range names one
    ("semver:^1.4", "latest", False),
    ("semver:~1.4", "1.4.9", True),
    ("semver:~1.4", "1.5.0", False),
    ("semver:*", "0.0.1", True),
    ("semver:*", "1.0.0-rc.1", False),
    ("semver:*", "sha-abc123", False),
    ("semver:>=1.2 <2", "1.10.0", True),
    ("semver:^1.4.0-rc.1", "1.4.0-rc.2", True),
    ("semver:^1.4.0-rc.1", "1.4.0-beta", False),  # beta < rc.1
    ("semver:^1.4.0-rc.1", "1.5.0-rc.1", False),  # another major.minor.patch
    ("semver:^1.4.0-rc.1", "1.4.0", True),
    ("semver:1.2.3 - 1.4", "1.4.7", True),
    ("semver:^1 || ^3", "3.1.0", True),
    ("semver:^1 || ^3", "2.1.0", False),
    ("semver:=1.2.3", "v1.2.3+build.9", True),
]


@pytest.mark.parametrize(("policy", "tag", "admitted"), SEMVER_TABLE)
def test_semver_policy(policy: str, tag: str, admitted: bool) -> None:
    assert TagPolicy.parse(policy).admits(tag) is admitted


@pytest.mark.parametrize(
    ("policy", "tag", "admitted"),
    [
        (r"regexp:release-\d{8}", "release-20260101", True),
        (r"regexp:release-\d{8}", "release-2026010", False),
        (r"regexp:release-\d{8}", "xrelease-20260101", False),  # full match, not search
        (r"regexp:\d+\.\d+\.\d+", "v1.4.2", True),  # the version derived from the tag matches
        (r"regexp:v\d+\.\d+\.\d+", "v1.4.2", True),
        (r"regexp:v\d+\.\d+\.\d+", "1.4.2", False),
        (r"regexp:[a-z]+(-[a-z]+)*", "a" * 128, True),
        (r"regexp:[a-z]+(-[a-z]+)*", "a" * 129, False),  # input bounded to 128 characters
        ("any", "whatever-1", True),
        ("any", "", False),
        ("any", "x" * 129, False),
    ],
)
def test_regexp_and_any(policy: str, tag: str, admitted: bool) -> None:
    assert TagPolicy.parse(policy).admits(tag) is admitted


@pytest.mark.parametrize(
    "text", ["semver:^1.4", "semver:*", "regexp:release-.+", "any", "semver:>=1.2 <2"]
)
def test_str_round_trip(text: str) -> None:
    policy = TagPolicy.parse(text)
    assert str(policy) == text
    assert TagPolicy.parse(str(policy)) == policy


def test_parse_results() -> None:
    assert TagPolicy.parse("semver:^1.4") == TagPolicy("semver", "^1.4")
    assert TagPolicy.parse(" any ") == TagPolicy("any", "")
    assert TagPolicy.parse("regexp:x+").kind == "regexp"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "latest",
            'invalid tag policy \'latest\': use "semver:<range>", "regexp:<pattern>" or "any"',
        ),
        (
            "glob:*",
            'invalid tag policy \'glob:*\': use "semver:<range>", "regexp:<pattern>" or "any"',
        ),
        ("semver:banana", "invalid semver range 'banana': Invalid comparator: banana"),
        ("semver:>=2 <1", "semver range '>=2 <1' matches no version"),
        ("semver:<0.0.0", "semver range '<0.0.0' matches no version"),
        ("regexp:", 'regexp tag policy needs a pattern after "regexp:"'),
        (
            "regexp:[a-",
            "invalid regular expression '[a-': unterminated character set at position 0",
        ),
        ("regexp:" + "a" * 257, "regular expression is longer than 256 characters"),
        (
            "regexp:(a*)*b",
            "regular expression '(a*)*b' risks catastrophic backtracking: nested quantifiers "
            "(such as (a+)+ or (a*)*)",
        ),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        TagPolicy.parse(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a+)+$",
        r"(a*)*",
        r"(a|aa)+",
        r"(a|a)*",
        r"(a?)+",
        r"(x+x+)+y",
        r"(.+\.)+",
        r"(\w+\d*)+",
        r"((ab)*)+",
        r"(a{1,5})+",
        r"(.*a){20}",
        r".*.*=.*",
        r".*-.*-.*",
        r"(.*)(.*)(.*)",
        r"\w+\d*\w+",
        r"(a?){3}",
        r"(.{1,3}(-?|\d)){3}",
        r"[ab]{3}.+(.+(-?\w{2,}|[^b]{2,}).+)x+",
        r"x*(b{1,3}[ab]*[ab].+|.*((.?){3}){3}b{1,3})?b{2,}",
        r"(a|)+",
    ],
)
def test_catastrophic_patterns_rejected(pattern: str) -> None:
    with pytest.raises(ValueError, match="catastrophic backtracking"):
        check_regex_safety(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"v\d+\.\d+\.\d+",
        r"^v?\d+(\.\d+)*$",
        r"[a-z]+(-[a-z]+)*",
        r"(\d+\.){2}\d+",
        r"(\d{1,3}\.){3}\d{1,3}",
        r"(foo|bar)+",
        r"release-[0-9a-f]{7,40}",
        r".*-.*",
        r"(?:main|release)-\d+",
        r"(a+b)+",
        r".*-.*",
        r"\d+\d*",
        r"(\w+)-(\w+)-(\w+)-(\w+)",
        r"v\d+\.\d+\.\d+(-rc\.\d+)?",
    ],
)
def test_safe_patterns_accepted(pattern: str) -> None:
    check_regex_safety(pattern)


def test_version_order() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "v1.0.0",
        "web-v1.0.1",
        "1.2.0",
        "1.10.0",
        "web/2.0.0",
    ]
    assert sorted(reversed(ordered), key=lambda t: sort_key(t) or ()) == ordered
    for low, high in itertools.pairwise(ordered):
        assert compare_versions(low, high) == -1
        assert compare_versions(high, low) == 1
    assert compare_versions("v1.2.3", "web-1.2.3+build.5") == 0


def test_non_semver_tags_have_no_order() -> None:
    assert sort_key("latest") is None
    assert compare_versions("latest", "1.0.0") is None
    assert compare_versions("1.0.0", "sha-1234") is None


@pytest.mark.parametrize(("tag", "than", "newer"), [
    ("1.3.0", "1.2.0", True),
    ("v1.10.0", "1.9.0", True),
    ("1.2.0", "1.2.0", False),
    ("1.1.0", "1.2.0", False),
    (None, "1.2.0", False),
    ("", "1.2.0", False),
    ("latest", "1.2.0", False),
])
def test_is_newer(tag: str | None, than: str, newer: bool) -> None:
    assert is_newer(tag, than) is newer
    assert compare_versions("1.0.0", "1.0.1") == -1
    assert sort_key("v1.0.0") == sort_key("1.0.0")


VERSIONS = st.tuples(
    st.integers(0, 50),
    st.integers(0, 50),
    st.integers(0, 50),
    st.lists(
        st.one_of(st.integers(0, 20).map(str), st.sampled_from(["alpha", "beta", "rc"])), max_size=3
    ),
).map(lambda t: f"{t[0]}.{t[1]}.{t[2]}" + ("-" + ".".join(t[3]) if t[3] else ""))


@given(VERSIONS, VERSIONS)
def test_compare_matches_node_semver(a: str, b: str) -> None:
    import nodesemver

    assert compare_versions(a, b) == nodesemver.compare(a, b, False)


@given(VERSIONS, st.sampled_from(["v", "web-v", "web/", "api-", "@x/y@"]))
def test_prefixes_do_not_change_the_version(version: str, prefix: str) -> None:
    assert version_from_tag(prefix + version) == version


@pytest.mark.parametrize(
    ("tag", "prefix"),
    [
        ("web-v1.4.2", "web"),
        ("web/1.4.2", "web"),
        ("@acme/web@1.4.2", "@acme/web"),
        ("my-api-v2.0.0", "my-api"),
        ("v1.4.2", None),
        ("1.2.3-1.2.4", None),
        ("latest", None),
    ],
)
def test_tag_prefix(tag: str, prefix: str | None) -> None:
    assert tag_prefix(tag) == prefix


def test_malformed_policy_built_directly_admits_nothing() -> None:
    assert TagPolicy("semver", "banana").admits("1.0.0") is False
    assert TagPolicy("regexp", r"v\d+").admits("v12") is True
