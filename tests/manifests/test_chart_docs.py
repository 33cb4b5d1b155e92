"""The copy-paste setups of docs/charts.md are what the editor recognises, as written."""

from __future__ import annotations

import re
from pathlib import Path

from bot.manifests import find_images, promote_image

PAGE = Path(__file__).resolve().parents[2] / "docs" / "charts.md"
DIGEST = "sha256:" + "5e" * 32


def test_every_setup_of_the_page_is_found_and_promoted() -> None:
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)
              if "apiVersion" in b]
    shapes = []
    for block in blocks:
        text = block.replace("digest: sha256:…", f"digest: sha256:{'1' * 64}")
        [found] = find_images(text, "ghcr.io/acme/charts/web")
        shapes.append(found.shape)
        edited = promote_image(text, image="ghcr.io/acme/charts/web", tag="1.4.2",
                               digest=DIGEST, path="setup.yaml")
        assert edited.changed_lines
    assert shapes == ["argocd-chart", "flux-ocirepository", "flux-helmrelease"]
