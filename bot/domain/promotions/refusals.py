"""Why a promotion is refused before it is opened: one function per rule, applied alike by
the bot's openers and by the offline `bump`, so both refuse the same input with the same words.
"""

from __future__ import annotations

import posixpath

from bot.domain.policy import Policy, Service
from bot.domain.promotions.candidate import Candidate


def tag_refusal(policy: Policy, service: str, environment: str, tag: str) -> str | None:
    """Why the environment's tag policy does not admit ``tag`` for ``service``, or None."""
    for tag_policy in policy.tag_policy_for(service, environment):
        if not tag_policy.admits(tag):
            return (f"{service} {tag} is not admitted in {environment} "
                    f"(tag policy `{tag_policy}`)")
    return None


def refusal_for_tags(policy: Policy, service: str, environment: str, candidate: Candidate
                     ) -> str | None:
    """The tag refusal of a candidate: a release is judged by its git tag, a package version
    by its image tag."""
    subject = candidate.release_tag or candidate.tag or candidate.version
    return tag_refusal(policy, service, environment, subject)


def chart_lock_path(service: Service, path: str) -> str | None:
    """The `Chart.lock` whose presence refuses an edit of ``path``: an umbrella chart's
    `Chart.yaml` names a chart service's version, and Helm installs what the lock records."""
    if not service.is_chart or posixpath.basename(path) != "Chart.yaml":
        return None
    return posixpath.join(posixpath.dirname(path), "Chart.lock")


def chart_lock_refusal(service: Service, lock: str) -> str:
    """Why an edit beside the existing ``lock`` (see :func:`chart_lock_path`) is refused."""
    return (f"`{lock}` records the dependency versions Helm installs and would still name "
            f"the old {service.name}; run `helm dependency update` where the chart is "
            "built and remove the lock from the repository, or name the chart in an Argo CD "
            "Application, a Flux HelmRelease or a helmfile instead")


def no_change_refusal(where: str, image: str, *, chart: bool) -> str:
    """Why an edit whose render at ``where`` runs the same images as before is refused."""
    if chart:
        return (f"the render of the chart `{where}` runs the same images with this "
                f"change: no workload's image changes (do the chart's templates use the "
                f"values that name {image}?)")
    return (f"the build of `{where}` runs the same images with this change: no "
            f"workload's image changes (does an `images:` entry name {image} while the "
            "workloads run another name?)")
