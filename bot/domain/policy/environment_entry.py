"""One entry of the ``environments`` list: its keys checked and read into an `Environment`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.domain.durations import parse_duration
from bot.domain.freeze import FreezeWindow, parse_freeze
from bot.domain.policy.fields import check_template, choice, parse_tags, string_list, suggest
from bot.domain.policy.model import Environment
from bot.domain.policy.reader import Reader, type_name
from bot.domain.policy.syntax import approver_problem, context_pattern_problem, reporter_problem
from bot.domain.tags import TagPolicy

MAX_APPROVERS = 100
MAX_FREEZE_WINDOWS = 50
MAX_APPROVALS = 10
MAX_REPORTERS = 20
MAX_UPSTREAMS = 20

ENV_KEYS = (
    "name", "path", "from", "after", "promote", "evidence", "soak", "tags", "approvals",
    "approvers", "allow_self_approval", "deployed_context", "deployed_by", "freeze",
    "merge_method", "auto_merge", "require_attestation", "on_failure", "watch",
)  # fmt: skip
GATE_ONLY_KEYS = (
    "promote", "evidence", "soak", "approvals", "approvers", "allow_self_approval",
)  # fmt: skip
FROM_VALUES = ("release", "package", "any")
PROMOTE_VALUES = ("manual", "auto")
EVIDENCE_VALUES = ("merged", "deployed")
MERGE_METHODS = ("squash", "merge", "rebase")
ON_FAILURE_VALUES = ("rollback", "hold")
DEFAULT_WATCH = timedelta(hours=1)


class EnvironmentParser:
    """Reads entries of one file's list; ``names`` are the valid names, in file order."""

    def __init__(self, reader: Reader, names: dict[str, int], tag_cache: dict[str, TagPolicy]):
        self.reader = reader
        self.names = names
        self.tag_cache = tag_cache

    def parse(self, index: int, raw: dict[Any, Any], name: str) -> Environment:
        reader, where = self.reader, f"environments[{index}]"
        gated = "after" in raw
        for key in GATE_ONLY_KEYS:
            if key in raw and not gated:
                reader.error(
                    reader.key_pos(raw, key),
                    f"{where}.{key}: only applies to gated environments (those with 'after')",
                )
        path = ""
        if "path" in raw:
            template = reader.typed(raw, "path", str, "a string", where)
            if template is not None and check_template(
                reader, reader.value_pos(raw, "path"), f"{where}.path", template
            ):
                path = str(template)
        after = self._after(raw, where, name) if "after" in raw else ()
        entry_from: str | None = None if gated else "any"
        if "from" in raw:
            if gated:
                reader.error(
                    reader.key_pos(raw, "from"),
                    f"{where}.from: only applies to entry environments; this one is gated "
                    "by 'after' and is opened by /promote or promote: auto",
                )
            else:
                entry_from = choice(reader, raw, "from", where, FROM_VALUES) or "any"
        promote = "manual"
        if "promote" in raw and gated:
            promote = choice(reader, raw, "promote", where, PROMOTE_VALUES) or "manual"
        evidence = self._evidence(raw, where) if gated else ()
        soak = (self._duration(raw, "soak", where) or timedelta(0)
                if "soak" in raw and gated else timedelta(0))
        on_failure = (choice(reader, raw, "on_failure", where, ON_FAILURE_VALUES)
                      if "on_failure" in raw else None)
        watch = self._watch(raw, where)
        approvals = self._approvals(raw, where) if "approvals" in raw and gated else 0
        approvers = self._approvers(raw, where) if "approvers" in raw and gated else ()
        if approvals is not None:  # an invalid count is reported once, not again here
            self._check_approvers_fit(raw, where, approvals, approvers)
        allow_self = self._bool(raw, "allow_self_approval", where) if gated else False
        context = self._deployed_context(raw, where, evidence, gated)
        reporters = self._deployed_by(raw, where, evidence, gated)
        if on_failure is not None and not reporters:
            reader.notice(
                reader.value_pos(raw, "on_failure"),
                f"{where}.on_failure: a failure report by anyone who can post commit statuses "
                "or deployments counts; name your Argo CD or Flux login in deployed_by",
            )
        if gated and "deployed" in evidence and not reporters:
            reader.notice(
                reader.key_pos(raw, "evidence"),
                f"{where}.evidence: deployed evidence counts a report by anyone who can post "
                "commit statuses or deployments; name your Argo CD or Flux login in deployed_by",
            )
        return Environment(
            name=name,
            path=path,
            entry_from=entry_from,
            after=after,
            promote=promote,
            evidence=evidence,
            soak=soak,
            tags=self._tags(raw, where),
            approvals=approvals or 0,
            approvers=approvers,
            allow_self_approval=allow_self,
            deployed_context=context,
            deployed_by=reporters,
            freeze=self._freeze(raw, where),
            merge_method=(
                choice(reader, raw, "merge_method", where, MERGE_METHODS) or "squash"
                if "merge_method" in raw
                else "squash"
            ),
            auto_merge=self._bool(raw, "auto_merge", where),
            require_attestation=self._bool(raw, "require_attestation", where),
            line=reader.node_pos(raw)[0],
            on_failure=on_failure,
            watch=watch,
        )

    def _after(self, raw: dict[Any, Any], where: str, name: str) -> tuple[str, ...]:
        """A name, or a list of names (a fan-in: evidence from every one of them)."""
        reader = self.reader
        value = raw.get("after")
        if isinstance(value, list):
            if not value:
                reader.error(reader.value_pos(raw, "after"),
                             f"{where}.after: name at least one environment (an empty list "
                             "leaves this environment unreachable from any entry environment)")
                return ()
            entries = string_list(reader, raw, "after", where, MAX_UPSTREAMS)
            labels = [(item, pos, f"{where}.after[{index}]")
                      for index, (item, pos) in enumerate(entries)]
        else:
            single = reader.typed(raw, "after", str,
                                  "the name of an environment or a list of names", where)
            if single is None:
                return ()
            labels = [(str(single), reader.value_pos(raw, "after"), f"{where}.after")]
        upstreams: list[str] = []
        for after, pos, label in labels:
            if after == name:
                reader.error(pos, f"{label}: an environment cannot come after itself")
            elif after not in self.names:
                reader.error(pos, f"{label}: unknown environment '{after}'"
                             + suggest(after, list(self.names)))
            elif after in upstreams:
                reader.error(pos, f"{label}: '{after}' is listed twice")
            else:
                upstreams.append(after)
        return tuple(upstreams) if len(upstreams) == len(labels) else ()

    def _bool(self, raw: dict[Any, Any], key: str, where: str) -> bool:
        if key not in raw:
            return False
        return bool(self.reader.typed(raw, key, bool, "true or false", where))

    def _evidence(self, raw: dict[Any, Any], where: str) -> tuple[str, ...]:
        if "evidence" not in raw:
            return ("merged",)
        items = string_list(self.reader, raw, "evidence", where, len(EVIDENCE_VALUES) + 5)
        if isinstance(raw["evidence"], list) and not raw["evidence"]:
            self.reader.error(
                self.reader.value_pos(raw, "evidence"),
                f"{where}.evidence: list at least one of {', '.join(EVIDENCE_VALUES)}",
            )
        result: list[str] = []
        for item, pos in items:
            if item not in EVIDENCE_VALUES:
                self.reader.error(
                    pos,
                    f"{where}.evidence: unknown evidence '{item}'; use "
                    + " and/or ".join(EVIDENCE_VALUES)
                    + suggest(item, list(EVIDENCE_VALUES)),
                )
            elif item in result:
                self.reader.error(pos, f"{where}.evidence: '{item}' is listed twice")
            else:
                result.append(item)
        return tuple(result) or ("merged",)

    def _duration(self, raw: dict[Any, Any], key: str, where: str) -> timedelta | None:
        """The duration, or None when it is invalid (the error is reported here)."""
        value = raw[key]
        pos = self.reader.value_pos(raw, key)
        if value == 0 and isinstance(value, int) and not isinstance(value, bool):
            return timedelta(0)
        if not isinstance(value, str):
            self.reader.error(
                pos, f"{where}.{key}: expected a duration such as 30m, got {type_name(value)}"
            )
            return None
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.reader.error(pos, f"{where}.{key}: {exc}")
            return None

    def _watch(self, raw: dict[Any, Any], where: str) -> timedelta:
        """How long after a merge a failure report counts against the promotion."""
        if "watch" not in raw:
            return DEFAULT_WATCH
        watch = self._duration(raw, "watch", where)
        if watch is None:
            return DEFAULT_WATCH
        if watch <= timedelta(0):
            self.reader.error(
                self.reader.value_pos(raw, "watch"),
                f"{where}.watch: must be longer than 0; a failure report counts only "
                "within watch of the merge",
            )
            return DEFAULT_WATCH
        return watch

    def _approvals(self, raw: dict[Any, Any], where: str) -> int | None:
        """The count, or None when it is invalid (the error is reported here)."""
        value = self.reader.typed(raw, "approvals", int, "an integer", where)
        if value is None:
            return None
        if not 0 <= value <= MAX_APPROVALS:
            self.reader.error(
                self.reader.value_pos(raw, "approvals"),
                f"{where}.approvals: must be between 0 and {MAX_APPROVALS}, not {value}",
            )
            return None
        return int(value)

    def _approvers(self, raw: dict[Any, Any], where: str) -> tuple[str, ...]:
        result: list[str] = []
        for item, pos in string_list(self.reader, raw, "approvers", where, MAX_APPROVERS):
            problem = approver_problem(item)
            if problem is not None:
                self.reader.error(pos, f"{where}.approvers: {problem}")
            elif item.casefold() in (a.casefold() for a in result):
                self.reader.error(pos, f"{where}.approvers: '{item}' is listed twice")
            else:
                result.append(item)
        return tuple(result)

    def _check_approvers_fit(
        self, raw: dict[Any, Any], where: str, approvals: int, approvers: tuple[str, ...]
    ) -> None:
        if approvers and approvals == 0:
            self.reader.error(
                self.reader.key_pos(raw, "approvers"),
                f"{where}.approvers: has no effect while approvals is 0; set approvals: 1 or more",
            )
        users = [a for a in approvers if not a.startswith("@")]
        if approvers and len(users) == len(approvers) and approvals > len(users):
            self.reader.error(
                self.reader.value_pos(raw, "approvals"),
                f"{where}.approvals: {approvals} approvals required but only {len(users)} "
                "approver(s) listed, so the gate could never pass",
            )

    def _deployed_context(
        self, raw: dict[Any, Any], where: str, evidence: tuple[str, ...], gated: bool
    ) -> str | None:
        if "deployed_context" not in raw:
            return None
        value = self.reader.typed(raw, "deployed_context", str, "a string", where)
        if value is None:
            return None
        pos = self.reader.value_pos(raw, "deployed_context")
        if not value.strip() or len(value) > 255:
            self.reader.error(pos, f"{where}.deployed_context: must be 1 to 255 characters")
            return None
        problem = context_pattern_problem(value)
        if problem is not None:
            self.reader.error(pos, f"{where}.deployed_context: {problem}")
            return None
        self._needs_deployed_evidence(raw, "deployed_context", where, evidence, gated)
        return str(value)

    def _deployed_by(
        self, raw: dict[Any, Any], where: str, evidence: tuple[str, ...], gated: bool
    ) -> tuple[str, ...]:
        if "deployed_by" not in raw:
            return ()
        items = string_list(self.reader, raw, "deployed_by", where, MAX_REPORTERS)
        if not items and isinstance(raw["deployed_by"], list):
            self.reader.error(
                self.reader.value_pos(raw, "deployed_by"),
                f"{where}.deployed_by: list at least one login, or leave deployed_by out",
            )
        result: list[str] = []
        for item, pos in items:
            problem = reporter_problem(item)
            if problem is not None:
                self.reader.error(pos, f"{where}.deployed_by: {problem}")
            elif item.casefold() in (r.casefold() for r in result):
                self.reader.error(pos, f"{where}.deployed_by: '{item}' is listed twice")
            else:
                result.append(item)
        self._needs_deployed_evidence(raw, "deployed_by", where, evidence, gated)
        return tuple(result)

    def _needs_deployed_evidence(
        self, raw: dict[Any, Any], key: str, where: str, evidence: tuple[str, ...], gated: bool
    ) -> None:
        # On an entry environment the keys describe its own deployment reports (on_failure).
        if gated and "deployed" not in evidence and "on_failure" not in raw:
            self.reader.error(
                self.reader.value_pos(raw, key),
                f"{where}.{key}: only used with evidence: [deployed]; add 'deployed' to evidence",
            )

    def _tags(self, raw: dict[Any, Any], where: str) -> TagPolicy | None:
        if "tags" not in raw:
            return None
        return parse_tags(self.reader, raw, where, self.tag_cache)

    def _freeze(self, raw: dict[Any, Any], where: str) -> tuple[FreezeWindow, ...]:
        if "freeze" not in raw:
            return ()
        windows: list[FreezeWindow] = []
        for item, pos in string_list(self.reader, raw, "freeze", where, MAX_FREEZE_WINDOWS):
            try:
                windows.append(parse_freeze(item))
            except ValueError as exc:
                self.reader.error(pos, f"{where}.freeze: {exc}")
        return tuple(windows)
