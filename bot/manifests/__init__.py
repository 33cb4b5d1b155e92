"""Pure image-reference editing for deployment manifests.

``find_images`` / ``find_all_images`` locate image references in a YAML file (Kustomize
``images:`` entries, Helm values blocks, ``image:`` strings, Flux setter comments and Conveyor
marker comments); ``promote_image`` rewrites one image's tag and digest by splicing text at the
exact positions of the old values, re-parses the result and verifies that exactly the intended
values changed. The formats are documented in ``docs/manifests.md`` and ``comments.py``.
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
from bot.manifests.model import Edit, ImageOccurrence

__all__ = [
    "AmbiguousImageError",
    "Edit",
    "ImageNotFoundError",
    "ImageOccurrence",
    "ManifestError",
    "UneditableImageError",
    "VerificationError",
    "YamlSyntaxError",
    "find_all_images",
    "find_images",
    "promote_image",
]
