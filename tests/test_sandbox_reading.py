"""How the sandbox reads the gate's check run for the console, and editor errors that must
cross a process boundary intact."""

from __future__ import annotations

import pickle
from typing import Any

from bot.manifests import ImageNotFoundError, ManifestError
from bot.sandbox.reading import gate_state, gate_text


def run(status: str, conclusion: str | None, title: str = "", summary: str = ""
        ) -> dict[str, Any]:
    return {"status": status, "conclusion": conclusion,
            "output": {"title": title, "summary": summary}}


def test_no_gate_run_is_told_as_missing() -> None:
    assert gate_state(None) == "missing"
    assert gate_text(None) == "gate: no conveyor/promotion-gate check run on the PR's head commit"


def test_a_completed_run_tells_its_conclusion_and_title() -> None:
    done = run("completed", "failure", title="Staging has not deployed 1.0.0")
    assert gate_state(done) == "failure"
    assert gate_text(done) == "gate: failure — staging has not deployed 1.0.0"
    assert gate_text(run("completed", "success")) == "gate: success"


def test_a_soak_in_the_summary_is_told_unless_the_title_says_it() -> None:
    summary = ("- ✅ deployed to staging\n"
               "- ⏳ **soaking until** 12:30 UTC — 30 minutes left\n")
    pending = run("in_progress", None, title="Waiting for approvals", summary=summary)
    assert gate_state(pending) == "in_progress"
    assert gate_text(pending) == ("gate: in_progress — waiting for approvals; "
                                  "soaking until 12:30 UTC")
    soaking = run("in_progress", None, title="Soaking until 12:30 UTC", summary=summary)
    assert gate_text(soaking) == "gate: in_progress — soaking until 12:30 UTC"


def test_an_editor_error_pickles_as_itself() -> None:
    error = ImageNotFoundError("apps/web.yaml", 3, "ghcr.io/acme/web does not occur")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is ImageNotFoundError and isinstance(back, ManifestError)
    assert (back.path, back.line, back.message) == (error.path, error.line, error.message)
    assert str(back) == "apps/web.yaml:3: ghcr.io/acme/web does not occur"
