from gidgethub import sansio

from bot.handlers import build_router, configcheck, pushes, run_order, trace


def test_a_push_refreshes_the_policy_before_the_config_check_reads_it() -> None:
    event = sansio.Event({"ref": "refs/heads/main"}, event="push", delivery_id="1")
    for _ in range(3):  # the router's frozenset may iterate differently each time it is built
        handlers = sorted(build_router().fetch(event), key=run_order)
        assert handlers == [trace.on_default_branch_push, pushes.on_push, configcheck.on_push]
