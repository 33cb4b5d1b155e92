"""The demo organisation: a source repository, a deployment repository and its policy.

Used by `python -m bot sandbox`, the behaviour tests and the benchmarks, so all three exercise
the same realistic layout: Kustomize overlays for one service and a Helm chart with a values
file per environment for another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.domain.policy import Service
from bot.names import POLICY_PATH
from bot.sandbox.stack import publish_release
from conveyor_emulator.registry.images import build_chart, build_image

if TYPE_CHECKING:
    from conveyor_emulator import Emulator

ORG = "acme"
DEPLOY_REPO = "acme/deploy"
SOURCE_REPOS = ("acme/web", "acme/api")

DEMO_POLICY = """\
# Conveyor policy of the demo deployment repository.
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
    tags: "semver:>=1.0.0"
    signer_workflow: .github/workflows/release.yml@refs/tags/*   # who must sign its attestations
  api:
    image: ghcr.io/acme/api
    source: acme/api
    signer_workflow: .github/workflows/release.yml@refs/tags/*
    paths:
      staging: charts/api/values-staging.yaml
      production: charts/api/values-production.yaml
environments:
  - name: staging
    path: apps/{service}/overlays/staging/kustomization.yaml
    from: any
    auto_merge: true
  - name: production
    path: apps/{service}/overlays/prod/kustomization.yaml
    after: staging
    promote: manual
    evidence: [merged, deployed]
    soak: 30m
    approvals: 1
    approvers: ["@acme/sre"]
    deployed_context: argocd/{service}-{env}   # Argo CD labels its statuses per Application
    deployed_by: ["argocd[bot]"]
    merge_method: squash
groups:
  storefront: [web, api]                  # /promote production storefront: one PR for both
"""

_KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
images:
  - name: ghcr.io/acme/web
    newTag: "0.9.0"  # promoted by Conveyor
"""

_BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web
"""

_VALUES = """\
# Helm values for the api chart
replicaCount: 2
image:
  repository: ghcr.io/acme/api
  tag: "0.9.0"
  pullPolicy: IfNotPresent
"""

# The api chart kept in the repository: each environment's values file is rendered with it
# (`helm template`), so a template, a helper or a default can change what an environment runs.
_CHART = {
    "charts/api/Chart.yaml": """\
apiVersion: v2
name: api
description: The api service of acme, deployed per environment with its values file.
type: application
version: 0.3.0
appVersion: "0.9.0"
""",
    "charts/api/values.yaml": """\
# Defaults of the api chart; each environment's values file overrides them.
replicaCount: 1
image:
  repository: ghcr.io/acme/api
  tag: "0.9.0"
  pullPolicy: IfNotPresent
service:
  port: 8080
metrics:
  enabled: false
  image:
    repository: ghcr.io/acme/metrics-exporter
    tag: "1.2.0"
""",
    "charts/api/templates/_helpers.tpl": """\
{{/* The release's name, cut to what Kubernetes accepts. */}}
{{- define "api.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every resource of the chart carries. */}}
{{- define "api.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* An image reference from a values block: repository, then the tag. */}}
{{- define "api.image" -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}
""",
    "charts/api/templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "api.fullname" . }}
  labels:
    {{- include "api.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
        - name: api
          image: {{ include "api.image" .Values.image | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ .Values.service.port }}
        {{- if .Values.metrics.enabled }}
        - name: metrics
          image: {{ include "api.image" .Values.metrics.image | quote }}
        {{- end }}
""",
    "charts/api/templates/service.yaml": """\
apiVersion: v1
kind: Service
metadata:
  name: {{ include "api.fullname" . }}
  labels:
    {{- include "api.labels" . | nindent 4 }}
spec:
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
  ports:
    - name: http
      port: {{ .Values.service.port }}
      targetPort: http
""",
}

DEMO_FILES: Mapping[str, str] = {
    POLICY_PATH: DEMO_POLICY,
    "apps/web/base/deployment.yaml": _BASE,
    "apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
    "apps/web/overlays/staging/kustomization.yaml": _KUSTOMIZATION,
    "apps/web/overlays/prod/kustomization.yaml": _KUSTOMIZATION,
    "charts/api/values-staging.yaml": _VALUES,
    "charts/api/values-production.yaml": _VALUES.replace("replicaCount: 2", "replicaCount: 4"),
    **_CHART,
    "README.md": "# acme/deploy\n\nManifests per environment, promoted by Conveyor.\n",
}


@dataclass(frozen=True)
class Demo:
    installation_id: int
    deploy_repo: str = DEPLOY_REPO


def digest_of(text: str, *, labels: dict[str, str] | None = None) -> str:
    """The index digest of a multi-arch image standing for `text` (real content, so the
    emulator's registry can serve it)."""
    return build_image(text, labels=labels).digest


def artifact_digest(service: Service, version: str) -> str:
    """What CI publishes for ``service`` at ``version``: a multi-arch image, or for a chart
    service a Helm chart as `helm push` stores it."""
    if service.is_chart:
        name = service.image.rsplit("/", 1)[-1]
        return build_chart(name, version, source=f"https://github.com/{service.source}").digest
    return digest_of(f"{service.image}:{version}")


def seed(emulator: Emulator, files: Mapping[str, str] | None = None) -> Demo:
    """People, teams, repositories and the installation of the demo organisation."""
    emulator.add_org(ORG)
    for login, name in (("alice", "Alice Dev"), ("bob", "Bob SRE"), ("carol", "Carol Reader"),
                        ("dave", "Dave SRE")):
        emulator.add_user(login, name=name)
    emulator.add_user("github-actions[bot]", type="Bot")
    emulator.add_user("argocd[bot]", type="Bot")
    emulator.add_team(ORG, "sre", ["bob", "dave"])
    emulator.add_repo("acme/web", files={
        "README.md": "# web\n", "src/app.py": "print('hello')\n",
        "Dockerfile": "FROM python:3.12-slim\n",
    })
    emulator.add_repo("acme/api", files={"README.md": "# api\n"})
    emulator.add_repo(DEPLOY_REPO, files=dict(files or DEMO_FILES))
    for user, permission in (("alice", "write"), ("bob", "maintain"), ("dave", "write"),
                             ("carol", "read")):
        for repo in (DEPLOY_REPO, *SOURCE_REPOS):
            emulator.set_permission(repo, user, permission)
    installation_id = emulator.install(ORG, [DEPLOY_REPO, *SOURCE_REPOS])
    return Demo(installation_id=installation_id)


async def release(emulator: Emulator, service: str, version: str, **options: Any) -> str:
    """A release of the demo organisation's `service` (image ghcr.io/acme/SERVICE, repository
    acme/SERVICE) as `stack.publish_release` makes it, with `options`; returns the digest."""
    digest = digest_of(f"{service}:{version}")
    await publish_release(emulator, f"ghcr.io/{ORG}/{service}", f"{ORG}/{service}", version,
                          digest, **options)
    return digest
