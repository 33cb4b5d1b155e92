"""Slash-command parsing."""

from __future__ import annotations

import pytest

from bot.domain.commands.lines import MAX_BODY_BYTES
from bot.domain.commands.parse import (
    COMMAND_NAMES,
    HELP_TEXT,
    MAX_COMMANDS,
    MAX_REASON,
    Command,
    CommandError,
    Help,
    Hold,
    Promote,
    PromoteExplicit,
    PromoteTrain,
    PromoteUpstream,
    Recheck,
    Rollback,
    RollbackTrain,
    Status,
    Unhold,
    parse_commands,
)

SERVICES = ("web", "api")
ENVIRONMENTS = ("staging", "production")
DIGEST = "sha256:" + "0123456789abcdef" * 4


def parse(body: str) -> list[Command | CommandError]:
    return parse_commands(body, services=SERVICES, environments=ENVIRONMENTS)


def one(body: str) -> Command | CommandError:
    [parsed] = parse(body)
    return parsed


def error(body: str) -> str:
    parsed = one(body)
    assert isinstance(parsed, CommandError), parsed
    return parsed.message


# --- each command ---------------------------------------------------------------------------

VALID = [
    (
        "/promote production",
        Promote("promote", ("production",), 1, "/promote production", "production"),
    ),
    (
        "/promote web 1.4.2 production",
        PromoteExplicit(
            "promote",
            ("web", "1.4.2", "production"),
            1,
            "/promote web 1.4.2 production",
            service="web",
            ref="1.4.2",
            environment="production",
        ),
    ),
    (
        f"/promote api {DIGEST} staging",
        PromoteExplicit(
            "promote",
            ("api", DIGEST, "staging"),
            1,
            f"/promote api {DIGEST} staging",
            service="api",
            ref=DIGEST,
            environment="staging",
        ),
    ),
    (
        "/rollback web production",
        Rollback(
            "rollback",
            ("web", "production"),
            1,
            "/rollback web production",
            service="web",
            environment="production",
            ref=None,
        ),
    ),
    (
        "/rollback web production v1.4.1",
        Rollback(
            "rollback",
            ("web", "production", "v1.4.1"),
            1,
            "/rollback web production v1.4.1",
            service="web",
            environment="production",
            ref="v1.4.1",
        ),
    ),
    ("/hold", Hold("hold", (), 1, "/hold", reason="")),
    (
        "/hold waiting for  the DB migration ",
        Hold(
            "hold",
            ("waiting", "for", "the", "DB", "migration"),
            1,
            "/hold waiting for  the DB migration",
            reason="waiting for  the DB migration",
        ),
    ),
    ("/unhold", Unhold("unhold", (), 1, "/unhold")),
    ("/recheck", Recheck("recheck", (), 1, "/recheck")),
    ("/status", Status("status", (), 1, "/status", service=None)),
    ("/status api", Status("status", ("api",), 1, "/status api", service="api")),
    ("/help", Help("help", (), 1, "/help")),
]


@pytest.mark.parametrize(("body", "expected"), VALID, ids=[body for body, _ in VALID])
def test_valid_commands(body: str, expected: Command) -> None:
    assert parse(body) == [expected]


def test_typed_commands_are_commands() -> None:
    for parsed in parse("/promote production\n/recheck\n/help"):
        assert isinstance(parsed, Command)


def test_digest_is_normalised_to_lower_case() -> None:
    parsed = one(f"/promote web {DIGEST.upper().replace('SHA256', 'sha256')} production")
    assert isinstance(parsed, PromoteExplicit)
    assert parsed.ref == DIGEST
    assert parsed.is_digest


def test_is_digest_helpers() -> None:
    explicit = one("/promote web 1.4.2 production")
    assert isinstance(explicit, PromoteExplicit) and not explicit.is_digest
    back = one(f"/rollback web production {DIGEST}")
    assert isinstance(back, Rollback) and back.is_digest and back.ref == DIGEST
    previous = one("/rollback web production")
    assert isinstance(previous, Rollback) and not previous.is_digest


def test_trailing_punctuation_after_the_command_word() -> None:
    assert isinstance(one("/recheck."), Recheck)
    assert isinstance(one("/help?"), Help)
    assert error("/promote production.") == (
        "unknown environment 'production.'; environments are: staging, production; "
        "did you mean 'production'?"
    )


PROMOTE_USAGE = (
    "/promote <env>, /promote <env> <service>, /promote <service> <tag-or-digest> <env>, "
    "/promote <env> <group> or /promote <env> --all"
)
PROMOTE_ARITY = f"/promote takes 1 to 3 arguments: {PROMOTE_USAGE}"
ROLLBACK_USAGE = "/rollback <service> <env> [<tag-or-digest>] or /rollback <group> <env>"

# --- error messages -------------------------------------------------------------------------

ERRORS = [
    ("/promote prod", "unknown environment 'prod'; environments are: staging, production"),
    ("/promote qa", "unknown environment 'qa'; environments are: staging, production"),
    ("/promote wbe 1.4.2 production", "unknown service 'wbe'; services are: web, api"),
    ("/promote nope 1.4.2 production", "unknown service 'nope'; services are: web, api"),
    (
        "/promote web 1.4.2 prod",
        "unknown environment 'prod'; environments are: staging, production",
    ),
    (
        "/promote",
        PROMOTE_ARITY,
    ),
    (
        "/promote web production",
        f"/promote takes a tag or digest between service and environment: {PROMOTE_USAGE}",
    ),
    (
        "/promote a b c d",
        PROMOTE_ARITY,
    ),
    (
        "/rollback web",
        f"/rollback takes 2 or 3 arguments: {ROLLBACK_USAGE}",
    ),
    (
        "/rollback web production 1 2",
        f"/rollback takes 2 or 3 arguments: {ROLLBACK_USAGE}",
    ),
    ("/rollback wbe production", "unknown service 'wbe'; services are: web, api"),
    ("/rollback web prod", "unknown environment 'prod'; environments are: staging, production"),
    ("/unhold now", "/unhold takes no arguments: /unhold"),
    ("/recheck please", "/recheck takes no arguments: /recheck"),
    ("/help promote", "/help takes no arguments: /help"),
    ("/status web api", "/status takes at most 1 argument: /status [service or group]"),
    ("/status wbe", "unknown service 'wbe'; services are: web, api"),
    ("/promte production", "unknown command '/promte'; did you mean /promote?"),
    ("/Promote production", "unknown command '/Promote'; did you mean /promote?"),
    ("/HELP", "unknown command '/HELP'; did you mean /help?"),
    ("/rolback web production", "unknown command '/rolback'; did you mean /rollback?"),
    ("/staus", "unknown command '/staus'; did you mean /status?"),
    ("/shrug", "unknown command '/shrug'"),
    ("/deploy production", "unknown command '/deploy'"),
]


@pytest.mark.parametrize(("body", "message"), ERRORS, ids=[body for body, _ in ERRORS])
def test_error_messages_start_precisely(body: str, message: str) -> None:
    assert error(body).startswith(message)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "/promote prod",
            "unknown environment 'prod'; environments are: staging, production; "
            "did you mean 'production'?",
        ),
        (
            "/promote Production",
            "unknown environment 'Production'; environments are: staging, production; "
            "did you mean 'production'?",
        ),
        ("/promote qa", "unknown environment 'qa'; environments are: staging, production"),
        (
            "/promote wbe 1.4.2 production",
            "unknown service 'wbe'; services are: web, api; did you mean 'web'?",
        ),
        ("/promote nope 1.4.2 production", "unknown service 'nope'; services are: web, api"),
    ],
)
def test_did_you_mean_only_when_close(body: str, message: str) -> None:
    assert error(body) == message


def test_no_services_configured() -> None:
    [parsed] = parse_commands("/status web", services=(), environments=ENVIRONMENTS)
    assert isinstance(parsed, CommandError)
    assert parsed.message == "unknown service 'web'; no services are configured"


def test_arguments_are_checked_in_order() -> None:
    assert error("/promote wbe ../x prod").startswith("unknown service 'wbe'")
    assert error("/promote web ../x prod").startswith("'../x' is not a tag or a digest")


@pytest.mark.parametrize(
    "ref",
    [
        "1.4.2",
        "v1.4.2",
        "web-v1.4.2",
        "1.4.2-rc.1_build",
        "_x",
        "a" * 128,
        DIGEST,
    ],
)
def test_valid_refs(ref: str) -> None:
    assert isinstance(one(f"/promote web {ref} production"), PromoteExplicit)
    assert isinstance(one(f"/rollback web production {ref}"), Rollback)


@pytest.mark.parametrize(
    "ref",
    [
        "a" * 129,
        ".hidden",
        "-rc",
        "1.4.2@sha256:abc",
        "web:1.4.2",
        "sha256:abc",
        "sha256:" + "g" * 64,
        "sha256:" + "a" * 65,
        "sha512:" + "a" * 128,
        "ghcr.io/acme/web",
        "1.4.2;rm",
        "é",
    ],
)
def test_invalid_refs(ref: str) -> None:
    message = error(f"/promote web {ref} production")
    assert "is not a tag or a digest: a tag is 1 to 128 letters, digits" in message
    assert "a digest is sha256:<64 hex digits>" in message
    assert isinstance(one(f"/rollback web production {ref}"), CommandError)


def test_long_arguments_are_shortened_in_messages() -> None:
    message = error("/promote " + "x" * 5000)
    assert message.startswith("unknown environment '" + "x" * 63 + "…'")
    assert len(message) < 200


def test_hold_reason_is_bounded() -> None:
    assert isinstance(one("/hold " + "r" * MAX_REASON), Hold)
    assert error("/hold " + "r" * (MAX_REASON + 1)) == (
        f"the /hold reason is too long ({MAX_REASON + 1} characters; at most {MAX_REASON})"
    )


def test_errors_keep_line_and_raw() -> None:
    parsed = parse("thanks!\n  /promte   production  \n")
    assert parsed == [
        CommandError(2, "/promte   production", "unknown command '/promte'; did you mean /promote?")
    ]


# --- what is a command line -----------------------------------------------------------------

NOT_COMMANDS = [
    pytest.param("", id="empty"),
    pytest.param("LGTM, please /promote production", id="mid-line"),
    pytest.param("/usr/bin/env python", id="path"),
    pytest.param("/ promote production", id="slash-space"),
    pytest.param("/", id="slash-only"),
    pytest.param("//promote production", id="double-slash"),
    pytest.param("/1.4.2 is out", id="slash-digit"),
    pytest.param("/promote/production", id="slash-joined"),
    pytest.param("https://example.com/promote", id="url"),
    pytest.param("- /promote production", id="list-item"),
    pytest.param("`/promote production`", id="inline-code"),
    pytest.param("    /promote production", id="indented-code-4-spaces"),
    pytest.param("\t/promote production", id="indented-code-tab"),
    pytest.param("  \t/promote production", id="indented-code-spaces-then-tab"),
    pytest.param("> /promote production", id="quote"),
    pytest.param("   > /promote production", id="indented-quote"),
    pytest.param(">> /promote production", id="nested-quote"),
    pytest.param(">/promote production", id="quote-without-space"),
    pytest.param("```\n/promote production\n```", id="backtick-fence"),
    pytest.param("~~~\n/promote production\n~~~", id="tilde-fence"),
    pytest.param("```yaml\n/promote production\n```", id="fence-with-info"),
    pytest.param("   ```\n/promote production\n   ```", id="indented-fence"),
    pytest.param("````\n```\n/promote production\n````", id="longer-fence-not-closed-by-shorter"),
    pytest.param("~~~\n```\n/promote production\n~~~", id="tilde-fence-not-closed-by-backticks"),
    pytest.param("```\n/promote production", id="unclosed-fence-runs-to-the-end"),
    pytest.param(
        "```\n```not a close\n/promote production\n```", id="close-with-text-is-not-a-close"
    ),
    pytest.param("```\n    ```\n/promote production\n```", id="close-indented-4-is-not-a-close"),
    pytest.param("<!--\n/promote production\n-->", id="html-comment"),
    pytest.param("<!-- /promote production -->", id="one-line-html-comment"),
]


@pytest.mark.parametrize("body", NOT_COMMANDS)
def test_not_commands(body: str) -> None:
    assert parse(body) == []


COMMANDS_AFTER = [
    pytest.param("/recheck", 1, id="plain"),
    pytest.param("   /recheck", 1, id="three-spaces"),
    pytest.param("/recheck\t", 1, id="trailing-tab"),
    pytest.param("```\n/promote production\n```\n/recheck", 4, id="after-fence"),
    pytest.param("~~~\n/promote production\n~~~~~\n/recheck", 4, id="after-longer-close"),
    pytest.param("```\n/promote production\n```   \n/recheck", 4, id="close-with-spaces"),
    pytest.param("``` a `b`\n/recheck", 2, id="backticks-in-info-is-inline-code"),
    pytest.param("> quoted\n/recheck", 2, id="after-quote"),
    pytest.param("    code\n/recheck", 2, id="after-indented-code"),
    pytest.param("<!-- hidden -->\n/recheck", 2, id="after-one-line-comment"),
    pytest.param("<!--\nhidden\n-->\n/recheck", 4, id="after-comment-block"),
    pytest.param("> ```\n/recheck", 2, id="fence-in-quote-does-not-swallow"),
]


@pytest.mark.parametrize(("body", "line"), COMMANDS_AFTER)
def test_commands_found(body: str, line: int) -> None:
    assert parse(body) == [Recheck("recheck", (), line, "/recheck")]


@pytest.mark.parametrize(
    "newline",
    [pytest.param("\n", id="LF"), pytest.param("\r\n", id="CRLF"), pytest.param("\r", id="CR")],
)
def test_line_endings(newline: str) -> None:
    body = newline.join(["Ship it", "", "/hold waiting", "```", "/unhold", "```", "/recheck", ""])
    assert parse(body) == [
        Hold("hold", ("waiting",), 3, "/hold waiting", reason="waiting"),
        Recheck("recheck", (), 7, "/recheck"),
    ]


def test_several_commands_run_in_order_with_errors_in_place() -> None:
    body = "/hold\n/promte x\n/unhold\n/status\n"
    parsed = parse(body)
    assert [type(p).__name__ for p in parsed] == ["Hold", "CommandError", "Unhold", "Status"]
    assert [p.line for p in parsed] == [1, 2, 3, 4]


def test_at_most_ten_commands() -> None:
    body = "\n".join(["/recheck"] * (MAX_COMMANDS + 5))
    parsed = parse(body)
    assert len(parsed) == MAX_COMMANDS + 1
    assert all(isinstance(p, Recheck) for p in parsed[:MAX_COMMANDS])
    assert parsed[-1] == CommandError(
        MAX_COMMANDS + 1,
        "/recheck",
        "at most 10 commands per comment; this one and the 4 after it were not run",
    )


def test_the_eleventh_command_alone() -> None:
    parsed = parse("\n".join(["/recheck"] * (MAX_COMMANDS + 1)))
    last = parsed[-1]
    assert isinstance(last, CommandError)
    assert last.message == "at most 10 commands per comment; this one was not run"


def test_exactly_ten_commands() -> None:
    parsed = parse("\n".join(["/recheck"] * MAX_COMMANDS))
    assert len(parsed) == MAX_COMMANDS
    assert all(isinstance(p, Recheck) for p in parsed)


def test_body_beyond_64_kib_is_ignored() -> None:
    padding = "x" * (MAX_BODY_BYTES - len("/recheck\n") - 1) + "\n"
    body = "/recheck\n" + padding + "/help\n"
    assert len(body.encode()) > MAX_BODY_BYTES
    assert parse(body) == [Recheck("recheck", (), 1, "/recheck")]


def test_a_command_cut_by_the_bound_is_not_run_truncated() -> None:
    # The bound falls inside the command line: "/promote web 1.4.2 pro…" is not run.
    body = "x" * (MAX_BODY_BYTES - 20) + "\n/promote web 1.4.2 production"
    assert parse(body) == []


def test_multibyte_text_at_the_bound() -> None:
    body = "/recheck\n" + "é" * MAX_BODY_BYTES
    assert parse(body) == [Recheck("recheck", (), 1, "/recheck")]


def test_a_body_exactly_at_the_bound_is_whole() -> None:
    body = "x" * (MAX_BODY_BYTES - len("\n/recheck")) + "\n/recheck"
    assert len(body.encode()) == MAX_BODY_BYTES
    assert parse(body) == [Recheck("recheck", (), 2, "/recheck")]


# --- help -----------------------------------------------------------------------------------


def test_help_text_lists_every_command() -> None:
    for name in COMMAND_NAMES:
        assert f"`/{name}" in HELP_TEXT
    assert HELP_TEXT.startswith("| command | where | effect |\n| --- | --- | --- |\n")


def test_help_table_rows_are_well_formed() -> None:
    rows = [line for line in HELP_TEXT.splitlines() if line.startswith("|")]
    assert len(rows) == 12
    assert all(row.endswith("|") and row.count(" | ") == 2 for row in rows)


# --- release trains -------------------------------------------------------------------------

GROUPS = ("storefront",)


def train(body: str) -> Command | CommandError:
    [parsed] = parse_commands(body, services=SERVICES, environments=ENVIRONMENTS, groups=GROUPS)
    return parsed


def test_promote_a_group_and_every_service() -> None:
    group = train("/promote production storefront")
    assert isinstance(group, PromoteTrain)
    assert (group.environment, group.group) == ("production", "storefront")
    every = train("/promote production --all")
    assert isinstance(every, PromoteTrain) and every.group is None


def test_status_of_a_group() -> None:
    status = train("/status storefront")
    assert isinstance(status, Status)
    assert (status.service, status.group) == (None, "storefront")
    assert isinstance(train("/status web"), Status)


def test_rollback_a_group() -> None:
    back = train("/rollback storefront production")
    assert isinstance(back, RollbackTrain)
    assert (back.group, back.environment) == ("storefront", "production")
    assert isinstance(train("/rollback web production"), Rollback)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "/promote production storefrnt",
            "unknown group 'storefrnt'; groups are: storefront; did you mean 'storefront'? "
            "(or --all for every service)",
        ),
        (
            "/promote storefront production",
            "the environment comes first: /promote production storefront",
        ),
        (
            "/promote production staging",
            "/promote <env> <group> names the environment first, then a group (or --all); "
            "'staging' is an environment",
        ),
        (
            "/rollback storefront production 1.0.0",
            "/rollback storefront production takes no tag or digest: a group goes back to its "
            "previous combination",
        ),
        (
            "/rollback storefront prod",
            "unknown environment 'prod'; environments are: staging, production; "
            "did you mean 'production'?",
        ),
        (
            "/rollback shop production",
            "unknown service or group 'shop'; services and groups are: web, api, storefront",
        ),
    ],
)
def test_train_errors(body: str, message: str) -> None:
    parsed = train(body)
    assert isinstance(parsed, CommandError)
    assert parsed.message == message


def test_without_groups_a_second_word_is_an_unknown_group() -> None:
    parsed = one("/promote production storefront")
    assert isinstance(parsed, CommandError)
    assert parsed.message == (
        "unknown group 'storefront'; no groups are configured (or --all for every service)"
    )


def test_an_environment_and_a_service_promote_what_the_upstreams_run() -> None:
    parsed = train("/promote production web")
    assert isinstance(parsed, PromoteUpstream)
    assert (parsed.environment, parsed.service) == ("production", "web")
