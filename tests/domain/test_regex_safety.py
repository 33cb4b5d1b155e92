"""The backtracking analysis of `regexp:` tag policies on the regular-expression constructs the
main table (test_tags.py) does not use: character categories and negated sets, lookarounds,
back-references and conditionals, atomic groups and possessive repeats."""

from __future__ import annotations

import pytest

from bot.domain.policy import PolicyError, load_policy
from bot.domain.regex_safety import check_regex_safety
from tests.domain.test_policy_errors import HEAD

NESTED = "nested quantifiers (such as (a+)+ or (a*)*)"
ALTERNATIVES = "repeated alternatives that can match the same text (such as (a|aa)+)"
CHAIN = ("more than two unbounded quantifiers in a row that can match the same characters "
         "(such as .*-.*-.*)")


@pytest.mark.parametrize(("pattern", "problem"), [
    (r"(\s+)+x", NESTED),
    (r"(\S+)+", NESTED),
    (r"([^a]+)+", NESTED),
    (r"([a-z0-9]+)+", NESTED),
    (r"(?=a)(a+)+", NESTED),
    (r"(\w+\s?)+$", NESTED),
    # an atomic group or a possessive repeat is judged like any group (conservatively)
    (r"(?>a+)+", NESTED),
    (r"(a+)++", NESTED),
    (r"(?:a|$)+", ALTERNATIVES),
    (r"\d{2,30}\d{2,30}\d{2,30}", CHAIN),
])
def test_refused(pattern: str, problem: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_regex_safety(pattern)
    assert str(refused.value) == (f"regular expression {pattern!r} risks catastrophic "
                                  f"backtracking: {problem}")


@pytest.mark.parametrize("pattern", [
    r"(\d|\w)+",  # one character set: a single way to match
    r"(?<=v)\d+",
    r"(?!a)b+",
    r"(a)\1+",
    r"(a)(?(1)b|c)+",
    r"[^-]+-[^-]+",
    r"(?:v|V)\d+\.\d+",
    r"(?:\bv)?\d+",
    r"[\W]+x",
])
def test_accepted(pattern: str) -> None:
    check_regex_safety(pattern)


def test_too_long_or_invalid() -> None:
    with pytest.raises(ValueError) as long:
        check_regex_safety("a" * 257)
    assert str(long.value) == "regular expression is longer than 256 characters"
    with pytest.raises(ValueError) as invalid:
        check_regex_safety("(")
    assert str(invalid.value) == ("invalid regular expression '(': missing ), unterminated "
                                  "subpattern at position 0")


def test_an_atomic_group_in_a_policy_is_a_policy_error() -> None:
    # it used to end the policy reading with a TypeError
    text = HEAD.replace("    source: acme/web\n",
                        '    source: acme/web\n    tags: "regexp:(?>v+)+"\n')
    with pytest.raises(PolicyError) as refused:
        load_policy(text)
    assert [(i.line, i.column, i.message) for i in refused.value.issues] == [
        (7, 11, "services.web.tags: regular expression '(?>v+)+' risks catastrophic "
                "backtracking: " + NESTED)]
    accepted = load_policy(HEAD.replace("    source: acme/web\n",
                                        '    source: acme/web\n    tags: "regexp:v(?>\\\\d+)"\n'))
    assert str(accepted.services["web"].tags) == "regexp:v(?>\\d+)"
