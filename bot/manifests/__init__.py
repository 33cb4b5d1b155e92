"""Pure image-reference editing for deployment manifests.

``find_all_images`` lists every image reference of a YAML file with the position of each of its
values (``ImageOccurrence.spans``): Kustomize ``images:`` entries, Helm values blocks (also ones
that merge others), ``image:`` strings and image volumes, Argo CD Application sources
(``kustomize.images``, ``helm.parameters``, ``helm.valuesObject``) and argocd-image-updater
write-back files, Flux setter comments and Conveyor marker comments. ``find_images`` keeps one
image's. ``promote_image`` rewrites one image's tag and digest by splicing text at the exact
positions of the old values, re-parses the result and verifies that exactly the intended values
changed. The formats are documented in ``docs/manifests.md`` and ``comments.py``.

Pure: it imports only the standard library, ruamel.yaml, `bot.yamlread`, `bot.domain` and
`bot.names`.
"""

from bot.manifests.api import find_all_images, find_images, promote_image
from bot.manifests.errors import (
    AmbiguousImageError,
    ImageNotFoundError,
    ManifestError,
    UneditableImageError,
    VerificationError,
    YamlSyntaxError,
)
from bot.manifests.model import Edit, ImageOccurrence, ValueSpan

__all__ = [
    "AmbiguousImageError",
    "Edit",
    "ImageNotFoundError",
    "ImageOccurrence",
    "ManifestError",
    "UneditableImageError",
    "ValueSpan",
    "VerificationError",
    "YamlSyntaxError",
    "find_all_images",
    "find_images",
    "promote_image",
]
