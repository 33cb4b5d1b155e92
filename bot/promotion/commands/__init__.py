"""Slash commands run: each command of a comment to its family (`dispatch.py`), one comment
being run (`command_run.py`), `/promote` (`promote.py`), `/rollback` (`rollback.py`), `/hold`,
`/unhold` and `/recheck` (`gate.py`), and the one reply (`replies.py`), run with the
capabilities it is handed (`CommandCapabilities`). It may import every capability below it.
"""
