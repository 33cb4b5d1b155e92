"""A Sigstore instance's trusted root, fetched through its TUF repository the way
sigstore-python's own TUF client does it: python-tuf's `Updater` walks the chain of root
metadata from a bootstrap root shipped with the code, refreshes timestamp, snapshot and targets
metadata, and downloads the `trusted_root.json` target only if the signed metadata vouch for
it. The verified metadata and target are kept in a cache directory, so that the next refresh
downloads only what changed."""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from tuf.api import exceptions as tuf_errors
from tuf.ngclient.config import UpdaterConfig
from tuf.ngclient.updater import Updater
from tuf.ngclient.urllib3_fetcher import Urllib3Fetcher

from bot import __version__

PUBLIC_GOOD_URL = "https://tuf-repo-cdn.sigstore.dev"
GITHUB_URL = "https://tuf-repo.github.com"
TRUSTED_ROOT = "trusted_root.json"
SOCKET_TIMEOUT = 10  # seconds, per connection and between bytes


class TufError(Exception):
    """A TUF repository that did not give a verified trusted root; one line."""


@dataclass(frozen=True)
class TufRepository:
    """One TUF repository: its name in /healthz, its URL, the root metadata trusted first."""

    name: str
    url: str
    bootstrap: bytes

    def fetch(self, cache: Path) -> bytes:
        """The repository's verified `trusted_root.json` (blocking: network and disk)."""
        base = cache / quote(self.url, safe="")
        metadata, targets = base / "metadata", base / "targets"
        try:
            metadata.mkdir(parents=True, exist_ok=True)
            targets.mkdir(parents=True, exist_ok=True)
            updater = Updater(
                metadata_dir=str(metadata), metadata_base_url=self.url,
                target_dir=str(targets), target_base_url=f"{self.url}/targets/",
                fetcher=Urllib3Fetcher(socket_timeout=SOCKET_TIMEOUT,
                                       app_user_agent=f"conveyor/{__version__}"),
                config=UpdaterConfig(), bootstrap=self.bootstrap)
            updater.refresh()
            info = updater.get_targetinfo(TRUSTED_ROOT)
            if info is None:
                raise TufError(f"{self.url} lists no {TRUSTED_ROOT}")
            path = updater.find_cached_target(info) or updater.download_target(info)
            return Path(path).read_bytes()
        except (tuf_errors.RepositoryError, tuf_errors.DownloadError, OSError) as exc:
            raise TufError(f"{self.url}: {type(exc).__name__}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or ["no detail"])[0][:200]


def public_good() -> TufRepository:
    """Sigstore's public-good instance, bootstrapped from the root sigstore-python ships."""
    root = (importlib.resources.files("sigstore") / "_store" / quote(PUBLIC_GOOD_URL, safe="")
            / "root.json").read_bytes()
    return TufRepository("public-good", PUBLIC_GOOD_URL, root)


def github() -> TufRepository:
    """GitHub's instance, bootstrapped from the root the GitHub CLI ships
    (`github-tuf-root.json` beside this module: version 3 of tuf-repo.github.com's root)."""
    root = (importlib.resources.files("bot.attestations") / "github-tuf-root.json").read_bytes()
    return TufRepository("GitHub", GITHUB_URL, root)
