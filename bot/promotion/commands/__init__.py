"""Slash commands run: each command of a comment to its family (`dispatch.py`), one comment
being run (`command_run.py`), `/promote` (`promote.py`), `/rollback` (`rollback.py`), `/hold`,
`/unhold` and `/recheck` (`gate.py`), and the one reply (`replies.py`). It may import every
capability below it; of `bot.services` only the type of the bundle it is handed.
"""
