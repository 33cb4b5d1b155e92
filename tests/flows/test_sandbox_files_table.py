"""The sandbox's closing table: what each environment's file pins, read from the emulator."""

from __future__ import annotations

from bot.sandbox.demo import DEMO_FILES
from bot.sandbox.plan import plan_demo
from bot.sandbox.runner import Sandbox, SandboxClock
from bot.sandbox.telling import table_from_files
from bot.text import short_digest
from tests.harness import SECRET, close_world, make_world

API_PRODUCTION = "charts/api/values-production.yaml"


async def test_the_table_shows_each_pin_and_a_missing_file() -> None:
    files = {path: text for path, text in DEMO_FILES.items() if path != API_PRODUCTION}
    world = await make_world(files=files)
    try:
        digest = await world.release("web", "1.0.0")
        sandbox = Sandbox(world.emulator, world.bot, SandboxClock(), SECRET)
        rows = [row.split() for row in table_from_files(sandbox, plan_demo())]
    finally:
        await close_world(world)
    assert rows == [
        ["service", "environment", "tag", "digest"],
        ["web", "staging", "1.0.0", short_digest(digest)],
        ["web", "production", "0.9.0", "—"],
        ["api", "staging", "0.9.0", "—"],
        ["api", "production", "(no", "file)", "—"],
        ["web-chart", "staging", "(no", "file)", "—"],  # the sandbox's own demo ships it
        ["web-chart", "production", "(no", "file)", "—"],
    ]
