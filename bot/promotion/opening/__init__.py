"""Opening and merging promotion pull requests: where a candidate digest came from
(`provenance.py`), the PR per service, environment and digest (`opener.py`,
`body.py`), the `Chart.lock` refusal, merging Conveyor's own PRs (`merger.py`), and what
each upstream environment pins now (`upstream_pins.py`). It imports the domain, manifests,
registry, GitHub and authorship; never the gate, trains or anything above them.
"""
