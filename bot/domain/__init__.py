"""Pure decisions: the policy, the gate's verdict, slash-command parsing, tags, images,
provenance, trains, freezes, delivery figures. Nothing here does I/O: it imports only the
standard library, its own modules, the YAML reader and the leaf modules `bot.text` and
`bot.names`; every fact it judges is handed in by the caller.
"""
