"""What the check runs and statuses on a commit say: the latest of each name,
the required contexts not yet passing, and whether any failed."""

from __future__ import annotations

from conveyor_emulator.store.state import CheckRun, Repo, Status

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


def missing_required(repo: Repo, sha: str) -> list[str]:
    runs = latest_runs(repo, sha)
    statuses = latest_statuses(repo, sha)
    missing = []
    for context in repo.required_checks:
        run = runs.get(context)
        st = statuses.get(context)
        ok = (run is not None and run.status == "completed" and run.conclusion in PASSING) \
            or (st is not None and st.state == "success")
        if not ok:
            missing.append(context)
    return missing


def failing_checks(repo: Repo, sha: str) -> bool:
    runs = latest_runs(repo, sha).values()
    statuses = latest_statuses(repo, sha).values()
    return any(r.status == "completed" and r.conclusion not in PASSING for r in runs) or \
        any(s.state in ("failure", "error") for s in statuses)
