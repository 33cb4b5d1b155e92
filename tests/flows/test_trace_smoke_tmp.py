from tests.harness import make_world, close_world

async def test_smoke() -> None:
    world = await make_world(validate_openapi=False)
    try:
        d = await world.release("web", "1.4.2")
        for pr in world.emulator.pulls(world.repo, state="all"):
            print(pr["number"], pr["title"], pr["state"], pr.get("merged"), pr["head"]["ref"])
            print(pr["body"])
        print(world.emulator.deployments("acme/web"))
    finally:
        await close_world(world)
