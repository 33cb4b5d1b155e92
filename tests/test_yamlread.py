"""The one YAML reader: its scalar rule, depth limit, aliases and parser verdicts, as each
reader (editor, gate, policy, config check) sees them."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bot.configcheck.documents import parse_documents
from bot.domain.policy import PolicyError, load_policy
from bot.manifests.errors import YamlSyntaxError
from bot.manifests.references import deploy_references
from bot.manifests.tree import parse_documents as parse_manifest
from bot.yamlread.data import DataBuilder, YamlMap
from bot.yamlread.nodes import MAX_DEPTH, Alias, InvalidYaml, NestedTooDeep, Scalar, parse


def data_of(text: str) -> Any:
    builder = DataBuilder()
    data = builder.build(parse(text).documents[0].root)
    assert builder.problems == []
    return data


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("true", True), ("False", False), ("yes", "yes"), ("on", "on"), ("n", "n"),
        ("null", None), ("~", None), ("", None), ("nothing", "nothing"),
        ("12", 12), ("0755", 0o755), ("0o755", 0o755), ("0x1F", 31), ("1_000", 1000),
        ("1.20", 1.2), ("-.inf", -math.inf), ("1e3", 1000.0),
        ("2024-06-27", "2024-06-27"), ("2024-06-27T10:00:00Z", "2024-06-27T10:00:00Z"),
        ("'12'", "12"), ('"true"', "true"), ("! 12", "12"), ("!!str 12", "12"),
        ("!!int '12'", 12), ("!!bool yes", True), ("!!bool maybe", "maybe"), ("!!int x", "x"),
        ("!!binary aGk=", "aGk="), ("!custom 5", "5"), ("<<", "<<"),
    ],
)
def test_one_scalar_rule(written: str, read: Any) -> None:
    value = data_of(f"k: {written}\n")["k"]
    assert value == read and type(value) is type(read)


def test_positions_merges_and_shared_aliases() -> None:
    data = data_of("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\ne: *b\n")
    assert data == {"base": {"x": 1, "y": 2}, "d": {"y": 3, "x": 1}, "e": {"x": 1, "y": 2}}
    assert data["e"] is data["base"]  # shared, not copied
    derived = data["d"]
    assert isinstance(derived, YamlMap)
    assert derived.key_pos["y"] == (4, 3) and derived.key_pos["x"] == (1, 11)  # where written
    assert data.value_pos["e"] == (5, 4)  # the alias itself


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", "duplicate key 'a' (first defined at line 1)"),
        ("a: {<<: [{b: 1}, 2]}\n", "a merge key '<<' needs a mapping"),
        ("a: &x {b: *x}\n", "alias '*x' refers to itself"),
        ("a: *nowhere\n", "alias '*nowhere' has no anchor before it"),
    ],
)
def test_problems_are_positioned_and_shared_by_the_policy_and_the_config_check(
    text: str, message: str
) -> None:
    builder = DataBuilder()
    builder.build(parse(text).documents[0].root)
    [problem] = builder.problems
    assert problem.message == message
    assert [p.message for p in parse_documents(text).problems] == [message]
    with pytest.raises(PolicyError) as caught:
        load_policy(text, ".github/conveyor.yml")
    assert message in str(caught.value)


def test_an_alias_bomb_stops_at_the_budget() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n"
        for i in range(3))
    builder = DataBuilder(max_nodes=5_000)
    builder.build(parse(bomb).documents[0].root)
    assert builder.fatal and builder.problems[-1].message == (
        "the file expands to more than 5000 values")


def test_depth_is_one_limit_with_the_policy_asking_for_less() -> None:
    ok = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    parse(ok)
    with pytest.raises(NestedTooDeep) as caught:
        parse(ok, max_depth=32)
    assert (caught.value.line, caught.value.column) == (1, 34)
    deep = "a: " + "[" * 100_000 + "]" * 100_000 + "\n"  # no recursion anywhere
    with pytest.raises(YamlSyntaxError, match="nested deeper than 64 levels"):
        parse_manifest(deep, "deploy.yaml")
    assert parse_documents(deep).problems[0].message == (
        "the document is nested deeper than 64 levels")


def test_what_libyaml_refuses_the_editor_reads_and_the_checks_refuse() -> None:
    text = "image: ghcr.io/acme/web:1.4.2\nargs: [a:b]\n"
    stream = parse(text)
    assert stream.refused is not None or stream.index.pure  # pure: libyaml not installed
    documents, index = parse_manifest(text, "deploy.yaml")
    assert index.pure and len(documents) == 1
    assert [str(r) for r in deploy_references(text)] == ["ghcr.io/acme/web:1.4.2"]
    if stream.refused is not None:
        assert [p.line for p in parse_documents(text).problems] == [2]
        with pytest.raises(PolicyError, match="invalid YAML"):
            load_policy("version: 1\nservices: [a:b]\n", ".github/conveyor.yml")


def test_syntax_errors_keep_each_reader_on_a_real_line() -> None:
    with pytest.raises(InvalidYaml) as caught:
        parse("a: [1\n")
    assert caught.value.line == 2  # the end of the stream
    with pytest.raises(YamlSyntaxError) as error:
        parse_manifest("a: [1\n", "deploy.yaml")
    assert error.value.line == 1  # the editor names the last line of the file


def test_aliases_stay_nodes_for_the_editor() -> None:
    [document] = parse("a: &x 1\nb: *x\n").documents
    alias = document.aliases[0]
    assert isinstance(alias, Alias) and isinstance(alias.target, Scalar)
    assert (alias.line, alias.column, alias.target.value) == (2, 3, "1")
