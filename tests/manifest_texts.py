"""Manifest texts the render tests and benchmarks build repositories from (valid input for
`kubectl kustomize`)."""

from __future__ import annotations

# A container's `envFrom` a ConfigMap named `settings` (a name reference kustomize rewrites).
ENV_FROM = """\
          envFrom:
            - configMapRef:
                name: settings
"""


def deployment(name: str, image: str | None = None, extra: str = "") -> str:
    """A Deployment of one container, `app`, running ``image`` (`ghcr.io/acme/<name>` when
    not given); ``extra``: more lines of the container."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: app
          image: {image or f"ghcr.io/acme/{name}"}
{extra}"""
