"""What a pull request changes in the objects that tell the cluster what to sync, read for
the gate.

Only the YAML files the PR changes are read, before and after the merge (the default branch
as it is now, and what merging the PR into it makes: `merge_result`): an Argo CD
``Application`` or ``ApplicationSet``, a Flux ``Kustomization`` or ``HelmRelease`` among them
is matched by kind, namespace and name on both sides (a moved file is the same object). Where
one of its sources, at the base, renders a gated environment's folder or chart — or its file
is the environment's own — it is that environment's pointer; so is one whose source renders
such a place at the head. A source that changes (repository, revision, path or chart, value
files, inline values, parameters, Kustomize settings) is judged as the environment's change:
what it follows after the merge is rendered there and every image no workload ran before is
judged; one that would follow another repository, another revision than the default branch,
or what Conveyor cannot render fails the gate naming it; a deleted pointer asks for the
environment's approvals. A Flux source is the ``GitRepository`` its ``sourceRef`` names,
looked for among the changed files first, else in the repository's files once.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import BuildFinding, ImageChange
from bot.domain.policy import Policy
from bot.github.repos import FileTooLarge, get_file
from bot.github.snapshot import TreeTruncated
from bot.promotion.builds import RepoBuilds
from bot.promotion.gate.build_changes import BuildChanges, judge_images
from bot.promotion.gate.changes import ChangedFile, ChangeReader
from bot.promotion.gate.merge_result import MergeResult, merge_result
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.render.appsets import Expansion, expand
from bot.render.build import BuildResult
from bot.render.diff import compare
from bot.render.inputs import NeedTexts, TreeIndex
from bot.render.pointers import Here, Place, follow_target, points_at
from bot.render.syncs import Follow, SyncObject, git_repository, may_hold_syncs, sync_objects
from bot.render.targets import FolderTarget, Target
from bot.render.workloads import image_changes

YAML_SUFFIXES = (".yaml", ".yml")
# A repository scanned for the GitRepository a Flux object names: at most this many files.
MAX_SCANNED = 5000


@dataclass(frozen=True)
class Source:
    """One source of a pointer at one commit: what it follows and what that renders."""

    follow: Follow
    url: str
    revision: str
    target: Target | str  # a problem: why it cannot be rendered


class Side:
    """The sync objects of the changed files at one commit, with their sources resolved."""

    def __init__(self, builds: RepoBuilds, commit: str, here: Here, index: TreeIndex) -> None:
        self.builds, self.commit, self.here, self.index = builds, commit, here, index
        self.objects: dict[tuple[str, str, str], SyncObject] = {}
        self._scanned: list[SyncObject] | None = None

    async def read(self, paths: list[str]) -> None:
        present = [path for path in paths if path in self.index.sizes]
        texts = await self.builds.texts(self.commit, present)
        for path in present:
            text = texts[path]
            if text is not None and may_hold_syncs(text):
                for obj in sync_objects(path, text):
                    self.objects.setdefault(obj.identity, obj)

    async def sources(self, obj: SyncObject) -> dict[str, Source] | str:
        """Each source of ``obj`` by key; a problem when an ApplicationSet cannot be
        expanded."""
        if obj.kind == "ApplicationSet":
            expansion = await self.expansion(obj)
            if expansion.problem is not None:
                return expansion.problem
            follows = expansion.follows
        else:
            follows = obj.follows
        found = {}
        for key, follow in follows:
            url, revision = follow.url, follow.revision
            if obj.source_ref is not None:
                url, revision = await self._flux_source(obj.source_ref)
            found[key] = Source(follow, url, revision,
                                follow_target(follow, url, revision, self.here, self.index))
        return found

    async def expansion(self, obj: SyncObject) -> Expansion:
        texts: dict[str, str | None] = {}
        while isinstance(found := expand(obj, self.index, texts, self.here.follows), NeedTexts):
            texts.update(await self.builds.texts(self.commit, list(found.paths)))
        return found

    async def _flux_source(self, ref: tuple[str, str, str]) -> tuple[str, str]:
        kind, name, namespace = ref
        if kind != "GitRepository":
            return f"a Flux {kind or 'source'} `{name}`", ""
        wanted = ("GitRepository", namespace, name)
        found = self.objects.get(wanted)
        if found is None:
            found = next((o for o in await self._scan() if o.identity == wanted), None)
        if found is None:
            return f"the GitRepository `{namespace}/{name}`, which this repository does not " \
                   "hold", ""
        return git_repository(found)

    async def _scan(self) -> list[SyncObject]:
        """Every GitRepository of the commit's YAML files: read once, when a Flux object of a
        changed file names one that is not among them."""
        if self._scanned is None:
            paths = [p for p in sorted(self.index.sizes) if p.endswith(YAML_SUFFIXES)]
            self._scanned = []
            if len(paths) <= MAX_SCANNED:
                await self.builds.prefetch(self.commit, paths)
                texts = await self.builds.texts(self.commit, paths)
                self._scanned = [obj for path in paths if (text := texts[path]) is not None
                                 and "GitRepository" in text
                                 for obj in sync_objects(path, text)
                                 if obj.kind == "GitRepository"]
        return self._scanned


async def read_pointer_changes(reader: ChangeReader, gh: GitHubAPI, repo: DeploymentRepo,
                               facts: PullFacts, files: list[ChangedFile],
                               judged: list[ImageChange], found: BuildChanges) -> None:
    """The pointer changes of the PR's changed YAML files, judged into ``found``."""
    at_base = [f.previous or f.path for f in files if f.status != "added"
               and (f.previous or f.path).endswith(YAML_SUFFIXES)]
    at_head = [f.path for f in files if f.status != "removed" and f.path.endswith(YAML_SUFFIXES)]
    if not at_base and not at_head:
        return
    builds = RepoBuilds(reader.ctx, gh, repo.full_name, repo.default_branch)
    here = builds.here
    try:
        merge = found.merge = await merge_result(gh, builds, repo, facts, found.merge)
        base = Side(builds, merge.before, here, await builds.index(merge.before))
        head = Side(builds, merge.after, here, await builds.index(merge.after))
        await base.read(at_base)
        await head.read(at_head)
        if not base.objects and not head.objects:
            return
        judge = _Judge(reader, gh, repo.policy, builds, facts, merge, base, head, judged, found)
        judge.places = {merge.before: await _places(builds, repo.policy, merge.before),
                        merge.after: await _places(builds, repo.policy, merge.after)}
        for identity in dict.fromkeys([*base.objects, *head.objects]):
            await judge.pointer(base.objects.get(identity), head.objects.get(identity))
    except TreeTruncated as exc:
        # Without the tree nothing they follow can be rendered: changed objects fail closed.
        objects = [obj for ref, paths in ((facts.base_sha, at_base), (facts.head_sha, at_head))
                   for path in paths for obj in await _read_alone(gh, repo.full_name, path, ref)
                   if obj.kind != "GitRepository"]
        if not objects:
            return
        envs = sorted({env.name for env in repo.policy.environments.values() if env.gated})
        found.findings += [BuildFinding(env, objects[0].describe(), kind="pointer",
                                        problem=f"what Conveyor cannot render: {exc}")
                           for env in envs]


async def _read_alone(gh: GitHubAPI, full_name: str, path: str, ref: str) -> list[SyncObject]:
    """The sync objects of one file read on its own (the contents API)."""
    try:
        read = await get_file(gh, full_name, path, ref)
    except FileTooLarge:
        return []
    return sync_objects(path, read.text) if read is not None else []


class _Judge:
    def __init__(self, reader: ChangeReader, gh: GitHubAPI, policy: Policy, builds: RepoBuilds,
                 facts: PullFacts, merge: MergeResult, base: Side, head: Side,
                 judged: list[ImageChange], found: BuildChanges) -> None:
        self.reader, self.gh, self.policy, self.builds = reader, gh, policy, builds
        self.merge = merge
        self.facts, self.base, self.head, self.judged, self.found = (facts, base, head, judged,
                                                                     found)
        self.places: dict[str, list[Place]] = {}
        self.claimed = frozenset(policy.path_for(s, e) for s in policy.services
                                 for e in policy.environments)

    async def pointer(self, old: SyncObject | None, new: SyncObject | None) -> None:
        if old is not None and new is not None and old.spec == new.spec and (
                old.source_ref is None):
            return  # the same object, maybe moved: it follows what it followed
        before = await self.base.sources(old) if old is not None else {}
        after = await self.head.sources(new) if new is not None else {}
        shown = (new or old)
        assert shown is not None
        if isinstance(before, str) or isinstance(after, str):
            await self._unexpanded(shown, old, new, before, after)
            return
        for key in dict.fromkeys([*before, *after]):
            await self._source(shown, old, before.get(key), after.get(key))

    async def _source(self, obj: SyncObject, old: SyncObject | None, before: Source | None,
                      after: Source | None) -> None:
        if before is not None and after is not None and before == after:
            return
        places = {p.environment: p for p in self._reached(before, self.merge.before, old)}
        places.update({p.environment: p for p in self._reached(after, self.merge.after, obj)})
        for place in places.values():
            what = obj.describe()
            unjudged = self.merge.problem or self.merge.conflicting(
                [obj.file], self.builds.here.default_branch)
            if unjudged is not None:
                self.found.findings.append(BuildFinding(place.environment, what,
                                                        kind="pointer", problem=unjudged))
            elif after is None:
                self.found.findings.append(BuildFinding(place.environment, what, kind="pointer",
                                                        needs_approval=True))
            elif isinstance(after.target, str):
                self.found.findings.append(BuildFinding(place.environment, what, kind="pointer",
                                                        problem=after.target))
            else:
                await self._render(place, what, before, after.target)

    def _reached(self, source: Source | None, commit: str, obj: SyncObject | None
                 ) -> list[Place]:
        if source is None or isinstance(source.target, str):
            # what it follows is not this repository's to render (a chart of a Helm or OCI
            # repository, say): an environment's own Application of that kind is judged by
            # the file rules, as a chart service's version
            return []
        places = self.places[commit]
        own = [p for p in places if obj is not None and obj.file in p.files]
        return own + [p for p in places if p not in own
                      and points_at(source.target, p, self.claimed)]

    async def _render(self, place: Place, what: str, before: Source | None,
                      target: Target) -> None:
        env = place.environment
        if not self.builds.renders(target):
            self.found.findings.append(BuildFinding(env, what, kind="pointer", problem=(
                f"{target.describe()}, and its tool is off here: what it renders cannot be "
                "judged")))
            return
        reads = (await self.builds.inputs(self.merge.after, target)).files
        unjudged = self.merge.conflicting(reads, self.builds.here.default_branch)
        if unjudged is not None:
            self.found.findings.append(BuildFinding(env, what, kind="pointer", problem=unjudged))
            return
        after = await self.builds.build(self.merge.after, target)
        if after.images is None:
            self.found.findings.append(BuildFinding(env, what, kind="pointer", problem=(
                f"{target.describe()}, which does not render: {after.error}")))
            return
        before_render = await self._baseline(place, before)
        diff = compare(before_render.resources if before_render is not None
                       and before_render.images is not None else None, after.resources)
        changed = image_changes(dict(before_render.images or {})
                                if before_render is not None else {}, dict(after.images))
        if diff.empty and not changed:
            return
        self.found.diffs.append((f"{env}: {what} now follows {target.describe()}", diff))
        self.found.findings.append(BuildFinding(env, what, kind="pointer",
                                                follows=target.describe(),
                                                changes=tuple(str(c) for c in changed)))
        await judge_images(self.reader, self.gh, self.policy, self.facts, env, what,
                           place.services, before_render, changed, self.judged, self.found)

    async def _baseline(self, place: Place, before: Source | None) -> BuildResult | None:
        """What the environment runs now: what the pointer rendered at the base, else the
        environment's own render there."""
        target: Target | None = None
        ours = [p for p in self.places[self.merge.before] if p.environment == place.environment]
        if before is not None and not isinstance(before.target, str) and any(
                points_at(before.target, p, self.claimed) for p in ours):
            target = before.target
        elif ours:
            target = ours[0].target or FolderTarget(ours[0].folder)
        if target is None or not self.builds.renders(target):
            return None
        return await self.builds.build(self.merge.before, target)

    async def _unexpanded(self, obj: SyncObject, old: SyncObject | None,
                          new: SyncObject | None, before: dict[str, Source] | str,
                          after: dict[str, Source] | str) -> None:
        """An ApplicationSet Conveyor cannot expand, changed: it fails closed for every
        gated environment its template could reach."""
        problem = after if isinstance(after, str) else before
        assert isinstance(problem, str)
        sides = [(s, o) for s, o in ((self.base, old), (self.head, new)) if o is not None]
        reached: list[Place] = []
        for side, set_object in sides:
            expansion = await side.expansion(set_object)
            for follow in expansion.template:
                reached += [p for p in _could_reach(follow, self.places[side.commit],
                                                    self.base.here) if p not in reached]
        for place in reached:
            self.found.findings.append(BuildFinding(place.environment, obj.describe(),
                                                    kind="pointer", problem=(
                f"what Conveyor cannot expand: {problem}")))


def _could_reach(follow: Follow, places: list[Place], here: Here) -> list[Place]:
    """The places an unfilled template source could render: every one when its repository
    or path is a template expression, else those of its folder."""
    if "{{" not in follow.url and not here.same(follow.url):
        return []
    if follow.path is None:
        return []
    if "{{" in follow.path:
        return list(places)
    return [p for p in places if p.folder == follow.path]


async def _places(builds: RepoBuilds, policy: Policy, commit: str) -> list[Place]:
    """Every gated environment's place at a commit: its render's target, or the folder of a
    file judged as it is."""
    renders = await builds.environments(commit, policy, gated_only=True)
    places = [Place(r.environment, r.services, tuple(policy.path_for(s, r.environment)
                                                     for s in r.services), r.target)
              for r in renders]
    rendered = {(r.environment, s) for r in renders for s in r.services}
    plain: dict[tuple[str, str], list[str]] = {}
    for env in policy.environments.values():
        if env.gated:
            for service in policy.services:
                if (env.name, service) not in rendered:
                    path = policy.path_for(service, env.name)
                    plain.setdefault((env.name, posixpath.dirname(path)), []).append(service)
    places += [Place(env, tuple(services), tuple(policy.path_for(s, env) for s in services),
                     None) for (env, _), services in plain.items()]
    return places
