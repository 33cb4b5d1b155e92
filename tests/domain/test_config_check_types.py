"""The config check names the JSON type it found where a Kubernetes schema wants another:
boolean, number, list and null, each on the line of the value."""

from __future__ import annotations

import pytest

from bot.configcheck.kubernetes import check_resource
from tests.domain.test_config_check import DEPLOYMENT, one


@pytest.mark.parametrize(("edit", "line", "message"), [
    (("  selector:\n", "  replicas: true\n  selector:\n"), 6,
     "Deployment web: spec.replicas: expected integer, got boolean (Kubernetes 1.31)"),
    (("  selector:\n", "  replicas: 1.5\n  selector:\n"), 6,
     "Deployment web: spec.replicas: expected integer, got number (Kubernetes 1.31)"),
    (("  selector:\n", "  minReadySeconds: [5]\n  selector:\n"), 6,
     "Deployment web: spec.minReadySeconds: expected integer, got list (Kubernetes 1.31)"),
    (("  name: web\n", "  name: web\n  labels: 7\n"), 5,
     "Deployment web: metadata.labels: expected object, got integer (Kubernetes 1.31)"),
])
def test_the_type_found_is_named(edit: tuple[str, str], line: int, message: str) -> None:
    document = DEPLOYMENT.replace(*edit)
    assert document != DEPLOYMENT
    assert check_resource(one(document), "1.31").findings == ((line, message),)
