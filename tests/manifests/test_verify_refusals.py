"""The verification every edit passes before it is written: an edited text that differs from
the original anywhere but the planned values is refused, with the line of the difference."""

from __future__ import annotations

import pytest

from bot.manifests.errors import VerificationError
from bot.manifests.plan import Plan
from bot.manifests.tree import parse_documents
from bot.manifests.verify import verify
from bot.yamlread.nodes import Mapping, Scalar

ORIGINAL = """\
images: &imgs
  - name: ghcr.io/acme/web
    newTag: "1.0.0"
ports: [80, 443]
labels: {app: web}
replicas: 2
"""


def refusal(new_text: str, plan: Plan | None = None, original: str = ORIGINAL) -> str:
    documents, index = parse_documents(original, "k.yaml")
    with pytest.raises(VerificationError) as refused:
        verify(documents, index, new_text, plan or Plan(), "k.yaml")
    return str(refused.value)


def test_the_same_text_verifies() -> None:
    documents, index = parse_documents(ORIGINAL, "k.yaml")
    new_documents, _ = verify(documents, index, ORIGINAL, Plan(), "k.yaml")
    assert len(new_documents) == 1


@pytest.mark.parametrize(("new_text", "message"), [
    (ORIGINAL.replace("replicas: 2", "replicas: 3"),
     "k.yaml:6: verification failed: the value '2' changed unexpectedly; nothing changed"),
    (ORIGINAL.replace('"1.0.0"', "'1.0.0'"),
     "k.yaml:3: verification failed: the value '1.0.0' changed unexpectedly; nothing changed"),
    (ORIGINAL.replace("[80, 443]", "[80]"),
     "k.yaml:4: verification failed: a sequence changed; nothing changed"),
    (ORIGINAL.replace("[80, 443]", "\n  - 80\n  - 443"),
     "k.yaml:5: verification failed: a sequence changed; nothing changed"),
    (ORIGINAL.replace("{app: web}", "\n  app: web"),
     "k.yaml:6: verification failed: a mapping changed its style; nothing changed"),
    (ORIGINAL + "paused: true\n",
     "k.yaml:1: verification failed: a mapping gained or lost keys unexpectedly; nothing changed"),
    (ORIGINAL.replace("&imgs", "&images"),
     "k.yaml:1: verification failed: a node changed its kind, anchor or tag; nothing changed"),
    (ORIGINAL.replace("replicas: 2", "replicas: !!str 2"),
     "k.yaml:6: verification failed: a node changed its kind, anchor or tag; nothing changed"),
    (ORIGINAL + "---\nkind: Second\n",
     "k.yaml:1: the edit changed the number of YAML documents"),
    (ORIGINAL.replace("replicas: 2", "replicas: [2"),
     "k.yaml:6: the edited file would not parse"),
])
def test_differences_outside_the_plan_are_refused(new_text: str, message: str) -> None:
    assert refusal(new_text).startswith(message)


def refusal_of_plan(new_text: str, *, change: str | None = None,
                    insert: tuple[str, str] | None = None) -> str:
    """Verify `new_text` against a plan that sets newTag to `change` and/or adds `insert`
    right after newTag (the nodes of the plan are those of the parse verify compares)."""
    documents, index = parse_documents(ORIGINAL, "k.yaml")
    root = documents[0].root
    assert isinstance(root, Mapping)
    images = root.get("images")
    assert images is not None
    entry = images[1].items[0]  # type: ignore[attr-defined]
    assert isinstance(entry, Mapping)
    tag = entry.get("newTag")
    assert tag is not None and isinstance(tag[1], Scalar)
    plan = Plan()
    if change is not None:
        plan.changes[id(tag[1])] = change
    if insert is not None:
        plan.insertions[id(entry)] = {1: [insert]}
    with pytest.raises(VerificationError) as refused:
        verify(documents, index, new_text, plan, "k.yaml")
    return str(refused.value)


def test_a_planned_value_must_be_the_string_planned() -> None:
    assert refusal_of_plan(ORIGINAL.replace('"1.0.0"', '"1.3.0"'), change="1.2.0") == (
        "k.yaml:3: verification failed: expected the string '1.2.0', found '1.3.0'; "
        "nothing changed")
    # 1.2 read back as a number would not be the string the plan writes
    assert refusal_of_plan(ORIGINAL.replace('"1.0.0"', "1.2"), change="1.2") == (
        "k.yaml:3: verification failed: expected the string '1.2', found '1.2'; "
        "nothing changed")


def test_an_added_key_must_sit_where_planned_and_hold_its_value() -> None:
    digest = "sha256:" + "a" * 64
    moved = ORIGINAL.replace('  - name: ghcr.io/acme/web\n',
                             f'  - digest: {digest}\n    name: ghcr.io/acme/web\n')
    assert refusal_of_plan(moved, insert=("digest", digest)) == (
        "k.yaml:4: verification failed: the key 'digest' was not added where intended; "
        "nothing changed")
    wrong = ORIGINAL.replace('newTag: "1.0.0"\n', 'newTag: "1.0.0"\n    digest: sha256:bad\n')
    assert refusal_of_plan(wrong, insert=("digest", digest)) == (
        f"k.yaml:4: verification failed: the added 'digest' does not hold '{digest}'; "
        "nothing changed")
