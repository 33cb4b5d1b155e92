"""The infrastructure of one app: settings, logs, the job queue and its workers, timers and
the typed jobs they bring back, leases, CPU offload, per-job memos, and the `Context` that
wires the GitHub, registry and kustomize clients together. It imports the edges
(`bot.github`, `bot.registry`, `bot.render`) and the leaf modules, never what promotes:
nothing of `bot.promotion`, `bot.handlers` or `bot.serving`.
"""
