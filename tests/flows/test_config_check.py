"""`conveyor/config-check` in depth, over HTTP against the emulator: Kubernetes schemas,
kustomization structure, Helm values schemas; each finding an annotation on its line."""

from __future__ import annotations

from typing import Any

from bot.sandbox.demo import DEMO_FILES, DEPLOY_REPO
from tests.harness import World, hand_pr

CHECK = "conveyor/config-check"
DIGEST = "sha256:" + "ab" * 32


async def check_of(world: World, pr: dict[str, Any]) -> dict[str, Any]:
    runs = world.emulator.check_runs(DEPLOY_REPO, pr["head"]["sha"], CHECK)
    assert len(runs) == 1, runs
    return runs[0]


def lines(run: dict[str, Any], path: str) -> dict[int, str]:
    """The annotations of ``path`` by line; several on one line joined with " | "."""
    found: dict[int, str] = {}
    for a in run["output"]["annotations"]:
        if a["path"] == path:
            found[a["start_line"]] = " | ".join(filter(None, (found.get(a["start_line"]),
                                                               a["message"])))
    return found


async def pr_with(world: World, files: dict[str, str], title: str) -> dict[str, Any]:
    branch = "hand/" + title.lower().replace(" ", "-")
    await world.emulator.push_files(DEPLOY_REPO, files, branch=branch, author="alice",
                                    message=title)
    await world.emulator.open_pull(DEPLOY_REPO, branch, title=title, author="alice")
    await world.settle()
    return world.pull(title, state="open")


BROKEN_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: "3"
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1.0.0
          imagePullPolicy: Always
          ports:
            - containerPort: 8080
              protocl: TCP
"""


async def test_an_invalid_deployment_is_annotated_on_the_lines_at_fault(world: World) -> None:
    pr = await hand_pr(world, "apps/web/base/deployment.yaml", BROKEN_DEPLOYMENT,
                       title="Break the web deployment")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    found = lines(run, "apps/web/base/deployment.yaml")
    assert set(found) == {6, 19}, found
    assert "spec.replicas: expected integer, got string '3'" in found[6]
    assert "unknown field 'protocl'" in found[19] and "did you mean 'protocol'" in found[19]
    summary = run["output"]["summary"]
    assert "**`apps/web/base/deployment.yaml`** (2)" in summary
    assert "1 Kubernetes resource(s) against Kubernetes 1." in summary


async def test_an_unknown_core_kind_is_an_error_and_a_custom_resource_a_note(
    world: World,
) -> None:
    typo = "apiVersion: apps/v1\nkind: Deploymnet\nmetadata:\n  name: web\n"
    pr = await hand_pr(world, "apps/web/base/typo.yaml", typo, title="A typo")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    assert "unknown kind 'Deploymnet'" in lines(run, "apps/web/base/typo.yaml")[2]

    rollout = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n---\n"
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: web\n"
        "spec:\n  anything: [goes]\n"
    )
    pr = await hand_pr(world, "apps/web/base/rollout.yaml", rollout, title="A rollout",
                       branch="hand/rollout")
    run = await check_of(world, pr)
    assert run["conclusion"] == "success", run["output"]
    assert run["output"]["annotations"] == []
    summary = run["output"]["summary"]
    assert "### Not validated" in summary and "argoproj.io/v1alpha1 Rollout web" in summary
    assert "- line 8:" in summary and "2 YAML document(s)" in summary
    assert "1 not validated" in run["output"]["title"]


async def test_a_kustomization_naming_a_missing_file_fails(world: World) -> None:
    text = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "  - ../../base\n  - hpa.yaml\n  - https://github.com/acme/shared//base?ref=v1\n"
        "patches:\n  - path: replicas.yaml\n"
    )
    pr = await hand_pr(world, "apps/web/overlays/staging/kustomization.yaml", text,
                       title="Reference missing files")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    found = lines(run, "apps/web/overlays/staging/kustomization.yaml")
    # the directory exists; the remote URL is not a missing file, and the build says it is
    # not fetched
    assert set(found) == {1, 5, 8}, found
    assert "names the remote resource `https://github.com/acme/shared//base?ref=v1`, which " \
        "Conveyor does not fetch" in found[1]
    assert "'hpa.yaml' does not exist" in found[5]
    assert "'replicas.yaml' does not exist" in found[8]


async def test_a_deleted_file_still_named_by_its_kustomization_fails(world: World) -> None:
    branch = "hand/delete-deployment"
    await world.emulator.push_files(DEPLOY_REPO, {"apps/web/base/deployment.yaml": None},
                                    branch=branch, author="alice", message="Delete")
    await world.emulator.open_pull(DEPLOY_REPO, branch, title="Delete", author="alice")
    await world.settle()
    run = await check_of(world, world.pull("Delete", state="open"))
    assert run["conclusion"] == "failure"
    found = lines(run, "apps/web/base/kustomization.yaml")
    assert "'deployment.yaml' does not exist" in found[2], found


async def test_duplicated_images_and_a_digest_in_new_tag_fail(world: World) -> None:
    text = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "  - ../../base\nimages:\n  - name: ghcr.io/acme/web\n    newTag: \"1.0.0\"\n"
        f"  - name: ghcr.io/acme/api\n    newTag: {DIGEST}\n"
        "  - name: ghcr.io/acme/web\n    digest: sha256:1234\n"
    )
    pr = await hand_pr(world, "apps/web/overlays/staging/kustomization.yaml", text,
                       title="Bad images")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    found = lines(run, "apps/web/overlays/staging/kustomization.yaml")
    assert "newTag: holds a digest" in found[9], found
    assert "ghcr.io/acme/web is listed twice (first at line 6)" in found[10]
    assert "digest: must be sha256: followed by 64" in found[11]


VALUES_SCHEMA = """\
{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["image", "replicaCount"],
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 1},
    "image": {
      "type": "object",
      "required": ["repository"],
      "properties": {
        "repository": {"type": "string"},
        "tag": {"type": "string"},
        "pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]}
      },
      "additionalProperties": false
    }
  }
}
"""
# the demo chart's own defaults: what its templates read, and what the schema requires
CHART_DEFAULTS = DEMO_FILES["charts/api/values.yaml"]


async def test_a_values_file_is_validated_against_its_chart_schema(world: World) -> None:
    staging = (
        "replicaCount: two\n"
        "image:\n  repository: ghcr.io/acme/api\n  tag: \"0.9.0\"\n  pullPolicy: Sometimes\n"
    )
    pr = await pr_with(world, {
        "charts/api/values.schema.json": VALUES_SCHEMA,
        "charts/api/values.yaml": CHART_DEFAULTS,
        "charts/api/values-staging.yaml": staging,
        # sets only what differs: the chart's defaults fill in the required keys
        "charts/api/values-production.yaml": "replicaCount: 4\n",
    }, "Add a values schema")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    found = lines(run, "charts/api/values-staging.yaml")
    assert set(found) == {1, 5}, found
    assert "replicaCount: expected integer, got string 'two'" in found[1]
    assert "image.pullPolicy: must be one of Always, IfNotPresent, Never" in found[5]
    assert lines(run, "charts/api/values-production.yaml") == {}
    assert "2 Helm values file(s)" in run["output"]["summary"]


async def test_many_findings_are_sent_in_batches_of_fifty(world: World) -> None:
    text = "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\ndata: [{i}]\n"
        for i in range(60)
    )
    pr = await hand_pr(world, "apps/web/base/configmaps.yaml", text, title="Many")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    assert len(run["output"]["annotations"]) == 60
    assert run["output"]["title"] == "60 problem(s) in 1 file(s)"


async def test_without_the_tree_directory_listings_find_the_same(world: World) -> None:
    """GitHub truncates a very large tree; the check then lists the directories it needs."""
    from bot.github.immutable import ShaStore
    from bot.promotion.configcheck import check_change

    text = ("resources:\n  - ../../base\n  - gone.yaml\ncomponents:\n  - ../../base/deployment.yaml"
            "\nconfigMapGenerator:\n  - name: c\n    files: [../../base]\n")
    path = "apps/web/overlays/prod/kustomization.yaml"
    root = "resources:\n  - apps/web/base\n  - README.md\n  - nowhere.yaml\n"
    sha = await world.emulator.push_files(DEPLOY_REPO, {path: text, "kustomization.yaml": root},
                                          branch="hand/listings", author="alice",
                                          message="Listings")
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    found = {}
    for use_tree in (True, False):
        gh.shas = ShaStore()  # nothing remembered from the other run
        report = await check_change(gh, DEPLOY_REPO, None, sha, [path, "kustomization.yaml"],
                                    use_tree=use_tree)
        found[use_tree] = [(f.path, f.line, f.message) for f in report.findings]
    assert found[True] == found[False] == [
        (path, 3, f"resources: 'gone.yaml' does not exist ({path.rsplit('/', 1)[0]}/gone.yaml "
                  "is not in the repository at this commit)"),
        (path, 8, "configMapGenerator: '../../base' is a directory; a file is needed here"),
        ("kustomization.yaml", 4, "resources: 'nowhere.yaml' does not exist (nowhere.yaml is "
                                  "not in the repository at this commit)"),
    ]


async def test_a_promotion_merged_as_it_was_opened_is_checked_once_at_its_merge(
        world: World) -> None:
    await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    assert staging["merged"]
    # nobody could read a check on the PR before it merged: the push of its merge has it
    assert world.emulator.check_runs(DEPLOY_REPO, staging["head"]["sha"], CHECK) == []
    [run] = world.emulator.check_runs(DEPLOY_REPO, staging["merge_commit_sha"], CHECK)
    assert run["conclusion"] == "success"

    # the opened event again (a replica or a restarted process that did not open the PR):
    # the PR's own branch says it merges as it opens
    world.conveyor.door.seen.clear()
    opened = next(d for d in world.emulator.deliveries if d.event == "pull_request"
                  and d.payload["action"] == "opened"
                  and d.payload["pull_request"]["number"] == staging["number"])
    assert await world.emulator.redeliver(opened.id) == 202
    await world.settle()
    assert world.emulator.check_runs(DEPLOY_REPO, staging["head"]["sha"], CHECK) == []


async def test_a_promotion_whose_merge_waits_gets_its_config_check(world: World) -> None:
    world.emulator.faults.merge_not_mergeable_rate = 1.0  # GitHub is computing mergeability
    await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging", state="open")
    [run] = world.emulator.check_runs(DEPLOY_REPO, staging["head"]["sha"], CHECK)
    assert run["conclusion"] == "success"  # posted by its opener, once


async def test_a_hand_written_pr_on_a_promotion_like_branch_is_checked(world: World) -> None:
    # only a PR Conveyor opened merges as it opens: a person's branch name proves nothing
    branch = "conveyor/staging/web-0123456789ab"
    await world.emulator.push_files(DEPLOY_REPO, {"README.md": "# tuned\n"}, branch=branch,
                                    author="alice")
    await world.emulator.open_pull(DEPLOY_REPO, branch, title="Looks like a promotion",
                                   author="alice")
    await world.settle()
    look_alike = world.pull("Looks like a promotion", state="open")
    assert len(world.emulator.check_runs(DEPLOY_REPO, look_alike["head"]["sha"], CHECK)) == 1


async def test_a_job_run_again_posts_no_second_check_run(world: World) -> None:
    """A delivery's job can run twice (claimed from a replica killed after it posted, retried
    after a later step failed): the commit keeps its one `conveyor/config-check` run, with its
    annotations once."""
    from bot.promotion.configcheck import run_config_check

    pr = await pr_with(world, {"apps/web/base/deployment.yaml": BROKEN_DEPLOYMENT}, "Twice")
    first = await check_of(world, pr)
    ctx = world.conveyor.ctx
    gh = await ctx.clients.installation(world.demo.installation_id)
    await run_config_check(ctx, gh, DEPLOY_REPO, None, pr["head"]["sha"],
                           ["apps/web/base/deployment.yaml"])
    again = await check_of(world, pr)
    assert again["id"] == first["id"]
    assert again["output"]["annotations"] == first["output"]["annotations"]
