"""Container `registry_package` / `package` events: a published image is a candidate."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gidgethub import sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.routes import Declared
from bot.promotion.triggers.packages import PackagePromoter, PublishedImage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Packages:
    packages: PackagePromoter

    async def on_package_published(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        published = PublishedImage.of(event.data)
        if published is None:
            log.debug("not a tagged container image, ignored")
            return
        await self.packages.promote(gh, published)


DECLARED = (
    Declared("packages.published", Packages.on_package_published,
             on=(("registry_package", "published"), ("registry_package", "updated"),
                 ("package", "published"), ("package", "updated"))),
)
