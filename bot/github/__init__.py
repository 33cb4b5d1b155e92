"""The GitHub edge: app and installation tokens, the client with its ETags, pacing and retries,
the rate-limit state, check runs, repository snapshots, GraphQL, size limits and redeliveries.
It imports only `bot.text` and `bot.metrics` of the bot; everything that talks to GitHub goes
through it.
"""
