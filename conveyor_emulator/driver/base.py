"""The emulator's world, faults, webhooks and registry, the settings tests change on it, and
the helpers its seeding, acting and reading share."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from conveyor_emulator.apps.auth import generate_private_key
from conveyor_emulator.events.webhooks import Delivery, Webhooks, collect
from conveyor_emulator.faults.requestlog import RequestLog
from conveyor_emulator.faults.stalls import Stalls
from conveyor_emulator.faults.switches import Dice, Faults, RateLimits, SecondaryLimits, Transients
from conveyor_emulator.ops import Ops
from conveyor_emulator.registry.distribution import RegistryState
from conveyor_emulator.store.state import JSON, Issue, Repo
from conveyor_emulator.store.world import World


class EmulatorBase:
    """A stateful GitHub: its world, faults, webhooks and registry, without a socket."""

    def __init__(self, *, app_id: int = 1, app_slug: str = "conveyor", webhook_secret: str,
                 webhook_url: str | None = None, validate_openapi: bool = False, seed: int = 0,
                 clock: Callable[[], datetime] | None = None,
                 timer: Callable[[], float] = time.time,
                 web_commit_signing: bool = True, rate_limiting: bool = True) -> None:
        """`clock` stamps data (`created_at`...); `timer` (epoch seconds) runs the rate-limit
        windows and their headers, so that a test can share one virtual time with the bot.

        `rate_limiting` False plays a GitHub Enterprise Server whose administrator left rate
        limits off: "Rate limits are disabled by default for GitHub Enterprise Server [...] If
        you are a site administrator, you can set rate limits, including secondary rate
        limits, for your instance" (GHES docs, "Rate limits for the REST API"). Such a server
        enforces neither the primary limit nor the content-creation budget; the random
        secondary-limit faults stay what they are, faults."""
        self.world = World(app_id=app_id, app_slug=app_slug, seed=seed, clock=clock)
        self.world.web_commit_signing = web_commit_signing
        self.rate_limiting = rate_limiting
        self.app_private_key_pem, self.app_public_key_pem = generate_private_key()
        self.webhook_secret = webhook_secret
        self.faults = Faults()
        self.dice = Dice(seed)
        self.rate_limits = RateLimits(timer=timer)
        self.secondary = SecondaryLimits(timer)
        # when the served loop was too busy to stamp arrivals on time (`Emulator.start`)
        self.stalls = Stalls(timer)
        self.transients = Transients()
        self.injected: Counter[str] = Counter()  # faults answered: 502s, slow answers
        self.requests = RequestLog()
        # GHCR's OCI Distribution API for the images published here (its own request log)
        self.registry = RegistryState()
        self.validator: Any = None
        if validate_openapi:
            from conveyor_emulator.openapi import OpenAPIValidator

            self.validator = OpenAPIValidator.load()
        self.hooks = Webhooks(
            self.world, secret=webhook_secret, url=webhook_url,
            validate=self.validator.check_webhook if self.validator is not None else None)
        self.ops = Ops(self.world, self.hooks)
        # one list for request, response and webhook payload violations
        self.violations: list[str] = self.hooks.violations
        self.base_url = ""
        self._trust_dir: str | None = None  # where `sigstore_trust_file` wrote the roots
        self.world.account(self.world.bot_login)
        self.world.account("web-flow")
        self.world.account("github-actions[bot]")

    @property
    def web_url(self) -> str:
        """Base of every `html_url` (settable, e.g. to a proxy's address); the API serves at
        `base_url` regardless."""
        return self.world.web_url

    @web_url.setter
    def web_url(self, value: str) -> None:
        self.world.web_url = value.rstrip("/")

    @property
    def api_url(self) -> str:
        """Base of every `url` field in responses (defaults to `base_url`)."""
        return self.world.api_url

    @api_url.setter
    def api_url(self, value: str) -> None:
        self.world.api_url = value.rstrip("/")

    @property
    def app_id(self) -> int:
        return self.world.app_id

    @property
    def app_slug(self) -> str:
        return self.world.app_slug

    def pending_deliveries(self) -> int:
        """Webhook deliveries queued or in flight."""
        return self.hooks.pending

    @property
    def token_ttl(self) -> float:
        """Lifetime of installation tokens in seconds (GitHub: one hour)."""
        return self.world.token_ttl

    @token_ttl.setter
    def token_ttl(self, value: float) -> None:
        self.world.token_ttl = value

    @property
    def webhook_url(self) -> str | None:
        return self.hooks.url

    @webhook_url.setter
    def webhook_url(self, value: str | None) -> None:
        self.hooks.url = value

    @property
    def deliveries(self) -> list[Delivery]:
        return self.hooks.deliveries

    async def settle(self) -> None:
        await self.hooks.settle()

    async def _send(self, event: str, payload: JSON, installation_id: int | None) -> int:
        delivery = await self.hooks.send_now(event, payload, installation_id=installation_id)
        return delivery.status_code

    async def _act(self, fn: Callable[[], Any]) -> Any:
        with collect() as futures:
            result = fn()
        if futures:
            await asyncio.gather(*futures)
        return result

    def _repo(self, full_name: str) -> Repo:
        return self.world.repo_by_name(full_name)

    def _issue(self, repo: Repo, number: int) -> Issue:
        item = repo.issues.get(number)
        if item is None:
            raise KeyError(f"{repo.full_name}#{number} does not exist")
        return item

    def reset_counters(self) -> None:
        self.requests.reset()
        self.registry.requests.reset()
