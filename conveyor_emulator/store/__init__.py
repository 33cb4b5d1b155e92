"""The records the emulator keeps: git objects (`gitstore.py`), the typed records of accounts,
repositories, issues, checks, releases and installations (`state.py`), the `World` that holds
them with ids, randomness and the clock (`world.py`), and GitHub's `node_id`s. It imports
nothing else of the emulator.
"""
