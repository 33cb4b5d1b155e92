"""A render that reads a symbolic link or a submodule is not run (pure): its copy would hold
the link's target path as text and nothing of the submodule, while a checkout follows the link
and clones the submodule."""

from __future__ import annotations

from bot.github.snapshot import tree_listing
from bot.render.inputs import SUBMODULE_MODE, SYMLINK_MODE, NeedTexts, TreeIndex
from bot.render.reads import RenderInputs, render_inputs
from bot.render.targets import ChartTarget, FolderTarget, OverlayTarget, Target

SHA = "0" * 40
CHART = {"charts/api/Chart.yaml": "apiVersion: v2\nname: api\nversion: 0.1.0\n",
         "charts/api/values.yaml": "image: ghcr.io/acme/api:1.0.0\n",
         "charts/api/templates/deployment.yaml": "kind: Deployment\n"}
OVERLAY = {"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
           "apps/web/base/deployment.yaml": "kind: Deployment\n",
           "apps/web/overlays/prod/kustomization.yaml": "resources:\n  - ../../base\n"}
LINK = "is a symbolic link: Conveyor renders files as GitHub stores them and cannot judge a " \
       "link; replace it with the file"


def inputs(files: dict[str, str], modes: dict[str, str], target: Target) -> RenderInputs:
    index = TreeIndex({path: len(text) for path, text in files.items()}, modes)
    texts: dict[str, str | None] = {}
    while isinstance(found := render_inputs(index, target, texts), NeedTexts):
        texts.update({path: files.get(path) for path in found.paths})
    return found


def chart(*value_files: str) -> ChartTarget:
    return ChartTarget("charts/api", value_files, "api", "production")


def test_the_tree_keeps_the_mode_of_each_entry_that_is_not_a_regular_file() -> None:
    # "Get a tree" (GitHub REST, git/trees): a link is a blob of mode 120000, a submodule an
    # entry of type commit and mode 160000 with no size.
    listing = tree_listing([
        {"path": "a.yaml", "mode": "100644", "type": "blob", "sha": SHA, "size": 3},
        {"path": "run.sh", "mode": "100755", "type": "blob", "sha": SHA, "size": 4},
        {"path": "b.yaml", "mode": "120000", "type": "blob", "sha": SHA, "size": 6},
        {"path": "lib", "mode": "040000", "type": "tree", "sha": SHA},
        {"path": "vendor", "mode": "160000", "type": "commit", "sha": SHA}])
    assert listing.blobs == {"a.yaml": (SHA, 3), "run.sh": (SHA, 4), "b.yaml": (SHA, 6)}
    assert listing.modes == {"b.yaml": SYMLINK_MODE, "vendor": SUBMODULE_MODE}


def test_a_link_or_a_submodule_below_a_chart_is_a_problem() -> None:
    link = "charts/api/templates/miner.yaml"
    found = inputs({**CHART, link: "../../../misc/a: b"}, {link: SYMLINK_MODE}, chart())
    assert found.problems == (f"`{link}` {LINK}",)
    found = inputs(CHART, {"charts/api/charts/cache": SUBMODULE_MODE}, chart())
    assert found.problems == ("`charts/api/charts/cache` is a submodule: Conveyor renders "
                              "files as GitHub stores them and cannot judge another "
                              "repository's files; replace it with the files",)


def test_a_values_file_outside_the_chart_that_is_a_link_is_a_problem() -> None:
    values = "envs/prod/values.yaml"
    found = inputs({**CHART, values: "x"}, {values: SYMLINK_MODE}, chart(values))
    assert found.problems == (f"`{values}` {LINK}",)


def test_links_the_render_does_not_read_are_left_alone() -> None:
    elsewhere = {"docs/latest.md": SYMLINK_MODE, "vendor": SUBMODULE_MODE}
    assert inputs({**CHART, "docs/latest.md": "x"}, elsewhere, chart()).problems == ()
    assert inputs({**OVERLAY, "docs/latest.md": "x"}, elsewhere,
                  OverlayTarget("apps/web/overlays/prod")).problems == ()


def test_a_link_in_any_folder_a_build_reaches_is_a_problem() -> None:
    links = {"apps/web/base/notes.md": SYMLINK_MODE,
             "apps/web/overlays/prod/notes.md": SYMLINK_MODE}
    found = inputs({**OVERLAY, **dict.fromkeys(links, "../../README.md")}, links,
                   OverlayTarget("apps/web/overlays/prod"))
    assert found.problems == (f"`apps/web/base/notes.md` {LINK} (+1 more)",)
    named = {"apps/web/base/deployment.yaml": SYMLINK_MODE}  # by the base's kustomization
    found = inputs(OVERLAY, named, OverlayTarget("apps/web/overlays/prod"))
    assert found.problems == (f"`apps/web/base/deployment.yaml` {LINK}",)


def test_a_kustomization_naming_a_link_or_what_a_submodule_holds_is_a_problem() -> None:
    prod = "resources:\n  - ../../base\n  - ../../shared\n  - ../../../../vendor/web\n"
    files = {**OVERLAY, "apps/web/overlays/prod/kustomization.yaml": prod,
             "apps/web/shared": "../../misc/evil"}
    found = inputs(files, {"apps/web/shared": SYMLINK_MODE, "vendor": SUBMODULE_MODE},
                   OverlayTarget("apps/web/overlays/prod"))
    assert found.problems == (f"`apps/web/shared` {LINK}",
                              "`vendor` is a submodule: Conveyor renders files as GitHub "
                              "stores them and cannot judge another repository's files; "
                              "replace it with the files")


def test_a_recursive_folder_of_manifests_reads_its_subfolders() -> None:
    files = {"manifests/prod/app.yaml": "kind: Deployment\n"}
    modes = {"manifests/prod/extra/vendor": SUBMODULE_MODE}
    assert inputs(files, modes, FolderTarget("manifests/prod")).problems == ()
    assert "`manifests/prod/extra/vendor` is a submodule" in inputs(
        files, modes, FolderTarget("manifests/prod", recurse=True)).problems[0]
