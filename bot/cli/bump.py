"""`bump`: one promotion applied to a local copy of a deployment repository.

It decides as the bot's opener decides, through the same functions: the tag policy's refusal
and the stale `Chart.lock` refusal (`bot.domain.promotions.refusals`), the edit of the image
reference (`bot.manifests`), the render compared before and after the edit with its refusal
when no workload's image changes (`bot.promotion.effects`), and the decision itself
(`bot.domain.opening.decide_opening`, as for a `/promote` command: explicit). A checkout has no
pull requests, so none stands in the way. Only the facts are read differently: from the
folder instead of GitHub and the registry.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from bot.cli.localrepo import is_file, not_utf8, unreadable_reason
from bot.cli.localsyncs import local_renders
from bot.cli.offline import ToolSettingError, local_builder
from bot.cli.repocheck import LocalFiles, local_index
from bot.domain.images import parse_image_ref, same_image
from bot.domain.opening import FileEdit, Opening, OpeningFacts, ServiceSubject, decide_opening
from bot.domain.policy import Policy, check_config_file
from bot.domain.promotions.marker import branch_name
from bot.domain.promotions.refusals import chart_lock_path, chart_lock_refusal, tag_refusal
from bot.domain.tags import version_from_tag
from bot.github.repos import MAX_FILE_BYTES
from bot.manifests import Edit, ManifestError, promote_image
from bot.names import POLICY_PATH
from bot.promotion.builds import builder_renders, run_render, walk_inputs
from bot.promotion.effects import PromotionEffect, render_changes
from bot.render.build import Builder


@dataclass(frozen=True)
class _Request:
    """What `bump` was asked, checked against the policy."""

    policy: Policy
    service: str
    environment: str
    tag: str
    digest: str


def bump(repo_dir: str, service: str, env: str, image: str, *, write: bool,
         chart: bool = False) -> int:
    """Set ``image`` for ``service`` in the file of ``env`` of the checkout at ``repo_dir`` and
    print the diff (``write``: change the file too). Exit 0 when done or live already, 1 when
    refused, 2 for a bad kustomize or Helm setting."""
    root = Path(repo_dir)
    request = _request(root, service, env, image, chart)
    if isinstance(request, str):
        print(request, file=sys.stderr)
        return 1
    try:
        builder = local_builder()
    except ToolSettingError as exc:
        print(exc, file=sys.stderr)
        return 2
    policy = request.policy
    relative = policy.path_for(service, env)
    refused = tag_refusal(policy, service, env, request.tag)
    facts = OpeningFacts(
        subject=ServiceSubject(service, version_from_tag(request.tag), relative),
        environment=env, rollback=False, explicit=True,
        tag_refusals=(refused,) if refused else (),
        branch=branch_name(env, service, request.digest), open_pulls={})
    decided = decide_opening(facts)
    edit: Edit | None = None
    if decided == "edit":
        found = _edit(root, request, relative, builder)
        if isinstance(found, str):
            print(found, file=sys.stderr)
            return 1
        file_edit, edit = found
        decided = decide_opening(replace(facts, edit=file_edit))
    # explicit, without pull requests and with the edit read: nothing else is asked for
    assert isinstance(decided, Opening), decided
    if decided.kind == "refused":
        print(decided.message, file=sys.stderr)
        return 1
    if edit is not None:
        for note in edit.notes:
            print(f"note: {note}", file=sys.stderr)
    if decided.kind != "open" or edit is None:
        print(decided.message, file=sys.stderr)
        return 0
    sys.stdout.write(edit.unified_diff())
    if write:
        target = _inside(root, relative)
        assert target is not None  # read from there a moment ago
        try:
            _write_atomically(target, edit.new_text)
        except OSError as exc:
            print(f"{relative}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return 1
    return 0


def _request(root: Path, service: str, env: str, image: str, chart: bool) -> _Request | str:
    """The checked arguments, or why they are refused."""
    policy, issues = check_config_file(str(root / POLICY_PATH))
    if policy is None:
        return "\n".join(str(issue) for issue in issues)
    if service not in policy.services:
        return f"unknown service {service!r}; services are: {', '.join(policy.services)}"
    if env not in policy.environments:
        return (f"unknown environment {env!r}; environments are: "
                f"{', '.join(policy.environments)}")
    option = "--chart" if chart else "--image"
    if policy.services[service].is_chart != chart:
        shipped = "a Helm chart: use --chart" if not chart else "an image: use --image"
        return f"service {service} is {shipped}"
    try:
        ref = parse_image_ref(image)
    except ValueError as exc:
        return f"{option}: {exc}"
    # A loaded policy has every service's image under allowed_images: naming it is enough.
    wanted = policy.services[service].image
    if not same_image(ref.name, wanted):
        return f"{option} names {ref.name}, but service {service} is {wanted}"
    if ref.digest is None or ref.tag is None:
        # Offline there is no registry to read the tag of a bare digest from, and without the
        # tag the tag policy cannot be checked and the file would keep its old tag.
        missing = "a digest" if ref.digest is None else "a tag"
        return (f"{option} must carry {missing} (NAME:TAG@sha256:...): a promotion pins the "
                "digest and writes the tag it was released as")
    return _Request(policy, service, env, ref.tag, ref.digest)


def _edit(root: Path, request: _Request, relative: str, builder: Builder | None
          ) -> tuple[FileEdit, Edit | None] | str:
    """What editing the environment's file comes to, as the opener's edit says it; a string
    when the file cannot be read from the folder."""
    text = _read(root, relative)
    if not isinstance(text, tuple):
        return text
    service = request.policy.services[request.service]
    try:
        edit = promote_image(text[0], image=service.image, tag=request.tag,
                             digest=request.digest, path=relative, tag_key=service.tag_key)
    except ManifestError as exc:
        return FileEdit(f"cannot edit {exc}"), None
    lock = chart_lock_path(service, relative)
    try:
        lock_file = _inside(root, lock) if lock is not None else None
    except RuntimeError:  # a symbolic link loop
        lock_file = None
    if lock is not None and lock_file is not None and is_file(lock_file):
        return FileEdit(chart_lock_refusal(service, lock)), None
    before = edit.occurrences[0] if edit.occurrences else None
    if edit.changed and builder is not None:
        effect = asyncio.run(_local_effect(root, request, relative, edit.new_text, builder))
        if effect.changes_nothing:
            return FileEdit(effect.refusal(service.image)), None
    return FileEdit(changed=edit.changed, live_tag=before.tag if before else None), edit


def _read(root: Path, relative: str) -> tuple[str] | str:
    """The file's text (in a 1-tuple), or why it cannot be read."""
    try:
        target = _inside(root, relative)
        if target is None:
            return f"{relative}: outside the repository"
        if target.exists() and not target.is_file():
            return f"{relative}: cannot read: not a regular file"
        with open(target, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, RuntimeError) as exc:
        return f"{relative}: cannot read: {unreadable_reason(exc)}"
    if len(data) > MAX_FILE_BYTES:
        return (f"{relative}: larger than {MAX_FILE_BYTES} bytes, the most Conveyor reads of "
                "one file")
    try:
        return (data.decode("utf-8"),)
    except UnicodeDecodeError as exc:
        return f"{relative}: {not_utf8(data, exc)}"


async def _local_effect(root: Path, request: _Request, relative: str, new_text: str,
                        builder: Builder) -> PromotionEffect:
    """What the edit changes in the workloads of its environment's render, rendered from the
    folder as the opener renders it from the default branch."""
    index = local_index(root)
    if index is None:
        return PromotionEffect()
    files = LocalFiles(root)
    renders, note = await local_renders(root, files, request.policy, index)
    if note is not None:
        print(f"note: {note}", file=sys.stderr)
    target = next((render.target for render in renders
                   if render.environment == request.environment
                   and request.service in render.services), None)
    if target is None or not builder_renders(builder, target):
        return PromotionEffect()
    edited = {relative: new_text}
    after = await run_render(builder, await walk_inputs(index, target, files, edited), files,
                             edited)
    before = await run_render(builder, await walk_inputs(index, target, files), files)
    compared = render_changes(before, after)
    if isinstance(compared, str):
        return PromotionEffect(target, problem=compared)
    return PromotionEffect(target, compared)


def _inside(root: Path, relative: str) -> Path | None:
    target = (root / relative).resolve()
    return target if target.is_relative_to(root.resolve()) else None


def _write_atomically(target: Path, text: str) -> None:
    mode = target.stat().st_mode
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, mode & 0o777)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
