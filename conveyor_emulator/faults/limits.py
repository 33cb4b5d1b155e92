"""GitHub's size limits on the texts an app writes, answered with GitHub's 422.

- Issue and pull request bodies, and their comments: 65,536 characters (GitHub answers
  "body is too long (maximum is 65536 characters)").
- Check-run `output.summary` and `output.text`: 65,535 characters (`maxLength` in the
  description of Create/Update a check run in `@octokit/openapi`). The 50 annotations per
  request are checked by the check-run routes themselves.
"""

from __future__ import annotations

from typing import Any

from conveyor_emulator.errors import ApiError

BODY_LIMIT = 65_536
OUTPUT_LIMIT = 65_535

_REPO = "/repos/{owner}/{repo}"
BODY_ROUTES = {
    _REPO + "/issues": "Issue",
    _REPO + "/issues/{issue_number}": "Issue",
    _REPO + "/issues/{issue_number}/comments": "IssueComment",
    _REPO + "/issues/comments/{comment_id}": "IssueComment",
    _REPO + "/pulls": "PullRequest",
    _REPO + "/pulls/{pull_number}": "PullRequest",
    _REPO + "/pulls/{pull_number}/reviews": "PullRequestReview",
}
CHECK_RUN_ROUTES = (_REPO + "/check-runs", _REPO + "/check-runs/{check_run_id}")


def check(method: str, template: str, body: Any) -> None:
    if method not in ("POST", "PATCH") or not isinstance(body, dict):
        return
    resource = BODY_ROUTES.get(template)
    text = body.get("body")
    if resource is not None and isinstance(text, str) and len(text) > BODY_LIMIT:
        raise ApiError(422, "Validation Failed", errors=[{
            "resource": resource, "code": "custom", "field": "body",
            "message": f"body is too long (maximum is {BODY_LIMIT} characters)"}])
    output = body.get("output")
    if template in CHECK_RUN_ROUTES and isinstance(output, dict):
        for field in ("summary", "text"):
            value = output.get(field)
            if isinstance(value, str) and len(value) > OUTPUT_LIMIT:
                raise ApiError(422, f"Invalid request.\n\nFor 'properties/{field}', the value "
                                    f"is too long ({len(value)} characters; maximum is "
                                    f"{OUTPUT_LIMIT}).")
