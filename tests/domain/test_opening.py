"""Whether a promotion or train PR is opened, and what is read to decide it, over plain facts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.domain.opening import (
    FileEdit,
    Opening,
    OpeningFacts,
    OpenPromotion,
    PullRef,
    Reading,
    ServiceSubject,
    TrainSubject,
    decide_opening,
)

BRANCH = "conveyor/production/web-aaaaaaaaaaaa"
PATH = "apps/web/overlays/prod/kustomization.yaml"
OPEN = PullRef(7, "https://github.test/acme/deploy/pull/7")
CLOSED = PullRef(5, "https://github.test/acme/deploy/pull/5")
WEB = ServiceSubject("web", "1.4.2", PATH)
TRAIN = TrainSubject("shop")


def facts(**overrides: Any) -> OpeningFacts:
    """A single-service promotion with every reading done and nothing in its way."""
    fields: dict[str, Any] = {
        "subject": WEB,
        "environment": "production",
        "rollback": False,
        "explicit": False,
        "branch": BRANCH,
        "open_pulls": {},
        "edit": FileEdit(live_tag="1.4.1"),
        "promotions": (),
        "earlier_pulls": (),
    }
    fields.update(overrides)
    return OpeningFacts(**fields)


def train(**overrides: Any) -> OpeningFacts:
    """A release train (explicit, as a command opens it) with every reading done."""
    fields: dict[str, Any] = {"subject": TRAIN, "edit": FileEdit(), "promotions": None,
                              "explicit": True}
    fields.update(overrides)
    return facts(**fields)


REFUSAL = "web 1.4.2-rc.1 is not admitted in production (tag policy `semver`)"
MISSING = f"`{PATH}` does not exist on main"

DECISIONS: list[tuple[str, OpeningFacts, Opening | Reading]] = [
    ("nothing in the way", facts(), Opening("open")),
    ("tag refused before anything is read",
     OpeningFacts(WEB, "production", rollback=False, explicit=True,
                  tag_refusals=(REFUSAL,), branch=BRANCH),
     Opening("refused", REFUSAL)),
    ("every refusal of a train, in one message",
     train(tag_refusals=("a refused", "b refused")), Opening("refused", "a refused; b refused")),
    ("a rollback is not held to the tag policy",
     facts(rollback=True, tag_refusals=(REFUSAL,)), Opening("open")),
    ("first the open PRs", facts(open_pulls=None, edit=None, promotions=None,
                                 earlier_pulls=None), "open_pulls"),
    ("an open PR of the branch is adopted before any file is read",
     facts(open_pulls={BRANCH: OPEN}, edit=None, promotions=None, earlier_pulls=None),
     Opening("exists", "already open:", OPEN)),
    ("an open PR of another branch is no obstacle", facts(open_pulls={"other": OPEN}),
     Opening("open")),
    ("then the file", facts(edit=None, promotions=None, earlier_pulls=None), "edit"),
    ("a missing file", facts(edit=FileEdit(MISSING)), Opening("refused", MISSING)),
    ("a file that pins the digest already", facts(edit=FileEdit(changed=False)),
     Opening("live", f"web 1.4.2 is already live in production (`{PATH}`)")),
    ("a newer version live, without reading the promotions",
     facts(edit=FileEdit(live_tag="1.5.0"), promotions=None),
     Opening("skipped", "web 1.5.0 is live in production, newer than 1.4.2; use /rollback "
                        "to go back")),
    ("a newer live version does not stop an explicit promote",
     facts(edit=FileEdit(live_tag="1.5.0"), explicit=True), Opening("open")),
    ("a newer live version does not stop a rollback",
     facts(edit=FileEdit(live_tag="1.5.0"), rollback=True), Opening("open")),
    ("an unknown live tag compares as not newer",
     facts(edit=FileEdit(live_tag="latest")), Opening("open")),
    ("then the service's open promotions", facts(promotions=None, earlier_pulls=None),
     "promotions"),
    ("a newer version already promoted",
     facts(promotions=(OpenPromotion(9, "1.3.0"), OpenPromotion(11, "1.5.0"))),
     Opening("skipped", "#11 already promotes the newer 1.5.0 to production")),
    ("an older open promotion is no obstacle (it is superseded)",
     facts(promotions=(OpenPromotion(9, "1.3.0"),)), Opening("open")),
    ("an explicit promote reads no promotions and no earlier PRs",
     facts(explicit=True, promotions=None, earlier_pulls=None), Opening("open")),
    ("a rollback reads no promotions", facts(rollback=True, promotions=None),
     Opening("open")),
    ("last, the PRs made from the branch", facts(earlier_pulls=None), "earlier_pulls"),
    ("a PR of the branch closed without merging",
     facts(earlier_pulls=(CLOSED,)),
     Opening("skipped", "closed without merging; `/promote` opens it again:", CLOSED)),
    ("an explicit promote opens a closed PR's branch again",
     facts(explicit=True, earlier_pulls=(CLOSED,)), Opening("open")),
    ("a train reads its files before it has a branch",
     train(branch=None, open_pulls=None, edit=None), "edit"),
    ("a train whose file is missing names no branch",
     train(branch=None, open_pulls=None, edit=FileEdit(MISSING)), Opening("refused", MISSING)),
    ("a train whose services all run the digest",
     train(branch=None, open_pulls=None, edit=FileEdit(changed=False)),
     Opening("live", "every service of shop already runs that digest in production")),
    ("a train with a branch reads the open PRs", train(open_pulls=None), "open_pulls"),
    ("an open train PR is adopted", train(open_pulls={BRANCH: OPEN}),
     Opening("exists", "already open:", OPEN)),
    ("a train compares no versions", train(explicit=False, earlier_pulls=()),
     Opening("open")),
    ("a train closed without merging",
     train(explicit=False, earlier_pulls=(CLOSED,)),
     Opening("skipped", "closed without merging; `/promote production shop` opens it again:",
             CLOSED)),
]


@pytest.mark.parametrize(("case", "given", "expected"), DECISIONS,
                         ids=[case for case, _, _ in DECISIONS])
def test_decision(case: str, given: OpeningFacts, expected: Opening | Reading) -> None:
    assert decide_opening(given) == expected


def test_each_reading_is_asked_for_once_and_in_order() -> None:
    """Filling in what is asked for, starting from nothing read, ends in a decision."""
    known = facts()
    given = facts(open_pulls=None, edit=None, promotions=None, earlier_pulls=None)
    asked: list[str] = []
    while not isinstance(decision := decide_opening(given), Opening):
        asked.append(decision)
        given = replace(given, **{decision: getattr(known, decision)})
    assert asked == ["open_pulls", "edit", "promotions", "earlier_pulls"]
    assert decision == Opening("open")


def test_a_changing_edit_without_a_branch_is_a_bug() -> None:
    with pytest.raises(ValueError, match="names its branch"):
        decide_opening(train(branch=None, open_pulls=None))
