"""`python -m bot sandbox`: the bot and the emulator wired on loopback, the demo organisation,
and the story played on them. It may import everything of the bot and the emulator's public
names; only the command line imports it.
"""
