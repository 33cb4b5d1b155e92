"""The one exception type of the manifest editor."""

from __future__ import annotations


class ManifestError(Exception):
    """A file that cannot be edited safely; ``str()`` is ``path:line: message``.

    ``line`` is 1-based; 0 when the problem is not tied to a line.
    """

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message

    def __reduce__(self) -> tuple[type[ManifestError], tuple[str, int, str]]:
        # Edits of very large files run in another process (bot/runtime/offload.py): rebuilt there.
        return type(self), (self.path, self.line, self.message)


class ImageNotFoundError(ManifestError):
    """The requested image does not occur in the file."""


class AmbiguousImageError(ManifestError):
    """The file names the image in ways that cannot be edited consistently."""


class DuplicateKeyError(ManifestError):
    """A mapping names the same key twice: deploy tools disagree on which one counts."""


class YamlSyntaxError(ManifestError):
    """The file (or, for a verification failure, the edited text) is not valid YAML."""


class VerificationError(ManifestError):
    """The edited text does not differ from the original in exactly the intended values."""


class UneditableImageError(ManifestError):
    """The image was found but its value cannot be edited in place (e.g. a block scalar)."""
