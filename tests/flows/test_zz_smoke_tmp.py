from tests.harness import World

async def test_smoke(world: World) -> None:
    d = await world.release("web", "1.4.2")
    print([ (p["number"], p["title"], p["state"], p.get("merged")) for p in world.emulator.pulls(world.repo, state="all")])
    c = await world.emulator.comment(world.repo, 1, "alice", "/help")
    await world.settle()
    print(c)
    print(world.emulator.comments(world.repo, 1))
