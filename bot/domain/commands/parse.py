"""Slash commands in comments: parsing only, no permission checks or effects.

The command lines of a comment are found in `lines.py`; here each becomes a typed
command or the reason it is wrong (its arguments checked in `args.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.domain.commands.args import (
    check_environment,
    check_ref,
    check_service,
    normal_ref,
    quote,
    suggest,
    unknown,
)
from bot.domain.commands.lines import COMMAND_RE, bounded, command_lines

__all__ = [
    "COMMAND_NAMES",
    "HELP_TEXT",
    "MAX_COMMANDS",
    "MAX_REASON",
    "Command",
    "CommandError",
    "Help",
    "Hold",
    "Promote",
    "PromoteExplicit",
    "PromoteTrain",
    "PromoteUpstream",
    "Recheck",
    "Rollback",
    "RollbackTrain",
    "Status",
    "Unhold",
    "parse_commands",
]

MAX_COMMANDS = 10
MAX_REASON = 1024

COMMAND_NAMES = ("promote", "rollback", "hold", "unhold", "recheck", "status", "help")

ALL_SERVICES = "--all"

USAGE = {
    "promote": "/promote <env>, /promote <env> <service>, "
    "/promote <service> <tag-or-digest> <env>, /promote <env> <group> or /promote <env> --all",
    "rollback": "/rollback <service> <env> [<tag-or-digest>] or /rollback <group> <env>",
    "hold": "/hold [reason]",
    "unhold": "/unhold",
    "recheck": "/recheck",
    "status": "/status [service or group]",
    "help": "/help",
}

HELP_TEXT = """\
| command | where | effect |
| --- | --- | --- |
| `/promote <env>` | on a promotion PR | opens the promotion of the same digest to `<env>` |
| `/promote <env> <service>` | any issue or PR | opens the promotion of what every upstream \
environment of `<env>` runs (refused when they disagree) |
| `/promote <service> <tag-or-digest> <env>` | any issue or PR | opens that promotion |
| `/rollback <service> <env> [<tag-or-digest>]` | any issue or PR | PR back to the previous \
(or given) digest that was live in `<env>` |
| `/promote <env> <group>`, `/promote <env> --all` | any issue or PR | one release-train PR \
moving every service of the group (or every service) to the digest that holds evidence upstream |
| `/rollback <group> <env>` | any issue or PR | one PR back to the group's previous \
combination in `<env>` |
| `/hold [reason]`, `/unhold` | on a promotion PR | the gate fails while held |
| `/recheck` | on a PR | re-evaluates the gate now |
| `/status [service or group]` | anywhere | replies with a table: environment → version, \
digest, since, open PRs |
| `/help` | anywhere | replies with this table |

One command per line, at the start of the line; several lines run in order (at most \
10 per comment). A `<tag-or-digest>` is a tag such as `1.4.2` or a digest \
`sha256:<64 hex>`. Only users with write, maintain or admin permission on this repository \
may run commands."""


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...]
    line: int  # 1-based line of the comment body
    raw: str  # the line as written, without surrounding whitespace


@dataclass(frozen=True)
class Promote(Command):
    """``/promote <env>``: the same digest as this promotion PR, to ``environment``."""

    environment: str


@dataclass(frozen=True)
class PromoteExplicit(Command):
    """``/promote <service> <tag-or-digest> <env>``."""

    service: str
    ref: str
    environment: str

    @property
    def is_digest(self) -> bool:
        return self.ref.startswith("sha256:")


@dataclass(frozen=True)
class PromoteTrain(Command):
    """``/promote <env> <group>`` or ``/promote <env> --all`` (``group`` None)."""

    environment: str
    group: str | None


@dataclass(frozen=True)
class PromoteUpstream(Command):
    """``/promote <env> <service>``: what every upstream environment of ``environment`` runs
    (on an issue, ``/promote <env>`` of a policy with one service)."""

    environment: str
    service: str


@dataclass(frozen=True)
class RollbackTrain(Command):
    """``/rollback <group> <env>``: back to the group's previous combination."""

    group: str
    environment: str


@dataclass(frozen=True)
class Rollback(Command):
    """``/rollback <service> <env> [<tag-or-digest>]``; ``ref`` None means "the previous"."""

    service: str
    environment: str
    ref: str | None

    @property
    def is_digest(self) -> bool:
        return self.ref is not None and self.ref.startswith("sha256:")


@dataclass(frozen=True)
class Hold(Command):
    reason: str  # "" when none was given


@dataclass(frozen=True)
class Unhold(Command):
    pass


@dataclass(frozen=True)
class Recheck(Command):
    pass


@dataclass(frozen=True)
class Status(Command):
    service: str | None
    group: str | None = None  # ``/status <group>``: the tables of the group's services


@dataclass(frozen=True)
class Help(Command):
    pass


@dataclass(frozen=True)
class CommandError:
    line: int
    raw: str
    message: str


def parse_commands(
    body: str,
    *,
    services: Sequence[str],
    environments: Sequence[str],
    groups: Sequence[str] = (),
) -> list[Command | CommandError]:
    """Every command line of ``body``, in order, parsed or with the reason it is wrong."""
    found: list[Command | CommandError] = []
    lines = list(command_lines(bounded(body)))
    for index, (number, text) in enumerate(lines):
        if index == MAX_COMMANDS:
            rest = len(lines) - MAX_COMMANDS - 1
            skipped = f"this one and the {rest} after it were" if rest else "this one was"
            found.append(
                CommandError(
                    number,
                    text,
                    f"at most {MAX_COMMANDS} commands per comment; {skipped} not run",
                )
            )
            break
        found.append(_parse_line(number, text, services, environments, groups))
    return found


def _parse_line(
    number: int,
    text: str,
    services: Sequence[str],
    environments: Sequence[str],
    groups: Sequence[str],
) -> Command | CommandError:
    match = COMMAND_RE.match(text)
    assert match is not None  # _command_lines kept only matching lines
    word = match.group(1)
    if word not in COMMAND_NAMES:
        return CommandError(number, text, _unknown_command(word))
    rest = text[match.end() :].strip()
    line = _Line(word, tuple(rest.split()), rest, number, text, services, environments, groups)
    outcome = _PARSERS[word](line)
    return CommandError(number, text, outcome) if isinstance(outcome, str) else outcome


@dataclass(frozen=True)
class _Line:
    word: str
    args: tuple[str, ...]
    rest: str  # everything after the command word, as written
    number: int
    text: str
    services: Sequence[str]
    environments: Sequence[str]
    groups: Sequence[str]

    def wrong_arity(self, expected: str) -> str:
        return f"/{self.word} takes {expected}: {USAGE[self.word]}"


def _parse_promote(line: _Line) -> Command | str:
    if len(line.args) == 1:
        (environment,) = line.args
        problem = check_environment(environment, line.environments)
        if problem:
            return problem
        return Promote(line.word, line.args, line.number, line.text, environment=environment)
    if len(line.args) == 2:
        return _parse_promote_train(line)
    if len(line.args) == 3:
        service, ref, environment = line.args
        problem = (
            check_service(service, line.services)
            or check_ref(ref)
            or check_environment(environment, line.environments)
        )
        if problem:
            return problem
        return PromoteExplicit(
            line.word,
            line.args,
            line.number,
            line.text,
            service=service,
            ref=normal_ref(ref),
            environment=environment,
        )
    return line.wrong_arity("1 to 3 arguments")


def _parse_promote_train(line: _Line) -> Command | str:
    environment, group = line.args
    if environment in line.services and group in line.environments:
        return line.wrong_arity("a tag or digest between service and environment")
    if environment in line.groups and group in line.environments:
        return f"the environment comes first: /promote {group} {environment}"
    problem = check_environment(environment, line.environments)
    if problem:
        return problem
    if group == ALL_SERVICES:
        return PromoteTrain(
            line.word, line.args, line.number, line.text, environment=environment, group=None
        )
    if group in line.groups:
        return PromoteTrain(
            line.word, line.args, line.number, line.text, environment=environment, group=group
        )
    if group in line.services:
        return PromoteUpstream(
            line.word, line.args, line.number, line.text, environment=environment, service=group
        )
    if group in line.environments:
        return (
            f"/promote <env> <group> names the environment first, then a group "
            f"(or --all); {quote(group)} is an environment"
        )
    return unknown("group", "groups", group, line.groups) + " (or --all for every service)"


def _parse_rollback(line: _Line) -> Command | str:
    if len(line.args) not in (2, 3):
        return line.wrong_arity("2 or 3 arguments")
    service, environment, *given = line.args
    if service in line.groups:
        if given:
            return (
                f"/rollback {service} {environment} takes no tag or digest: a group goes back "
                "to its previous combination"
            )
        problem = check_environment(environment, line.environments)
        if problem:
            return problem
        return RollbackTrain(
            line.word, line.args, line.number, line.text, group=service, environment=environment
        )
    problem = (
        check_service(service, line.services, line.groups)
        or check_environment(environment, line.environments)
        or (check_ref(given[0]) if given else None)
    )
    if problem:
        return problem
    return Rollback(
        line.word,
        line.args,
        line.number,
        line.text,
        service=service,
        environment=environment,
        ref=normal_ref(given[0]) if given else None,
    )


def _parse_hold(line: _Line) -> Command | str:
    reason = line.rest
    if len(reason) > MAX_REASON:
        return f"the /hold reason is too long ({len(reason)} characters; at most {MAX_REASON})"
    return Hold(line.word, line.args, line.number, line.text, reason=reason)


def _parse_status(line: _Line) -> Command | str:
    if len(line.args) > 1:
        return line.wrong_arity("at most 1 argument")
    service = line.args[0] if line.args else None
    if service is not None and service in line.groups:
        return Status(line.word, line.args, line.number, line.text, service=None, group=service)
    if service is not None:
        problem = check_service(service, line.services, line.groups)
        if problem:
            return problem
    return Status(line.word, line.args, line.number, line.text, service=service)


def _no_arguments(kind: type[Unhold | Recheck | Help]) -> Callable[[_Line], Command | str]:
    def parse(line: _Line) -> Command | str:
        if line.args:
            return line.wrong_arity("no arguments")
        return kind(line.word, line.args, line.number, line.text)

    return parse


_PARSERS: dict[str, Callable[[_Line], Command | str]] = {
    "promote": _parse_promote,
    "rollback": _parse_rollback,
    "hold": _parse_hold,
    "unhold": _no_arguments(Unhold),
    "recheck": _no_arguments(Recheck),
    "status": _parse_status,
    "help": _no_arguments(Help),
}


def _unknown_command(word: str) -> str:
    message = f"unknown command {quote('/' + word)}"
    suggestion = suggest(word, COMMAND_NAMES)
    return f"{message}; did you mean /{suggestion}?" if suggestion else message
