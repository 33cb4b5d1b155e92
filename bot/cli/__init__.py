"""The offline commands: `check-config`, `bump`, `receive`, `report` and `setup`. They work on a
local copy of a deployment repository or talk to GitHub once, and may import the pure packages,
the edges, the runtime's settings and the promotion modules they reuse (the config check, the
builds, the delivery figures); nothing imports them but the command line and the sandbox.
"""
