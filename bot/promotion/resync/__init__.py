"""The periodic reconcile, GitHub's state being the truth (`reconcile.py`), and which source
repositories' releases one pass reads (`release_polls.py`). It is the top of
`bot.promotion`: it may import every capability, and nothing of `bot.promotion` imports it.
"""
