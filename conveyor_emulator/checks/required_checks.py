"""What the check runs and statuses on a commit say: the latest of each name,
the required contexts not yet passing, and whether any failed."""

from __future__ import annotations

from conveyor_emulator.store.state import CheckRun, Repo, RequiredCheck, Status

PASSING = {"success", "neutral", "skipped"}


def latest_runs(repo: Repo, sha: str) -> dict[str, CheckRun]:
    latest: dict[str, CheckRun] = {}
    for run in repo.check_runs:
        if run.head_sha == sha:
            latest[run.name] = run
    return latest


def latest_statuses(repo: Repo, sha: str) -> dict[str, Status]:
    latest: dict[str, Status] = {}
    for st in repo.statuses:
        if st.sha == sha:
            latest[st.context] = st
    return latest


def required_of(repo: Repo) -> list[RequiredCheck]:
    """Every check the default branch requires: branch protection's and every ruleset's."""
    return [*repo.required_checks, *(c for ruleset in repo.rulesets for c in ruleset.checks)]


def missing_required(repo: Repo, sha: str) -> list[str]:
    """The required contexts no passing report satisfies. A check required from an app
    ("expected source" in GitHub's branch protection and rulesets) is satisfied only by that
    app's check run; one required from any source by any check run or commit status of its
    name ("About protected branches: require status checks before merging")."""
    runs = latest_runs(repo, sha)
    statuses = latest_statuses(repo, sha)
    missing = []
    for required in required_of(repo):
        run = runs.get(required.context)
        st = statuses.get(required.context)
        run_ok = (run is not None and run.status == "completed" and run.conclusion in PASSING
                  and required.app_id in (None, run.app_id))
        status_ok = st is not None and st.state == "success" and required.app_id is None
        if not (run_ok or status_ok) and required.context not in missing:
            missing.append(required.context)
    return missing


def failing_checks(repo: Repo, sha: str) -> bool:
    runs = latest_runs(repo, sha).values()
    statuses = latest_statuses(repo, sha).values()
    return any(r.status == "completed" and r.conclusion not in PASSING for r in runs) or \
        any(s.state in ("failure", "error") for s in statuses)
