"""Argo CD and Flux as GitHub sees them: the requests their notifiers make, shaped after
their sources, posted into the emulator as the app or user they run as.

- Argo CD notifications (argoproj/notifications-engine, pkg/services/github.go) post on the
  Application's synced revision (`.app.status.operationState.syncResult.revision`, a bare sha):
  a commit status whose context is the template's `status.label`, a deployment (reusing the
  first one listed for that ref and environment, else creating one with no payload,
  `auto_merge` true unless the template says otherwise, `required_contexts` from the template)
  and its status, or a check run (`external_id` "argocd-notifications"). It authenticates as a
  GitHub App, so GitHub names the reporter `<app-slug>[bot]`.
- Flux's notification-controller (internal/notifier/github.go) skips Progressing events, takes
  the sha out of the event's revision (`main@sha1:<sha>`, or the older `main/<sha>`), maps
  severity info to `success` and error to `failure`, and names the status with the Provider's
  `commitStatusExpr` or by default `<kind>/<name>/<first UID segment>` in lower case
  (internal/server: generateDefaultCommitStatus).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conveyor_emulator.errors import ApiError
from tests.harness import World

ARGOCD_URL = "https://argocd.example.com"


@dataclass
class ArgoCD:
    world: World
    app_slug: str = "argocd-notifications"

    @property
    def login(self) -> str:
        return f"{self.app_slug}[bot]"

    def install(self) -> None:
        self.world.emulator.add_app(self.app_slug)

    async def status(self, application: str, revision: str, state: str = "success", *,
                     label: str | None = None) -> None:
        """`template.app-deployed` with `github.status` (label `argocd/<application>`)."""
        message = f"Application {application} is now running new version of deployments " \
                  "manifests."
        await self.world.emulator.set_status(
            self.world.repo, revision, label or f"argocd/{application}", state,
            user=self.login, description=message[:140],
            target_url=f"{ARGOCD_URL}/applications/{application}?operation=true")
        await self.world.settle()

    async def deployment(self, application: str, revision: str, environment: str,
                         state: str = "success", *, auto_merge: bool = True
                         ) -> dict[str, Any] | None:
        """`github.deployment`: the first deployment of (ref, environment), or a new one with
        `autoMerge` as the template says (default true); None when GitHub refuses it."""
        em = self.world.emulator
        listed = [d for d in em.deployments(self.world.repo)
                  if d["ref"] == revision and d["environment"] == environment]
        if listed:
            deployment = listed[0]
            await em.set_deployment_status(self.world.repo, int(deployment["id"]), state,
                                           user=self.login)
        else:
            try:
                deployment = await em.create_deployment(
                    self.world.repo, revision, environment, state=state, user=self.login,
                    payload=None, auto_merge=auto_merge)
            except ApiError:
                return None  # the notifier logs GitHub's refusal; nothing is reported
        await self.world.settle()
        return deployment

    async def check_run(self, application: str, revision: str, conclusion: str = "success"
                        ) -> None:
        """`github.checkRun` with a conclusion and no status: created `completed`."""
        await self.world.emulator.create_check_run(
            self.world.repo, revision, f"argocd/{application}", app=self.app_slug,
            conclusion=conclusion,
            details_url=f"{ARGOCD_URL}/applications/{application}")
        await self.world.settle()


def flux_sha(revision: str) -> str:
    """The commit a Flux revision names: `main@sha1:<sha>`, `sha1:<sha>` or `main/<sha>`."""
    if ":" in revision:
        return revision.rsplit(":", 1)[1]
    return revision.rsplit("/", 1)[-1]


@dataclass
class Flux:
    world: World
    provider_uid: str = "0c9c2e41-d2f9-4f9b-9c41-bebc1984d67a"
    login: str = "flux-bot"  # the Provider's token is a machine user's
    commit_status_expr: bool = False  # commitStatusExpr: "'flux/' + event.involvedObject.name"

    def context(self, kustomization: str) -> str:
        if self.commit_status_expr:
            return f"flux/{kustomization}"
        return f"kustomization/{kustomization}/{self.provider_uid.split('-')[0]}".lower()

    async def event(self, kustomization: str, revision: str, severity: str = "info",
                    reason: str = "ReconciliationSucceeded") -> None:
        if reason == "Progressing":
            return
        state = {"info": "success", "error": "failure"}[severity]
        await self.world.emulator.set_status(
            self.world.repo, flux_sha(revision), self.context(kustomization), state,
            user=self.login, description=f"kustomization/{kustomization}: "
            f"{'reconciliation succeeded' if severity == 'info' else 'health check failed'}")
        await self.world.settle()
