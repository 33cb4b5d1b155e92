"""`serve`: the webhook's intake and the processes that run the work. It owns the listening
socket, the webhook's answer (pure in `intake.py`, over HTTP in `acknowledge.py`), the
composition root (`composition.py`), what runs a job (`jobs.py`), the aiohttp app of the work
(`server.py`), the background loops, and memory mode's two processes (`front.py`, `fork.py`,
`workers.py`, `link.py`). It may import everything below it: the handlers, the capabilities,
the runtime, Redis, and the dashboard and resync loops it starts.
"""
